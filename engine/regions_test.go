package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/sim"
)

// instant waits out no simulated latency, so the test runs on the fake
// clock alone.
type instant struct{}

func (instant) Wait(ctx context.Context, d time.Duration) error { return ctx.Err() }

// simRegions is the simulator standing in for the three regions of the
// published benchmark (60 RPM each, checked per 10 s slice, small TPM)
// behind a priority pool (uksouth first), all on one fake clock, served.
// breaker is the YAML of every backend's breaker; edit, if any, changes
// each simulated deployment. send makes one request and returns who
// answered.
func simRegions(t *testing.T, breaker string, edit ...func(*sim.Deployment)) (*fakeclock.Clock, *sim.Sim, *served, func() (string, string)) {
	t.Helper()
	clk := fakeclock.New()
	cfg := sim.Config{Seed: 1, Slice: 10 * time.Second}
	for _, r := range []string{"uksouth", "swedencentral", "westeurope"} {
		cfg.Deployments = append(cfg.Deployments, sim.Deployment{
			Name: r, Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 60, TPM: 6000},
		})
		for _, e := range edit {
			e(&cfg.Deployments[len(cfg.Deployments)-1])
		}
	}
	s, err := sim.Start(t.Context(), cfg, sim.WithClock(clk), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var yaml strings.Builder
	yaml.WriteString("log: {level: warn}\nserver: {drain_delay: 0s}\nbackends:\n")
	prio := map[string]int{"uksouth": 1, "swedencentral": 2, "westeurope": 2}
	members := ""
	for _, e := range s.Deployments() {
		// No recovery probes: these tests count every upstream call, and
		// compare breaker semantics on their own.
		// Quota awareness off too: these tests compare what breakers do
		// with the regions' refusals (quota_test.go has the default's).
		fmt.Fprintf(&yaml, "  - {name: %s, type: azure, url: %q, region: %s, breaker: %s, probe: {disabled: true}, quota_aware: false}\n", e.Name, e.URL, e.Region, breaker)
		members += fmt.Sprintf("      - {backend: %s, priority: %d}\n", e.Name, prio[e.Name])
	}
	yaml.WriteString("pools:\n  - name: chat-prod\n    members:\n" + members)
	sv := serveConfig(t, yaml.String(), clk)
	sv.sim = s
	url := sv.url + "/v1/chat/completions"
	send := func() (backend, failover string) {
		t.Helper()
		resp, err := testClient.Post(url, "application/json", strings.NewReader(`{"model":"chat-prod","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		return resp.Header.Get("X-Switchover-Backend"), resp.Header.Get("X-Switchover-Failover")
	}
	return clk, s, sv, send
}

// exhaustPrimary sends 13 requests: 10 within uksouth's slice quota, then 3
// answered by tier 2; refused of them reach uksouth and are refused before
// its breaker opens (3 with API Management's count, 1 when a 429's
// Retry-After benches at once).
func exhaustPrimary(t *testing.T, s *sim.Sim, send func() (string, string), refused int64) {
	t.Helper()
	for i := 0; i < 10; i++ {
		if b, f := send(); b != "uksouth" || f != "false" {
			t.Fatalf("request %d: %s failover=%s, want uksouth within its quota", i+1, b, f)
		}
	}
	for i := 0; i < 3; i++ {
		if b, f := send(); b == "uksouth" || f != "true" {
			t.Fatalf("request %d: %s failover=%s, want a tier-2 region", 11+i, b, f)
		}
	}
	if st := s.Stats()["uksouth"]; st.Refused != refused || st.Answered != 10 {
		t.Fatalf("uksouth stats %+v", st)
	}
}

func totalCalls(s *sim.Sim) int64 {
	n := int64(0)
	for _, st := range s.Stats() {
		n += st.Calls
	}
	return n
}

// With API Management's semantics (follow_retry_after: false) the 11th
// request in a slice is refused by uksouth and answered by a tier-2
// region; after 3 refusals uksouth is benched for the whole trip even
// though its quota returns sooner; one probe brings it back.
func TestFailoverAcrossSimulatedRegionsAPIMStyle(t *testing.T) {
	clk, s, _, send := simRegions(t, "{failures: 3, window: 30s, trip: 30s, follow_retry_after: false}")
	exhaustPrimary(t, s, send, 3)
	// The next slice has quota again, but the breaker keeps traffic away
	// until the trip ends, without even asking uksouth.
	clk.Advance(10 * time.Second)
	if b, _ := send(); b == "uksouth" {
		t.Fatal("benched region took traffic")
	}
	if st := s.Stats()["uksouth"]; st.Calls != 13 {
		t.Fatalf("benched region was called: %+v", st)
	}
	clk.Advance(30 * time.Second) // the trip ends; one probe closes the breaker
	if b, f := send(); b != "uksouth" || f != "false" {
		t.Fatalf("after the trip: %s failover=%s, want uksouth back", b, f)
	}
	// 15 requests answered with 18 upstream calls (10 within quota, 3
	// refused plus their 3 retries on tier 2, 1 while benched, 1 probe).
	if n := totalCalls(s); n != 18 {
		t.Fatalf("%d upstream calls for 15 requests, want 18", n)
	}
}

// With switchover's default (follow_retry_after: true) the refusing region
// is benched only until its Retry-After, when its quota returns, and then
// takes traffic again at once, with no probe.
func TestFailoverAcrossSimulatedRegionsFollowsRetryAfter(t *testing.T) {
	clk, s, g, send := simRegions(t, "{failures: 3, window: 30s, trip: 30s}")
	exhaustPrimary(t, s, send, 1)
	snap := g.engine.Backends["uksouth"].Breaker.Snapshot()
	if snap.State != breaker.Open || snap.Until.Sub(clk.Now()) != 10*time.Second {
		t.Fatalf("uksouth breaker %+v, want open until its quota returns in 10s", snap)
	}
	if b, _ := send(); b == "uksouth" {
		t.Fatal("benched region took traffic before its Retry-After")
	}
	clk.Advance(10 * time.Second) // the next slice: quota is back
	for i := 0; i < 3; i++ {
		if b, f := send(); b != "uksouth" || f != "false" {
			t.Fatalf("after its Retry-After, request %d: %s failover=%s, want uksouth", i, b, f)
		}
	}
	if st := g.engine.Backends["uksouth"].Breaker.Snapshot(); st.State != breaker.Closed {
		t.Fatalf("breaker %v", st.State)
	}
	// 17 requests with 18 upstream calls: the one refusal, whose
	// Retry-After benched uksouth at once, is the only extra call.
	if n := totalCalls(s); n != 18 {
		t.Fatalf("%d upstream calls for 17 requests, want 18", n)
	}
}
