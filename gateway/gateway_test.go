package gateway_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/clienttest"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

const (
	appKey    = "app-key-0123456789abcdef0123456789"
	weuSecret = "weu-backend-secret-9f8e7d"
	secSecret = "sec-backend-secret-1a2b3c"
)

type syncBuffer = syncbuf.Buffer

// harness is a gateway built from a real config file, serving on loopback
// in front of scripted upstreams.
type harness struct {
	t     testing.TB
	url   string
	admin string // the admin API's base URL, when configured
	path  string // the configuration file
	gw    *gateway.Gateway
	logs  *syncBuffer
	clock *fakeclock.Clock
	weu   *upstreamtest.Upstream
	sec   *upstreamtest.Upstream
	stop  context.CancelFunc
	done  chan error
	// closed is closed once the API listener has been closed (shutdown
	// began refusing new connections).
	closed chan struct{}
}

// closeSignal is a listener that closes a channel once it is closed.
type closeSignal struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeSignal) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// start writes a config with two backends (weu: priority 1, azure; sec:
// priority 2, openai) and extra YAML appended to the weu backend, then
// serves it.
func start(t testing.TB, weu, sec []upstreamtest.Step, weuExtra string, mods ...func(string) string) *harness {
	t.Helper()
	return startWith(t, gateway.Options{}, weu, sec, weuExtra, mods...)
}

// startAnswering is start with both regions answering every call with a
// chat completion (answer), mods applied to the configuration.
func startAnswering(t testing.TB, mods ...func(string) string) *harness {
	t.Helper()
	return start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", mods...)
}

// startWith is start with options (sinks, a tracer…); Clock and Path are
// set here, and Logger (on h.logs) unless opts has a Logger or LogOutput.
func startWith(t testing.TB, opts gateway.Options, weu, sec []upstreamtest.Step, weuExtra string, mods ...func(string) string) *harness {
	t.Helper()
	h := &harness{t: t, logs: &syncBuffer{}, clock: fakeclock.New()}
	h.weu = upstreamtest.New(t, weu...)
	h.sec = upstreamtest.New(t, sec...)
	yaml := upstreamtest.TwoRegions(h.weu, h.sec, weuExtra)
	for _, m := range mods {
		yaml = m(yaml)
	}
	path := filepath.Join(t.TempDir(), "switchover.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_APP_KEY", appKey)
	t.Setenv("TEST_WEU_KEY", weuSecret)
	t.Setenv("TEST_SEC_KEY", secSecret)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config:\n%v", err)
	}
	if opts.Logger == nil && opts.LogOutput == nil {
		opts.Logger = gateway.NewLogger(h.logs, "json", cfg.Log.Level)
	}
	opts.Clock, opts.Path = h.clock, path
	h.path = path
	h.gw, err = gateway.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, admin, err := gateway.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + ln.Addr().String()
	h.closed = make(chan struct{})
	ln = &closeSignal{Listener: ln, closed: h.closed}
	if admin != nil {
		h.admin = "http://" + admin.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.gw.Serve(ctx, ln, admin) }()
	t.Cleanup(func() {
		cancel()
		// The grace period runs on the fake clock: should a test leave a
		// request in flight, end the grace once Serve waits on it.
		wctx, stop := context.WithCancel(context.Background())
		go func() {
			for h.clock.BlockUntilTimer(wctx, 5*time.Second) == nil {
				h.clock.Advance(5 * time.Second)
			}
		}()
		<-h.done
		stop()
		h.checkNoSecrets()
	})
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

// testClient bounds every call, so that a regression that hangs fails
// instead of stalling the suite.
var testClient = clienttest.Client

