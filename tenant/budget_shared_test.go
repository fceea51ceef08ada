package tenant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// memBudgets is a SharedBudget in memory, with the semantics of
// fleet/redisstore's scripts, for tests without Redis. fail, while set,
// is what every call returns.
type memBudgets struct {
	mu       sync.Mutex
	accounts map[string]*memAccount
	fail     error
	calls    int
	// beforeSettle, if set, runs at the start of each SettleBudget, as
	// another request's call that reaches the store first would.
	beforeSettle func()
}

type memAccount struct {
	spent int64
	holds map[string]memHold
}

type memHold struct {
	amount   int64
	deadline time.Time
}

var _ SharedBudget = (*memBudgets)(nil)

func newMemBudgets() *memBudgets { return &memBudgets{accounts: map[string]*memAccount{}} }

func (m *memBudgets) account(l fleet.BudgetLine) *memAccount {
	k := fmt.Sprintf("%s:%d", l.Subject, l.Start.Unix())
	a := m.accounts[k]
	if a == nil {
		a = &memAccount{holds: map[string]memHold{}}
		m.accounts[k] = a
	}
	return a
}

func (a *memAccount) held() (n int64) {
	for _, h := range a.holds {
		n += h.amount
	}
	return n
}

func (m *memBudgets) HoldBudget(ctx context.Context, id string, lines []fleet.BudgetLine, now, deadline time.Time) (bool, []fleet.BudgetFigures, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return false, nil, m.fail
	}
	ok := true
	figs := make([]fleet.BudgetFigures, len(lines))
	for i, l := range lines {
		a := m.account(l)
		for hid, h := range a.holds {
			if !h.deadline.After(now) {
				delete(a.holds, hid)
			}
		}
		a.spent = max(a.spent, l.Seed)
		figs[i] = fleet.BudgetFigures{Spent: a.spent, Held: a.held()}
		if t := a.spent + a.held(); !(t < l.Budget && t+l.Amount <= l.Budget) {
			ok = false
		}
	}
	if ok {
		for _, l := range lines {
			m.account(l).holds[id] = memHold{l.Amount, deadline}
		}
	}
	return ok, figs, nil
}

