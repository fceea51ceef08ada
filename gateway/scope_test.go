package gateway_test

// End-to-end tests for section 1 of issue 22, with the README's "Use it"
// configuration (shipped defaults) in front of simulated Azure regions
// whose deployments serve chat alone: one call to an operation a region
// does not serve must bench nothing.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// readmeConfig is the README's "Use it" configuration, with the
// simulated regions' URLs and a loopback port of the test's own.
const readmeConfig = `listen: 127.0.0.1:0
keys:
  - name: app-team
    key: ${SWITCHOVER_APP_KEY}
backends:
  - name: aoai-westeurope
    type: azure
    url: %s
    api_key: ${AOAI_WEU_KEY}
    region: westeurope
    first_byte_timeout: 60s
    stream_first_byte_timeout: 10s
    breaker: {failures: 5, window: 30s, statuses: [429, "500-599"], trip: 60s, accept_retry_after: true}
  - name: aoai-swedencentral
    type: azure
    url: %s
    api_key: ${AOAI_SEC_KEY}
    region: swedencentral
pools:
  - name: chat-prod
    members:
      - {backend: aoai-westeurope, priority: 1}
      - {backend: aoai-swedencentral, priority: 2}
    retry: {attempts: 3}
`

// readmeSetup is a gateway of readmeConfig over two simulated Azure
// regions (westeurope, swedencentral) whose chat-prod deployments serve
// chat alone, all on one fake clock.
type readmeSetup struct {
	url   string
	sim   *sim.Sim
	gw    *gateway.Gateway
	clock *fakeclock.Clock
	sink  *captureSink
	logs  *syncBuffer
}

func startReadme(t *testing.T, unsupportedStatus int) *readmeSetup {
	t.Helper()
	rs := &readmeSetup{clock: fakeclock.New(), sink: &captureSink{}, logs: &syncBuffer{}}
	keys := map[string]string{"westeurope": "weu-region-key", "swedencentral": "sec-region-key"}
	cfg := sim.Config{Seed: 1, Slice: 10 * time.Second}
	for _, r := range []string{"westeurope", "swedencentral"} {
		cfg.Deployments = append(cfg.Deployments, sim.Deployment{Name: r, Flavour: sim.Azure, Deployment: "chat-prod", Key: keys[r],
			Operations: []string{"chat"}, UnsupportedStatus: unsupportedStatus})
	}
	s, err := sim.Start(t.Context(), cfg, sim.WithClock(rs.clock), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rs.sim = s
	eps := s.Deployments()
	env := map[string]string{"SWITCHOVER_APP_KEY": appKey, "AOAI_WEU_KEY": keys["westeurope"], "AOAI_SEC_KEY": keys["swedencentral"]}
	c, err := config.Parse("switchover.yaml", fmt.Appendf(nil, readmeConfig, eps[0].URL, eps[1].URL), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	rs.gw, err = gateway.New(c, gateway.Options{Clock: rs.clock, Sinks: []notify.Sink{rs.sink}, Logger: gateway.NewLogger(rs.logs, "json", "info")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rs.gw.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		// The README leaves drain_delay at its default, which runs on
		// the fake clock: move it on while Serve waits.
		wctx, stop := context.WithCancel(context.Background())
		defer stop()
		go func() {
			for rs.clock.BlockUntilTimer(wctx, 5*time.Second) == nil {
				rs.clock.Advance(5 * time.Second)
			}
		}()
		<-done
	})
	rs.url = "http://" + ln.Addr().String()
	return rs
}

// post sends body to path with the app key; it returns the answer with
// its body read.
func (rs *readmeSetup) post(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rs.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// chats sends n chat calls and fails the test unless westeurope, the
// first member, answers each without a failover.
func (rs *readmeSetup) chats(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		resp, body := rs.post(t, "/v1/chat/completions", chat)
		if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "aoai-westeurope" || resp.Header.Get(route.HeaderFailover) != "false" {
			t.Fatalf("chat call %d of %d: %d from %q (failover %s): %s", i+1, n, resp.StatusCode,
				resp.Header.Get(route.HeaderBackend), resp.Header.Get(route.HeaderFailover), body)
		}
	}
}

// embeddings sends one embeddings call and fails the test unless it gets
// the gateway's 404 naming the operation.
func (rs *readmeSetup) embeddings(t *testing.T) {
	t.Helper()
	resp, body := rs.post(t, "/v1/embeddings", `{"model":"chat-prod","input":"hello"}`)
	var e struct {
		Error struct{ Message, Code string }
	}
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != http.StatusNotFound || e.Error.Code != "operation_not_supported" || !strings.Contains(e.Error.Message, "embeddings") {
		t.Fatalf("embeddings: %d %s, want 404 operation_not_supported naming embeddings", resp.StatusCode, body)
	}
}

// realtime opens a Realtime session and fails the test unless the
// upgrade is refused with the gateway's 404.
func (rs *readmeSetup) realtime(t *testing.T) {
	t.Helper()
	ws := "ws" + strings.TrimPrefix(rs.url, "http") + "/v1/realtime?model=chat-prod"
	c, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + appKey}}})
	if err == nil {
		c.CloseNow()
		t.Fatal("a realtime session opened on regions that do not serve Realtime")
	}
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("realtime upgrade: %v (%v), want 404", err, resp)
	}
}

