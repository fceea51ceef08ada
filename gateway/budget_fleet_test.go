package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestFleetOrgPoolAndEndUserBudgetsHoldOnBothStores: three replicas on
// one Redis and one store (SQLite's file, or PostgreSQL), 24 callers at
// once until refused for the day, on an organisation's budget, a key's
// budget of its pool, and an end user's budget of five calls' worth
// ($1 a call): the fleet admits what one replica would, at most one
// request over (the target of issue 24).
func TestFleetOrgPoolAndEndUserBudgetsHoldOnBothStores(t *testing.T) {
	const per, calls = 1.0, 5 // $1 a call (max_tokens 1 at $1 a completion token)
	big := fmt.Sprint(100 * calls * per)
	tight := fmt.Sprint(calls * per)
	cases := []struct {
		name, org, pool, endUser, refusedBy string
	}{
		{"org", tight, big, big, "org acme"},
		{"pool", big, tight, big, "on pool chat-prod"},
		{"end_user", big, big, tight, "end user"},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					top := st.yaml(t) + fmt.Sprintf("orgs:\n  - {name: acme, budget: %s/day}\nteams:\n  - {name: apps, org: acme}\n"+
						"keys:\n  - name: app\n    key: %s\n    team: apps\n    budgets: [{pool: chat-prod, budget: %s/day}]\n    end_user_limits: {budget: %s/day}\n",
						tc.org, tenantKey, tc.pool, tc.endUser)
					e := startFleetEnv(t, 3, ", price: {input: 0, output: 1000000}", "", top)
					call := `{"model":"chat-prod","user":"alice","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`
					var admitted atomic.Int64
					var last atomic.Value
					var wg sync.WaitGroup
					for _, r := range e.replicas {
						for range 8 {
							wg.Go(func() {
								for range 50 {
									st, h, body, err := postOnce(r.url, tenantKey, call)
									switch {
									case err != nil:
										t.Error(err)
										return
									case st == http.StatusOK:
										admitted.Add(1)
									case st == http.StatusTooManyRequests && h.Get("Retry-After") != "1":
										last.Store(string(body)) // spent for the day
										return
									case st != http.StatusTooManyRequests:
										t.Errorf("%s: %d %s", r.name, st, body)
										return
									}
								}
							})
						}
					}
					wg.Wait()
					t.Logf("%s on %s: 3 replicas, 24 callers: %d calls of $%v admitted on a budget of $%s", tc.name, st.name, admitted.Load(), per, tight)
					if n := admitted.Load(); n < calls || n > calls+1 {
						t.Fatalf("%d calls admitted on a budget of %d calls' cost: want %d, at most one over", n, calls, calls)
					}
					if b, _ := last.Load().(string); !strings.Contains(b, "budget_exceeded") || !strings.Contains(b, tc.refusedBy) {
						t.Fatalf("the last refusal: %s, want budget_exceeded by %s", b, tc.refusedBy)
					}
				})
			}
		})
	}
}

// postOnce is post for other goroutines than the test's: it returns the
// error instead of failing the test.
func postOnce(url, key, body string) (int, http.Header, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := testClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}
