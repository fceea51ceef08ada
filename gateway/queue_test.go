package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// startQuotaGateway is one simulated region whose window holds one call
// a 10 s slice, behind a gateway with the keys YAML keys ("" for none),
// both on clk; it returns the chat URL and the simulator.
func startQuotaGateway(t *testing.T, clk *fakeclock.Clock, keys string) (string, *sim.Sim) {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "uksouth", Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 6}},
	}}, sim.WithClock(clk), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ep := s.Deployments()[0]
	y := fmt.Sprintf("log: {level: error}\nserver: {drain_delay: 0s}\n%sbackends:\n  - {name: uksouth, type: azure, url: %q, probe: {disabled: true}}\npools:\n  - name: chat-prod\n    members: [{backend: uksouth}]\n", keys, ep.URL)
	cfg, err := config.Parse("queue.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Clock: clk, Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String() + "/v1/chat/completions", s
}

// TestKeyPatienceMakesItsCallersPatient: a key with patience (a batch
// job's) has its requests wait for quota without sending
// x-switchover-max-wait; another key's are refused at once.
func TestKeyPatienceMakesItsCallersPatient(t *testing.T) {
	clk := fakeclock.New()
	url, _ := startQuotaGateway(t, clk, "keys:\n  - {name: app, key: app-key-0123456789abcdef}\n  - {name: batch, key: batch-key-0123456789abcdef, patience: 30s}\n")
	post := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post("app-key-0123456789abcdef"); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	}
	if resp := post("app-key-0123456789abcdef"); resp.StatusCode != 429 {
		t.Fatalf("a key without patience: %d, want 429 at once", resp.StatusCode)
	}
	before := clk.Pending()
	got := make(chan *http.Response, 1)
	go func() { got <- post("batch-key-0123456789abcdef") }()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second) // a guard against a hang
	defer wcancel()
	if err := clk.BlockUntilContext(wctx, before+2); err != nil { // its deadline and the window's reset
		resp := <-got
		t.Fatalf("the patient key's request did not wait: %d", resp.StatusCode)
	}
	clk.Advance(10 * time.Second)
	resp := <-got
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderQueueWait) == "" {
		t.Fatalf("the patient key: %d, waited %q", resp.StatusCode, resp.Header.Get(route.HeaderQueueWait))
	}
}

// instant waits out no simulated latency, so the test runs on the fake
// clock alone.
type instant struct{}

func (instant) Wait(ctx context.Context, d time.Duration) error { return ctx.Err() }
