package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestFleetBudgetCarriesOnWithoutRedis: with Redis gone, requests of a
// key with a budget are still answered (held against the replica's own
// view of the budget), the outage is logged once, and the budget is the
// fleet's again once Redis is back.
func TestFleetBudgetCarriesOnWithoutRedis(t *testing.T) {
	// $1 a call (max_tokens 1 at $1 a completion token, prompts free).
	e := startFleetEnv(t, 2, ", price: {input: 0, output: 1000000}", "",
		"keys:\n  - {name: app, key: "+tenantKey+", budget: 3/day}\n")
	call := `{"model":"chat-prod","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
	a, b := e.replicas[0], e.replicas[1]
	e.redis.Stop()
	for i := range 2 {
		if st, _, body := post(t, a.url, tenantKey, call); st != http.StatusOK {
			t.Fatalf("request %d with Redis stopped: %d %s", i+1, st, body)
		}
	}
	const warning = "budgets: the shared state store does not answer"
	if n := strings.Count(a.logs.String(), warning); n != 1 {
		t.Fatalf("%d warnings of the outage in %s's log, want 1:\n%s", n, a.name, a.logs.String())
	}
	// Each request's hold and its settling failed, and were counted.
	eventuallyWhy(t, "4 fallbacks counted", func() bool {
		return metric(t, a.gw, "switchover_budget_shared_fallbacks_total") == 4
	}, func() string { return fmt.Sprint(metric(t, a.gw, "switchover_budget_shared_fallbacks_total")) })
	e.redis.Restart()
	// b spends the last dollar once Redis answers it; a, whose own
	// figure has its two, then finds the fleet's budget spent.
	eventuallyWhy(t, b.name+" holds the budget in Redis", func() bool {
		st, _, _ := post(t, b.url, tenantKey, call)
		return st == http.StatusOK
	}, func() string { return b.logs.String() })
	eventuallyWhy(t, a.name+" refuses the spent budget", func() bool {
		st, _, body := post(t, a.url, tenantKey, call)
		return st == http.StatusTooManyRequests && strings.Contains(string(body), "budget_exceeded")
	}, func() string { return a.logs.String() })
}
