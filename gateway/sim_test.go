package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/sim"
)

// simGatewayAt is the simulator standing in for the three regions of the
// published benchmark (60 RPM each, checked per 10 s slice, small TPM)
// behind a priority pool (uksouth first), all on one fake clock. breaker is
// the YAML of every backend's breaker; edit, if any, changes each
// simulated deployment. send makes one request and returns who answered;
// the last result is the gateway's base URL.
func simGatewayAt(t *testing.T, breaker string, edit ...func(*sim.Deployment)) (*fakeclock.Clock, *sim.Sim, *gateway.Gateway, func() (string, string), string) {
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
	c, err := config.Parse("sim.yaml", []byte(yaml.String()), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(c, gateway.Options{Clock: clk, Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + ln.Addr().String()
	url := base + "/v1/chat/completions"
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
	return clk, s, g, send, base
}