func (m *memBudgets) SettleBudget(ctx context.Context, id string, lines []fleet.BudgetLine, cost int64, now time.Time) error {
	if m.beforeSettle != nil {
		m.beforeSettle()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	for _, l := range lines {
		a := m.account(l)
		delete(a.holds, id)
		a.spent = max(a.spent+cost, l.Seed)
	}
	return nil
}

// figures returns subject's spent and held in the account of the period
// that starts at start.
func (m *memBudgets) figures(subject string, start time.Time) (spent, held int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.account(fleet.BudgetLine{Subject: subject, Start: start})
	return a.spent, a.held()
}

func (m *memBudgets) setFail(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// replicas returns n limiters sharing sb, each with its own spend in
// memory, on clock c, pricing requests at gpt-4o's list price.
func replicas(c *fakeclock.Clock, sb SharedBudget, n int, teams func(string) (Limits, bool)) []*Limiter {
	ls := make([]*Limiter, n)
	for i := range ls {
		ls[i] = NewLimiter(c, NewSpend(c, nil), teams)
		ls[i].Price = gpt4o
		ls[i].Shared = sb
	}
	return ls
}

// TestSharedBudgetHoldsForTheFleet: three replicas on one shared budget
// admit together what one replica would, for a key and for its team
// (the team's two keys on different replicas), and the shared figures
// are settled to the real costs.
func TestSharedBudgetHoldsForTheFleet(t *testing.T) {
	const budget = 0.05
	large := ask(10000, 100) // priced $0.0260
	price, _ := large.cost(gpt4o)
	const real = 0.0255
	for _, tc := range []struct {
		name    string
		key     Limits
		team    Limits
		subject string
	}{
		{name: "key", key: Limits{Budget: budget, BudgetPeriod: "day"}, subject: "key:a"},
		{name: "team", team: Limits{Budget: budget, BudgetPeriod: "day"}, subject: "team:t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeclock.New()
			sb := newMemBudgets()
			ls := replicas(c, sb, 3, func(string) (Limits, bool) { return tc.team, true })
			keys := []*Principal{{ID: "a", Team: "t", Limits: tc.key}, {ID: "a", Team: "t", Limits: tc.key}, {ID: "b", Team: "t", Limits: tc.key}}
			if tc.name == "key" {
				keys[2] = keys[0]
			}
			var admitted []*Ticket
			for i := range 12 {
				if tk, r := ls[i%3].AdmitAsk(keys[i%3], large); r == nil {
					admitted = append(admitted, tk)
				} else if r.Code != "budget_exceeded" {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
			if len(admitted) != 1 {
				t.Fatalf("%d of 12 large requests admitted by three replicas on a budget of $%.2f that fits 1 at $%.4f", len(admitted), budget, price)
			}
			start := c.Now().Truncate(24 * time.Hour)
			if _, held := sb.figures(tc.subject, start); held != nanos(price) {
				t.Fatalf("held $%v in the shared budget, want the price $%v", float64(held)/1e9, price)
			}
			admitted[0].Done(10050, true, real)
			spent, held := sb.figures(tc.subject, start)
			if spent != nanos(real) || held != 0 {
				t.Fatalf("after Done: spent %d held %d nano-dollars, want %d and 0", spent, held, nanos(real))
			}
			// The replicas that saw nothing of it locally refuse the
			// next large one: what is left ($0.0245) is less than its
			// price.
			_, r := ls[1].AdmitAsk(keys[1], large)
			if r == nil || r.Code != "budget_exceeded" || r.Used != real {
				t.Fatalf("a large request on another replica after the first settled: %+v, want budget_exceeded with $%v used", r, real)
			}
		})
	}
}

// TestSharedBudgetRefusalReleasesTheHold: a request held in the shared
// budget and then refused on the replica (its rate limit) leaves nothing
// held there.
func TestSharedBudgetRefusalReleasesTheHold(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	l := replicas(c, sb, 1, nil)[0]
	p := &Principal{ID: "k", Limits: Limits{RPM: 1, Budget: 1, BudgetPeriod: "day"}}
	tk, r := l.AdmitAsk(p, ask(100, 100))
	if r != nil {
		t.Fatal(r)
	}
	if _, r := l.AdmitAsk(p, ask(100, 100)); r == nil || r.Code != "rate_limit_exceeded" {
		t.Fatalf("second request at rpm 1: %+v, want rate_limit_exceeded", r)
	}
	start := c.Now().Truncate(24 * time.Hour)
	price, _ := ask(100, 100).cost(gpt4o)
	if _, held := sb.figures("key:k", start); held != nanos(price) {
		t.Fatalf("held %d nano-dollars, want only the admitted request's %d", held, nanos(price))
	}
	tk.Done(150, true, 0)
	if spent, held := sb.figures("key:k", start); spent != 0 || held != 0 {
		t.Fatalf("after a request that cost nothing: spent %d held %d, want 0 and 0", spent, held)
	}
}

// TestSharedBudgetHoldOfADeadReplicaExpires: a replica that dies with a
// request held locks the budget only until the hold's deadline.
func TestSharedBudgetHoldOfADeadReplicaExpires(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	ls := replicas(c, sb, 2, nil)
	ls[0].SharedHoldTTL = time.Minute
	p := key("k", Limits{Budget: 0.03, BudgetPeriod: "day"})
	large := ask(10000, 100)
	if _, r := ls[0].AdmitAsk(p, large); r != nil { // never Done: its replica died
		t.Fatal(r)
	}
	_, r := ls[1].AdmitAsk(p, large)
	if r == nil || r.Code != "budget_exceeded" || r.RetryAfter != time.Second {
		t.Fatalf("while the dead replica's hold lasts: %+v, want budget_exceeded, retry in 1s", r)
	}
	c.Advance(time.Minute)
	if _, r := ls[1].AdmitAsk(p, large); r != nil {
		t.Fatalf("once the dead replica's hold expired: %v", r)
	}
}

// TestSharedBudgetOutageFallsBackToTheReplica: while the shared budget
// fails, requests are held on their replica alone (never refused for
// it), the first failure and the recovery are reported as changes, and
// the costs spent meanwhile reach the shared figure once it is back.
func TestSharedBudgetOutageFallsBackToTheReplica(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	l := replicas(c, sb, 1, nil)[0]
	type report struct {
		failed, changed bool
	}
	var reports []report
	l.OnShared = func(err error, changed bool) { reports = append(reports, report{err != nil, changed}) }
	p := key("k", Limits{Budget: 1, BudgetPeriod: "day"})
	down := errors.New("connection refused")
	sb.setFail(down)
	for range 2 {
		tk, r := l.AdmitAsk(p, ask(100, 100))
		if r != nil {
			t.Fatalf("with the shared budget down: %v", r)
		}
		tk.Done(150, true, 0.01)
	}
	sb.setFail(nil)
	tk, r := l.AdmitAsk(p, ask(100, 100))
	if r != nil {
		t.Fatal(r)
	}
	tk.Done(150, true, 0.01)
	want := []report{{true, true}, {true, false}, {true, false}, {true, false}, {false, true}}
	if fmt.Sprint(reports) != fmt.Sprint(want) {
		t.Fatalf("reports %v, want %v", reports, want)
	}
	if spent, _ := sb.figures("key:k", c.Now().Truncate(24*time.Hour)); spent != nanos(0.03) {
		t.Fatalf("shared spent %d nano-dollars once back, want the 3 costs, %d", spent, nanos(0.03))
	}
}

// TestSharedBudgetUnbudgetedRequestsSkipIt: a key and team without a
// budget never call the shared budget.
func TestSharedBudgetUnbudgetedRequestsSkipIt(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	l := replicas(c, sb, 1, func(string) (Limits, bool) { return Limits{RPM: 100}, true })[0]
	tk, r := l.AdmitAsk(&Principal{ID: "k", Team: "t", Limits: Limits{RPM: 10}}, ask(100, 100))
	if r != nil {
		t.Fatal(r)
	}
	tk.Done(150, true, 0.01)
	if sb.calls != 0 {
		t.Fatalf("%d calls to the shared budget for a key and team without budgets, want 0", sb.calls)
	}
}

// TestSharedBudgetCostSettledWhileAHoldSeedsIsCountedOnce is the
// regression test of a cost counted twice in Redis: Done added the cost
// to the replica's own spend before settling it, so a hold of the same
// replica in between took the cost as spent's floor, and the settle then
// added it again (three replicas on $0.05 admitted one request where two
// fit).
func TestSharedBudgetCostSettledWhileAHoldSeedsIsCountedOnce(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	l := replicas(c, sb, 1, nil)[0]
	p := key("k", Limits{Budget: 1, BudgetPeriod: "day"})
	tk, r := l.AdmitAsk(p, ask(100, 100))
	if r != nil {
		t.Fatal(r)
	}
	sb.beforeSettle = func() {
		sb.beforeSettle = nil
		if _, r := l.AdmitAsk(p, ask(100, 100)); r != nil {
			t.Errorf("a request while the first settles: %v", r)
		}
	}
	tk.Done(150, true, 0.25)
	if spent, _ := sb.figures("key:k", c.Now().Truncate(24*time.Hour)); spent != nanos(0.25) {
		t.Fatalf("shared spent %v, want the one cost, 0.25", float64(spent)/1e9)
	}
}

// TestEndUserSeedCountsTheEpochBeforeALoadOnce is the regression test of
// an end user's spend counted twice in the SharedBudget: this replica's
// figure of an end user (the store's, plus its own costs since the load
// before last, which the store may have too) errs high until the next
// load, and given to the SharedBudget as spent's floor it would stay
// there all period. The seed is the store's figure or its own costs,
// whichever is more.
func TestEndUserSeedCountsTheEpochBeforeALoadOnce(t *testing.T) {
	c := fakeclock.New()
	sb := newMemBudgets()
	l := replicas(c, sb, 1, nil)[0]
	store := &fakeLoad{spent: map[endUserKey]float64{}}
	l.EndUsers.Load = store.load
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 1, BudgetPeriod: "day"}})
	a := ask(100, 10)
	a.EndUser = "alice"
	tk, r := l.AdmitAsk(p, a)
	if r != nil {
		t.Fatal(r)
	}
	tk.Done(0, false, 0.01)
	store.set("key:k", "alice", 0.01) // written before the load
	if err := l.EndUsers.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	tk, r = l.AdmitAsk(p, a)
	if r != nil {
		t.Fatal(r)
	}
	tk.Done(0, false, 0.01)
	start, _, _ := BudgetPeriod(Limits{Budget: 1, BudgetPeriod: "day"}, c.Now())
	if spent, held := sb.figures(userSubject("key:k", "alice"), start); spent != nanos(0.02) || held != 0 {
		t.Fatalf("alice's account in the shared budget: spent $%v, held $%v; want $0.02 and nothing", float64(spent)/1e9, float64(held)/1e9)
	}
}
