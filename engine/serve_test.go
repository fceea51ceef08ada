package engine

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/clienttest"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/metrics"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
	"github.com/switchover-gw/switchover/tenant"
)

// served is an engine built from a configuration, served by the request
// pipeline alone (no gateway), with its request log and metrics.
type served struct {
	url    string
	engine *Engine
	// sim is the simulated regions the backends are, when the harness
	// started them.
	sim *sim.Sim
	// logs is the handler's log and request log, in JSON.
	logs *syncbuf.Buffer
	// metrics observes the engine and records the handler's requests and
	// refusals, and is served on /metrics.
	metrics *metrics.Metrics
}

// serveConfig builds yaml on clk (nil: the wall clock) and serves the
// engine's routes with a handler that logs, counts in metrics and, when
// the configuration allows it, sends the trace header, as a gateway's
// does (the server's timeouts, tracing, tenancy and spend are the
// gateway's, and tested there).
func serveConfig(t *testing.T, yaml string, clk *fakeclock.Clock) *served {
	t.Helper()
	var d Deps
	if clk != nil {
		d.Clock = clk
	}
	return serveDeps(t, yaml, d)
}

// serveDeps is serveConfig with the engine built on d (its Observer is
// the harness's metrics).
func serveDeps(t *testing.T, yaml string, d Deps) *served {
	t.Helper()
	m := metrics.New()
	d.Observer = m
	e := build(t, yaml, nil, d)
	logs := &syncbuf.Buffer{}
	h := &proxy.Handler{
		Logger:      slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RequestLog:  proxy.NewRequestLog(logs, "json", slog.LevelInfo),
		Recorder:    m,
		Refusals:    m,
		Metrics:     m.Handler(),
		TraceHeader: *e.Config.Server.TraceHeader,
	}
	h.Update(e.Routes)
	srv := httptest.NewServer(h)
	// Requests still in flight when the test ends are ended, as a
	// gateway's shutdown ends them, so that closing the server does not
	// wait on an upstream.
	t.Cleanup(func() { h.Halt(); srv.Close() })
	return &served{url: srv.URL, engine: e, logs: logs, metrics: m}
}

// serve starts the simulated Azure regions names, builds yaml (its %s are
// the regions' URLs, in order) and serves the engine's routes.
func serve(t *testing.T, yaml string, names ...string) *served {
	t.Helper()
	return serveWith(t, Deps{}, yaml, names...)
}

// serveWith is serve with the engine built on d.
func serveWith(t *testing.T, d Deps, yaml string, names ...string) *served {
	t.Helper()
	var deps []sim.Deployment
	for _, n := range names {
		deps = append(deps, sim.Deployment{Name: n, Flavour: sim.Azure, Deployment: "chat-prod"})
	}
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var urls []any
	for _, ep := range s.Deployments() {
		urls = append(urls, ep.URL)
	}
	sv := serveDeps(t, fmt.Sprintf(yaml, urls...), d)
	sv.sim = s
	return sv
}

const (
	appKey    = "app-key-0123456789abcdef0123456789"
	weuSecret = "weu-backend-secret-9f8e7d"
	secSecret = "sec-backend-secret-1a2b3c"
)

// testEnv is the environment the configurations of these tests read their
// keys from.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{"TEST_APP_KEY": appKey, "TEST_WEU_KEY": weuSecret, "TEST_SEC_KEY": secSecret}[name]
	return v, ok
}

// harness is an engine served in front of two scripted upstreams, on a
// fake clock.
type harness struct {
	*served
	t     testing.TB
	clock *fakeclock.Clock
	weu   *upstreamtest.Upstream
	sec   *upstreamtest.Upstream
}

// start builds a configuration with two backends (weu: priority 1, azure;
// sec: priority 2, openai), the key appKey and extra YAML appended to the
// weu backend, each of mods applied to it, and serves it. The test fails
// if a key or a backend's credential reaches the log.
func start(t *testing.T, weu, sec []upstreamtest.Step, weuExtra string, mods ...func(string) string) *harness {
	t.Helper()
	h := &harness{t: t, clock: fakeclock.New()}
	h.weu = upstreamtest.New(t, weu...)
	h.sec = upstreamtest.New(t, sec...)
	yaml := upstreamtest.TwoRegions(h.weu, h.sec, weuExtra)
	for _, m := range mods {
		yaml = m(yaml)
	}
	h.served = serveConfig(t, yaml, h.clock)
	t.Cleanup(h.checkNoSecrets)
	return h
}

// checkNoSecrets fails the test if any credential reached the log.
func (h *harness) checkNoSecrets() {
	logs := h.logs.String()
	for _, s := range []string{appKey, weuSecret, secSecret} {
		if strings.Contains(logs, s) {
			h.t.Errorf("a secret appeared in the log:\n%s", logs)
		}
	}
}

