package tenant

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/pricing"
)

// gpt4o prices every backend at gpt-4o's list price: $2.50 per million
// prompt tokens, $10 per million completion tokens.
func gpt4o(backend, model string) (pricing.Price, bool) {
	return pricing.Price{Input: 2.5, Output: 10}, true
}

// ask is a request of prompt tokens that may generate out.
func ask(prompt, out int64) Ask {
	return Ask{Pool: "pool", Model: "pool", Tokens: prompt + out, Prompt: prompt, Completion: out, Backend: "b", Models: []string{"gpt-4o"}}
}

// TestBurstOfLargeRequestsWalksThroughABudget is issue 24's burst: 3
// small requests, then 16 large ones at once on a $0.05 budget. Each
// large one is priced at its prompt and max_tokens (about $0.026), so
// only what fits is admitted and the spend stays within the budget, for
// a key and for its team.
func TestBurstOfLargeRequestsWalksThroughABudget(t *testing.T) {
	const budget = 0.05
	for _, tc := range []struct {
		name  string
		key   Limits
		team  Limits
		teams bool
	}{
		{name: "key", key: Limits{Budget: budget, BudgetPeriod: "day"}},
		{name: "team", team: Limits{Budget: budget, BudgetPeriod: "day"}, teams: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeclock.New()
			spend := NewSpend(c, nil)
			var teams func(string) (Limits, bool)
			if tc.teams {
				teams = func(string) (Limits, bool) { return tc.team, true }
			}
			l := NewLimiter(c, spend, teams)
			l.Price = gpt4o
			// Two keys of the team: the team's budget holds across them.
			keys := []*Principal{{ID: "a", Team: "t", Limits: tc.key}, {ID: "b", Team: "t", Limits: tc.key}}
			if !tc.teams {
				keys = keys[:1]
			}
			small, large := ask(100, 100), ask(10000, 100)
			smallCost, largeCost := 0.0008, 0.0255 // what each really cost
			for i := range 3 {
				tk, r := l.AdmitAsk(keys[i%len(keys)], small)
				if r != nil {
					t.Fatalf("small request %d: %v", i+1, r)
				}
				tk.Done(250, true, smallCost)
			}
			var admitted []*Ticket
			refused := 0
			for i := range 16 {
				tk, r := l.AdmitAsk(keys[i%len(keys)], large)
				if r != nil {
					if r.Code != "budget_exceeded" || r.Max != budget {
						t.Fatalf("large request %d: %+v", i+1, r)
					}
					refused++
					continue
				}
				admitted = append(admitted, tk)
			}
			for _, tk := range admitted {
				tk.Done(10050, true, largeCost)
			}
			subject := "key:a"
			if tc.teams {
				subject = "team:t"
			}
			spent := spend.Spent(subject, c.Now().Add(-time.Hour))
			t.Logf("%d of 16 large admitted, %d refused; spent $%.4f of $%.2f", len(admitted), refused, spent, budget)
			if len(admitted) != 1 || spent > budget {
				t.Fatalf("%d of 16 large requests admitted, $%.4f spent on a budget of $%.2f; want 1, within it", len(admitted), spent, budget)
			}
			// Nothing in flight: the next large one does not fit what is
			// left, and waiting for requests in flight will not help.
			_, r := l.AdmitAsk(keys[0], large)
			if r == nil || r.RetryAfter <= time.Minute || r.Used != spent {
				t.Fatalf("a large request once the rest of the budget is smaller than its price: %+v", r)
			}
			// A small one still fits.
			if _, r := l.AdmitAsk(keys[0], small); r != nil {
				t.Fatalf("a small request within what is left: %v", r)
			}
		})
	}
}