// quiet fails the test if a breaker moved or a backend was reported
// misconfigured (the console's events, the notifications' source).
func (rs *readmeSetup) quiet(t *testing.T) {
	t.Helper()
	for _, ev := range rs.gw.LocalEvents() {
		if ev.Kind == "misconfigured" || ev.Kind == "breaker" {
			t.Fatalf("event %+v", ev)
		}
	}
	if l := rs.logs.String(); strings.Contains(l, "backend misconfigured") {
		t.Fatalf("misconfiguration logged:\n%s", l)
	}
}

// TestOneUnservedCallBenchesNoRegion is the bug, with the README's
// configuration: one embeddings call to a chat pool whose regions have no
// embeddings deployment held every member open as misconfigured and the
// next 30 chat calls got 503; a Realtime upgrade did the same. Now each
// gets a clear 404, 30 of 30 chat calls are answered by the first region,
// no breaker opens and nothing is notified; a key holder repeating the
// calls costs each region one call per operation per hold. A deleted
// chat deployment still benches its region.
func TestOneUnservedCallBenchesNoRegion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{{"404 DeploymentNotFound", 0}, {"400 OperationNotSupported", http.StatusBadRequest}} {
		t.Run(tc.name, func(t *testing.T) {
			rs := startReadme(t, tc.status)
			rs.embeddings(t)
			rs.chats(t, 30)
			rs.quiet(t)

			rs.realtime(t)
			rs.chats(t, 30)
			rs.quiet(t)

			// A key holder repeating both every 0.4 s.
			for i := 0; i < 50; i++ {
				rs.embeddings(t)
				rs.realtime(t)
				rs.chats(t, 1)
				rs.clock.Advance(400 * time.Millisecond)
			}
			rs.quiet(t)
			for name, st := range rs.sim.Stats() {
				if st.Rejected != 2 {
					t.Fatalf("%s refused %d calls, want one embeddings call and one upgrade in %s", name, st.Rejected, 50*400*time.Millisecond)
				}
			}
			if st := rs.sim.Stats()["swedencentral"]; st.Answered != 0 {
				t.Fatalf("swedencentral answered %d chat calls: chat failed over", st.Answered)
			}
			if l := rs.logs.String(); !strings.Contains(l, "backend does not serve an operation") {
				t.Fatalf("the marks were not logged:\n%s", l)
			}

			// The regression kept: a deleted chat deployment benches its
			// region, and is the only misconfiguration notified.
			if err := rs.sim.SetFault("westeurope", sim.Fault{Mode: sim.FaultNotFound}); err != nil {
				t.Fatal(err)
			}
			resp, body := rs.post(t, "/v1/chat/completions", chat)
			if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "aoai-swedencentral" || resp.Header.Get(route.HeaderFailover) != "true" {
				t.Fatalf("chat after westeurope's deployment was deleted: %d from %q: %s", resp.StatusCode, resp.Header.Get(route.HeaderBackend), body)
			}
			rs.sink.waitKinds(t, "a misconfigured notification", func(k []string) bool { return strings.Contains(strings.Join(k, " "), "misconfigured") })
			rs.sink.mu.Lock()
			defer rs.sink.mu.Unlock()
			var misconfigured []notify.Notification
			for _, n := range rs.sink.got {
				if n.Kind == notify.KindMisconfigured {
					misconfigured = append(misconfigured, n)
				}
			}
			if len(misconfigured) != 1 || !strings.Contains(misconfigured[0].Reason, "aoai-westeurope answered 404") {
				t.Fatalf("misconfigured notifications %+v, want westeurope's deleted deployment alone", misconfigured)
			}
		})
	}
}

// TestDeletedChatDeploymentStillBenchesItsRegion: the existing behaviour,
// with the README's configuration: a 404 on the chat deployment itself
// benches that region at once, and chat calls go to the other.
func TestDeletedChatDeploymentStillBenchesItsRegion(t *testing.T) {
	rs := startReadme(t, 0)
	if err := rs.sim.SetFault("westeurope", sim.Fault{Mode: sim.FaultNotFound}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		resp, body := rs.post(t, "/v1/chat/completions", chat)
		if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "aoai-swedencentral" {
			t.Fatalf("chat call %d: %d from %q: %s", i+1, resp.StatusCode, resp.Header.Get(route.HeaderBackend), body)
		}
	}
	if st := rs.sim.Stats()["westeurope"]; st.Calls != 1 {
		t.Fatalf("westeurope got %d calls, want 1: benched after its first 404", st.Calls)
	}
	var benched, told bool
	for _, ev := range rs.gw.LocalEvents() {
		benched = benched || ev.Kind == "breaker" && ev.Backend == "aoai-westeurope" && strings.Contains(ev.Detail, "open")
		told = told || ev.Kind == "misconfigured" && ev.Backend == "aoai-westeurope"
	}
	if !benched || !told {
		t.Fatalf("events %+v: want westeurope's breaker opened and its misconfiguration told", rs.gw.LocalEvents())
	}
}
