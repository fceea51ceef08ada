package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// outputPriced prices the simulator's openai at $10 per million
// completion tokens and nothing for prompts, so that a chatBody request's
// price (its max_tokens, 5) is exactly what it costs: perCall.
func outputPriced(y string) string {
	return strings.Replace(y, "  - {name: openai, ", "  - {name: openai, price: {input: 0, output: 10}, ", 1)
}

const perCall = 5 * 10 / 1e6

// TestBurstOfLargeRequestsWalksThroughABudget is issue 24's burst
// through the listener: 3 small requests, then 16 large ones at once
// (40,000 characters each, about $0.025 at gpt-4o's price) on a $0.05
// budget, of a key and of its team. Each is priced at its prompt and
// max_tokens before it starts, so what is admitted fits and the spend
// stays within the budget plus one request (before, all 16 were
// admitted: $0.40).
func TestBurstOfLargeRequestsWalksThroughABudget(t *testing.T) {
	const budget = 0.05
	large := fmt.Sprintf(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("word ", 8000))
	for _, st := range stores {
		for _, who := range []string{"key", "team"} {
			t.Run(st.name+"/"+who, func(t *testing.T) {
				extra := st.yaml(t) + "teams:\n  - {name: apps}\n"
				k := ledger.Key{Name: "burst", Team: "apps", Budget: budget, BudgetPeriod: "day"}
				if who == "team" {
					extra = st.yaml(t) + fmt.Sprintf("teams:\n  - {name: apps, budget: %v/day}\n", budget)
					k.Budget, k.BudgetPeriod = 0, ""
				}
				e := startProviders(t, []string{"openai"}, nil, extra)
				key, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), k, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					if code, _, b := post(t, e.url, secret, chatBody); code != http.StatusOK {
						t.Fatalf("small request %d: %d %s", i+1, code, b)
					}
				}
				var mu sync.Mutex
				ok, refused := 0, 0
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						code, _, b := post(t, e.url, secret, large)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case code == http.StatusOK:
							ok++
						case code == http.StatusTooManyRequests && strings.Contains(string(b), "budget_exceeded"):
							refused++
						default:
							t.Errorf("large request: %d %s", code, b)
						}
					})
				}
				wg.Wait()
				row := spend(t, e.gw.Ledger(), key.ID, int64(3+ok))
				t.Logf("%d of 16 large admitted, %d refused; spent $%.4f of $%.2f", ok, refused, row.Cost, budget)
				one := row.Cost / float64(max(ok, 1)) // a large request's cost, near enough
				if ok == 0 || ok > 2 || row.Cost > budget+one {
					t.Fatalf("%d of 16 large requests admitted, $%.4f spent on a $%.2f budget; want 1 or 2, within the budget plus one", ok, row.Cost, budget)
				}
			})
		}
	}
}