// TestEvenTrafficStaysWithinTheBudget: requests of one size, eight in
// flight at a time, each costing what it was priced at, overshoot the
// budget by less than 2%.
func TestEvenTrafficStaysWithinTheBudget(t *testing.T) {
	c := fakeclock.New()
	spend := NewSpend(c, nil)
	l := NewLimiter(c, spend, nil)
	l.Price = gpt4o
	const budget = 1.0
	p := key("k", Limits{Budget: budget, BudgetPeriod: "month"})
	a := ask(1000, 500)
	price, _ := a.cost(gpt4o)
	var inflight []*Ticket
	for range 10000 {
		for len(inflight) < 8 {
			tk, r := l.AdmitAsk(p, a)
			if r != nil {
				break
			}
			inflight = append(inflight, tk)
		}
		if len(inflight) == 0 {
			break
		}
		inflight[0].Done(1500, true, price)
		inflight = inflight[1:]
	}
	spent := spend.Spent("key:k", c.Now().Add(-time.Hour))
	t.Logf("spent $%.4f of $%.2f", spent, budget)
	if spent > budget*1.02 || spent < budget-price {
		t.Fatalf("spent $%.4f of a budget of $%.2f at $%.4f a request", spent, budget, price)
	}
}

// TestReservationIsReleasedWhenARequestFails: a request that ends with
// no answer (failed, cancelled, refused later) gives its reservation
// back, so the next request fits again.
func TestReservationIsReleasedWhenARequestFails(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, NewSpend(c, nil), nil)
	l.Price = gpt4o
	p := key("k", Limits{Budget: 0.03, BudgetPeriod: "day"})
	large := ask(10000, 100) // $0.026
	tk, r := l.AdmitAsk(p, large)
	if r != nil {
		t.Fatal(r)
	}
	if _, r := l.AdmitAsk(p, large); r == nil || r.RetryAfter != time.Second {
		t.Fatalf("a second large request while the first holds the budget: %+v", r)
	}
	tk.Done(0, false, 0)
	tk.Done(0, false, 0) // a second Done does nothing
	if _, r := l.AdmitAsk(p, large); r != nil {
		t.Fatalf("after the first failed: %v", r)
	}
}

// TestRequestWithoutMaxTokensIsPricedWithTheDefault: a request that sets
// no max_tokens reserves DefaultCompletion tokens of completion.
func TestRequestWithoutMaxTokensIsPricedWithTheDefault(t *testing.T) {
	got, ok := ask(1000, 0).cost(gpt4o)
	want := (1000*2.5 + DefaultCompletion*10) / 1e6
	if !ok || nanos(got) != nanos(want) {
		t.Fatalf("price %v %v, want %v", got, ok, want)
	}
	if _, ok := (Ask{Prompt: 1000}).cost(gpt4o); ok {
		t.Fatal("a request with no backend was priced")
	}
}

// TestBudgetFullAlertWhenARequestNoLongerFits: with requests priced at
// their most, a budget stops short of fully spent, so its 100% alert
// never went out while its callers were refused. It goes out (once) at
// the first refusal of a request that no longer fits, once 80% is spent;
// a huge request refused on an unspent budget sends none.
func TestBudgetFullAlertWhenARequestNoLongerFits(t *testing.T) {
	c := fakeclock.New()
	spend := NewSpend(c, nil)
	l := NewLimiter(c, spend, nil)
	l.Price = gpt4o
	var got []BudgetAlert
	l.OnBudget = func(a BudgetAlert) { got = append(got, a) }
	key := &Principal{ID: "a", Limits: Limits{Budget: 0.05, BudgetPeriod: "day"}}
	if _, r := l.AdmitAsk(key, ask(100, 100000)); r == nil {
		t.Fatal("a $1 request on a $0.05 budget was admitted")
	}
	if len(got) != 0 {
		t.Fatalf("alerts on an unspent budget: %+v", got)
	}
	for i := range 5 { // $0.0085 each: $0.0425, 85%
		tk, r := l.AdmitAsk(key, ask(100, 800))
		if r != nil {
			t.Fatalf("request %d: %v", i+1, r)
		}
		tk.Done(900, true, 0.0085)
	}
	if len(got) != 1 || got[0].Threshold != 0.8 {
		t.Fatalf("alerts at 85%%: %+v, want the 80%% one", got)
	}
	for range 2 {
		if _, r := l.AdmitAsk(key, ask(100, 800)); r == nil {
			t.Fatal("a request that no longer fits was admitted")
		}
	}
	if len(got) != 2 || got[1].Threshold != 1 || got[1].Spent >= 0.05 {
		t.Fatalf("alerts after refusals at 85%%: %+v, want one 100%% alert", got)
	}
}
