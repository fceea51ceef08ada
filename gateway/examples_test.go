package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

// TestShippedExampleServesItsAlias runs examples/switchover.yaml against
// examples/sim.yaml (on free ports) and asks for the pool by its alias:
// every member answers (the bug: the Azure members had no model, so a
// request by the alias asked for deployment gpt-4o-mini and got 404
// DeploymentNotFound while check said the file was valid).
func TestShippedExampleServesItsAlias(t *testing.T) {
	t.Parallel() // waits on the sim's real latencies; its own sim and gateway
	scfg, err := sim.LoadConfig("../examples/sim.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range scfg.Deployments {
		scfg.Deployments[i].Listen = "127.0.0.1:0"
		scfg.Deployments[i].Quota = sim.Quota{} // no 429s: every member must answer
	}
	s, err := sim.Start(t.Context(), scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg, err := config.Load("../examples/switchover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 0 {
		t.Fatalf("the shipped example has warnings: %v", ws)
	}
	urls := map[string]string{}
	for _, e := range s.Deployments() {
		urls[e.Region] = e.URL
	}
	for i, b := range cfg.Backends {
		cfg.Backends[i].URL = urls[b.Region] // the sim's own base URL per flavour
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, g)
	for _, backend := range []string{"aoai-uksouth", "aoai-swedencentral", "oai-westeurope"} {
		// Only the backend under test takes traffic.
		for _, other := range []string{"aoai-uksouth", "aoai-swedencentral", "oai-westeurope"} {
			if other == backend {
				g.Restore(other)
			} else {
				g.Drain(other)
			}
		}
		resp, err := testClient.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchover-Backend") != backend {
			t.Errorf("by the alias through %s: %d from %q: %s", backend, resp.StatusCode, resp.Header.Get("X-Switchover-Backend"), b)
		}
	}
}

// TestShippedKeysExampleLoads: examples/switchover-keys.yaml is valid,
// warns of nothing, and runs (its store in a temporary directory).
func TestShippedKeysExampleLoads(t *testing.T) {
	t.Setenv("SWITCHOVER_ADMIN_KEY", "admin-key-0123456789")
	cfg, err := config.Load("../examples/switchover-keys.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 0 {
		t.Fatalf("warnings: %v", ws)
	}
	if !cfg.Store.Enabled() || cfg.Admin == nil || cfg.Backends[0].Price == nil {
		t.Fatalf("store %+v, admin %+v, price %+v", cfg.Store, cfg.Admin, cfg.Backends[0].Price)
	}
	cfg.Store.SQLite = t.TempDir() + "/switchover.db"
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
