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

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
	"github.com/switchover-gw/switchover/tenant"
)

// served is an engine built from a configuration over simulated regions,
// served by the request pipeline alone (no gateway), with its request log.
type served struct {
	url  string
	sim  *sim.Sim
	logs *syncbuf.Buffer
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
	e := build(t, fmt.Sprintf(yaml, urls...), nil, d)
	logs := &syncbuf.Buffer{}
	h := &proxy.Handler{Logger: slog.New(slog.NewJSONHandler(logs, nil)), RequestLog: proxy.NewRequestLog(logs, "json", slog.LevelInfo)}
	h.Update(e.Routes)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &served{url: srv.URL, sim: s, logs: logs}
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
	if err := s.sim.SetFault("weu", sim.Fault{Mode: "down"}); err != nil {
		t.Fatal(err)
	}
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
	if err := s.sim.SetFault("weu", sim.Fault{Mode: "blackhole"}); err != nil {
		t.Fatal(err)
	}
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