const chat = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`

var (
	answer = upstreamtest.Answer
	status = upstreamtest.Status
)

// TestBreakerOpeningLoggedAndExported: a backend benched by a 429's
// Retry-After opens its breaker, which the gateway logs once at WARN and
// exports, and /metrics serves the engine's series. (The failover itself,
// its headers, request log line and counters are the engine's:
// engine.TestFailoverHeadersMetricsAndLog.)
func TestBreakerOpeningLoggedAndExported(t *testing.T) {
	h := start(t,
		[]upstreamtest.Step{status(429, "Retry-After", "12", "X-Ratelimit-Remaining-Requests", "0")},
		[]upstreamtest.Step{answer("sec")}, "")
	if resp, body := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 || resp.Header.Get("X-Switchover-Failover") != "true" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	h.post("/v1/chat/completions", chat)

	g := h.gw
	checks := []struct {
		name   string
		got    float64
		wanted float64
	}{
		{"breaker open", metric(t, g, "switchover_breaker_state", "backend", "aoai-westeurope", "state", "open"), 1},
		{"breaker closed", metric(t, g, "switchover_breaker_state", "backend", "aoai-westeurope", "state", "closed"), 0},
		{"transitions", metric(t, g, "switchover_breaker_transitions_total", "backend", "aoai-westeurope", "from", "closed", "to", "open"), 1},
	}
	for _, c := range checks {
		if c.got != c.wanted {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.wanted)
		}
	}
	// The scrape endpoint serves them.
	text := scrape(t, h.gw)
	for _, want := range []string{
		`switchover_failovers_total{from="aoai-westeurope",pool="chat-prod",reason="rate_limited",to="aoai-swedencentral"} 1`,
		`switchover_request_duration_seconds_count{pool="chat-prod"} 2`,
		`switchover_upstream_duration_seconds_bucket{backend="aoai-westeurope",le="+Inf"} 1`,
		`switchover_backend_info{backend="aoai-westeurope",region="westeurope",type="azure"} 1`,
		`switchover_breaker_state{backend="aoai-westeurope",state="open"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A request log line a request; one breaker line, at WARN.
	var reqLines, breakerLines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line not JSON: %s", line)
		}
		switch m["msg"] {
		case "request":
			reqLines = append(reqLines, m)
		case "breaker":
			breakerLines = append(breakerLines, m)
		}
	}
	if len(reqLines) != 2 || reqLines[0]["key"] != "app-team" {
		t.Errorf("request log lines %v", reqLines)
	}
	if len(breakerLines) != 1 || breakerLines[0]["to"] != "open" || breakerLines[0]["level"] != "WARN" || breakerLines[0]["backend"] != "aoai-westeurope" {
		t.Errorf("breaker log lines %v", breakerLines)
	}
}

func TestAuth(t *testing.T) {
	h := startAnswering(t)
	tests := []struct {
		name string
		hdr  []string
		want int
	}{
		{"bearer", nil, 200},
		{"api-key header", []string{"Authorization", "", "Api-Key", appKey}, 200},
		{"missing", []string{"Authorization", ""}, 401},
		{"wrong", []string{"Authorization", "Bearer wrong-key-0123456789"}, 401},
		{"prefix of the key", []string{"Authorization", "Bearer " + appKey[:10]}, 401},
		{"wrong api-key", []string{"Authorization", "", "Api-Key", "nope"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := h.post("/v1/chat/completions", chat, tc.hdr...)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want == 401 {
				var e struct {
					Error struct{ Code, Message string }
				}
				if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "invalid_api_key" {
					t.Fatalf("401 body %s", body)
				}
				if strings.Contains(body, "wrong-key") || strings.Contains(body, appKey[:10]) {
					t.Fatal("the presented key was echoed")
				}
			}
		})
	}
	if n := h.weu.Calls(); n != 2 {
		t.Fatalf("upstream got %d calls, want 2 (only the authenticated ones)", n)
	}
}

// TestReadyzStaysUpWhenAPoolHasNoUsableMember is the regression test for
// /readyz failing when a pool was benched: the same on every replica, so it
// took them all out of the Service at once. Pool health has its own
// endpoint. sec is not probed: weu's failure would wait on the test's
// clock for sec's probe (a request held while its pool is short).
func TestReadyzStaysUpWhenAPoolHasNoUsableMember(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{status(503)}, "",
		func(y string) string {
			return strings.Replace(y, "    region: swedencentral", "    region: swedencentral\n    breaker: {failures: 1}\n    probe: {disabled: true}", 1)
		})
	if resp, body := h.get("/healthz/pools"); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("pools health before: %d %q", resp.StatusCode, body)
	}
	h.post("/v1/chat/completions", chat) // weu: 1 of 2 failures; sec opens
	h.post("/v1/chat/completions", chat) // weu opens
	if resp, body := h.get("/readyz"); resp.StatusCode != 200 || body != "ready\n" {
		t.Fatalf("readyz with a benched pool %d %q", resp.StatusCode, body)
	}
	resp, body := h.get("/healthz/pools")
	if resp.StatusCode != 503 || !strings.Contains(body, "no usable backend in pool chat-prod") {
		t.Fatalf("pools health %d %q", resp.StatusCode, body)
	}
	h.clock.Advance(time.Minute)
	if resp, _ := h.get("/healthz/pools"); resp.StatusCode != 200 {
		t.Fatalf("pools health after trip %d", resp.StatusCode)
	}
}

// metric returns the value of the series of family name whose labels
// include all of want (given as name, value pairs).
func metric(t *testing.T, g *gateway.Gateway, name string, want ...string) float64 {
	t.Helper()
	mfs, err := g.Metrics.Registry.Gather()
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
