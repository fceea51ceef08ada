package engine

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// startQuota is one simulated region whose window holds one call a 10 s
// slice, served, both on clk; it returns the chat URL and the simulator.
func startQuota(t *testing.T, clk *fakeclock.Clock) (string, *sim.Sim) {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "uksouth", Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 6}},
	}}, sim.WithClock(clk), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ep := s.Deployments()[0]
	y := fmt.Sprintf("log: {level: error}\nserver: {drain_delay: 0s}\nbackends:\n  - {name: uksouth, type: azure, url: %q, probe: {disabled: true}}\npools:\n  - name: chat-prod\n    members: [{backend: uksouth}]\n", ep.URL)
	return serveConfig(t, y, clk).url + "/v1/chat/completions", s
}

// TestPatientCallerWaitsForQuota: with one region whose window holds one
// call, a caller that sends x-switchover-max-wait is held until the
// window refills and then answered; one that does not gets 429 at once;
// a bad header value gets 400. The region and the gateway share a fake
// clock.
func TestPatientCallerWaitsForQuota(t *testing.T) {
	clk := fakeclock.New()
	url, s := startQuota(t, clk)
	post := func(maxWait string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		if maxWait != "" {
			req.Header.Set(proxy.HeaderMaxWait, maxWait)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(""); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	}
	if resp := post(""); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("impatient caller: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post("soon"); resp.StatusCode != 400 {
		t.Fatalf("bad max wait: %d", resp.StatusCode)
	}
	before := clk.Pending()
	got := make(chan *http.Response, 1)
	go func() { got <- post("30s") }()
	clk.BlockUntil(before + 2) // its deadline and the window's reset
	clk.Advance(10 * time.Second)
	resp := <-got
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderQueueWait) == "" {
		t.Fatalf("patient caller: %d, waited %q", resp.StatusCode, resp.Header.Get(route.HeaderQueueWait))
	}
	if st := s.Stats()["uksouth"]; st.Refused != 0 {
		t.Fatalf("%d calls refused upstream: the waiting is the gateway's", st.Refused)
	}
}