func (h *harness) post(path, body string, hdr ...string) (*http.Response, string) {
	h.t.Helper()
	return clienttest.Call(h.t, http.MethodPost, h.url+path, appKey, body, hdr...)
}

func (h *harness) get(path string) (*http.Response, string) {
	h.t.Helper()
	return clienttest.Call(h.t, http.MethodGet, h.url+path, appKey, "")
}

const chat = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`

var (
	answer = upstreamtest.Answer
	status = upstreamtest.Status
)

// fault sets the fault mode of the simulated deployment name.
func (s *served) fault(t *testing.T, name, mode string) {
	t.Helper()
	if err := s.sim.SetFault(name, sim.Fault{Mode: sim.FaultMode(mode)}); err != nil {
		t.Fatal(err)
	}
}

// chat sends one chat completion to model and returns the answer's
// headers, failing the test unless it is a 200.
func (s *served) chat(t *testing.T, model string) http.Header {
	t.Helper()
	status, h, body := s.post(t, model, "")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	return h
}

// post sends one chat completion to model, with the gateway key key
// unless it is empty, and returns the answer.
func (s *served) post(t *testing.T, model, key string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/chat/completions",
		bytes.NewReader([]byte(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(body)
}

// testClient bounds every call, so that a regression that hangs fails
// instead of stalling the suite.
var testClient = clienttest.Client

// metric returns the value of the series of family name whose labels
// include all of want (given as name, value pairs).
func metric(t *testing.T, m *metrics.Metrics, name string, want ...string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(want); i += 2 {
				if labels[want[i]] != want[i+1] {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

// TestPoolFallbackFromConfig: a pool whose only member is down falls back
// to the pool its configuration names, and the answer says so.
func TestPoolFallbackFromConfig(t *testing.T) {
	s := serve(t, `backends:
  - {name: weu, type: azure, url: %q, probe: {disabled: true}}
  - {name: sec, type: azure, url: %q, probe: {disabled: true}}
pools:
  - name: chat-prod
    retry: {attempts: 5}
    fallback: backup
    members: [{backend: weu}]
  - name: backup
    members: [{backend: sec}]
`, "weu", "sec")
	s.fault(t, "weu", "down")
	h := s.chat(t, "chat-prod")
	if h.Get(route.HeaderBackend) != "sec" || h.Get(route.HeaderFallback) != "chat-prod" {
		t.Fatalf("headers %v", h)
	}
}

// TestHedgeFromConfig: a pool with hedge set sends a hedge to the next
// member when the first has no first byte after the delay, passes on the
// hedge's answer, and says so in the headers and the request log.
func TestHedgeFromConfig(t *testing.T) {
	s := serve(t, `backends:
  - {name: weu, type: azure, url: %q, probe: {disabled: true}}
  - {name: sec, type: azure, url: %q, probe: {disabled: true}}
pools:
  - name: chat-prod
    retry: {attempts: 5}
    hedge: {after: 50ms, share: 1}
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
`, "weu", "sec")
	s.fault(t, "weu", "blackhole")
	h := s.chat(t, "chat-prod")
	if h.Get(route.HeaderBackend) != "sec" || h.Get(route.HeaderHedge) != "hedge" {
		t.Fatalf("headers %v", h)
	}
	if l := s.logs.String(); !strings.Contains(l, `"hedge":"hedge"`) || !strings.Contains(l, "weu=outpaced") {
		t.Fatalf("request log lacks the hedge:\n%s", l)
	}
}

// TestTenancyHooksFromDeps: the key directory and limiter given in Deps
// are the request pipeline's tenancy, with no gateway in the way: a call
// without a key or with a wrong one gets 401, a key's calls past its
// requests per minute 429, the others are served.
func TestTenancyHooksFromDeps(t *testing.T) {
	clk := fakeclock.New()
	dir := tenant.NewDirectory(clk, nil)
	dir.SetConfig([]tenant.ConfigKey{{Secret: "app-secret", Principal: tenant.Principal{ID: "app", Name: "app", Limits: tenant.Limits{RPM: 1}}}}, nil)
	lim := tenant.NewLimiter(clk, tenant.NewSpend(clk, nil), dir.Team)
	s := serveWith(t, Deps{Resolver: dir, Admission: lim}, `backends:
  - {name: weu, type: azure, url: %q, probe: {disabled: true}}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, "weu")
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", http.StatusUnauthorized},
		{"wrong key", "nope", http.StatusUnauthorized},
		{"the key", "app-secret", http.StatusOK},
		{"past its rpm", "app-secret", http.StatusTooManyRequests},
	} {
		if status, _, body := s.post(t, "chat-prod", tc.key); status != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.name, status, body, tc.want)
		}
	}
}
