package tenant

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// eachLedger runs f on SQLite and on a database of its own on the test
// binary's PostgreSQL server (skipped when PostgreSQL is not installed;
// see pgtest).
func eachLedger(t *testing.T, f func(t *testing.T, store ledger.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := postgres.Open(context.Background(), pgtest.Shared(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// replica is one gateway replica's limiter and spend, on the fleet's
// store of usage and, when it has one, its Redis.
type replica struct {
	l     *Limiter
	spend *Spend
	store ledger.Store
}

var requestIDs atomic.Int64

// newReplica returns a replica on store, sharing budgets through a
// client of its own of Redis at url ("" for none), on clock c, with its
// spend read from the store.
func newReplica(t *testing.T, c *fakeclock.Clock, store ledger.Store, url string) *replica {
	t.Helper()
	r := &replica{spend: NewSpend(c, store), store: store}
	r.l = NewLimiter(c, r.spend, nil)
	r.l.Price = gpt4o
	if url != "" {
		rs, err := redisstore.New(redisstore.Options{URL: url, DialTimeout: 2 * time.Second, IOTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		r.l.Shared = rs
		r.l.OnShared = func(err error, _ bool) {
			if err != nil {
				t.Errorf("shared budget: %v", err)
			}
		}
	}
	if err := r.spend.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

// end ends request tk of key p, which cost cost, and records it in the
// store, as the gateway's usage writer does.
func (r *replica) end(t *testing.T, tk *Ticket, p *Principal, at time.Time, cost float64) {
	tk.Done(0, false, cost)
	u := ledger.Usage{At: at, RequestID: fmt.Sprintf("r%d", requestIDs.Add(1)), KeyID: p.ID, Team: p.Team, Cost: cost}
	if err := r.store.RecordUsage(context.Background(), []ledger.Usage{u}); err != nil {
		t.Error(err)
		return
	}
	r.spend.Written([]ledger.Usage{u})
}

// storeSpent is what the store says key id spent today.
func storeSpent(t *testing.T, store ledger.Store, id string, now time.Time) float64 {
	day, _ := ledger.PeriodStart("day", now)
	cost, _, err := store.SpentSince(t.Context(), ledger.Filter{Key: id}, day)
	if err != nil {
		t.Fatal(err)
	}
	return cost
}

// TestRedisBudgetBurstAcrossThreeReplicas is issue 24's burst on a fleet:
// three replicas sharing one Redis and one store, 8 callers each sending
// large requests at once and again until refused, on a $0.05 budget of a
// key and of its team. Every request costs a little less than its price,
// so the fleet spends within the budget (at most one request over it is
// the target): two are admitted, the third does not fit what is left.
func TestRedisBudgetBurstAcrossThreeReplicas(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		url := redistest.Start(t)
		c := fakeclock.New()
		const budget = 0.05
		team := Limits{Budget: budget, BudgetPeriod: "day"}
		var reps []*replica
		for range 3 {
			r := newReplica(t, c, store, url)
			r.l.teams = func(string) (Limits, bool) { return team, true }
			reps = append(reps, r)
		}
		large := ask(5000, 500) // $0.0175
		price, _ := large.cost(gpt4o)
		const real = 0.0165
		keys := []*Principal{
			{ID: "k1", Team: "t", Limits: Limits{Budget: budget, BudgetPeriod: "day"}},
			{ID: "k2", Team: "t"}, // the team's budget alone
		}
		var wg sync.WaitGroup
		var admitted atomic.Int64
		for i, r := range reps {
			for j := range 8 {
				p := keys[(i+j)%2]
				wg.Go(func() {
					for n := 0; n < 10; {
						tk, ref := r.l.AdmitAsk(p, large)
						if ref != nil && ref.RetryAfter > time.Second {
							return // spent: it resets at the end of the day
						}
						if ref != nil {
							continue // retry when the requests in flight end
						}
						n++
						admitted.Add(1)
						r.end(t, tk, p, c.Now(), real)
					}
				})
			}
		}
		wg.Wait()
		spent := storeSpent(t, store, "k1", c.Now()) + storeSpent(t, store, "k2", c.Now())
		t.Logf("three replicas, 24 callers: %d large requests admitted, the team spent $%.4f of $%.2f (price $%.4f each)", admitted.Load(), spent, budget, price)
		if spent > budget+price {
			t.Fatalf("the fleet spent $%.4f on a budget of $%.2f: more than one request ($%.4f) over it", spent, budget, price)
		}
		if admitted.Load() != 2 {
			t.Fatalf("%d admitted: the budget fits 2 at $%.4f, that cost $%.4f each", admitted.Load(), price, real)
		}
	})
}

// TestRedisBudgetHoldOfADeadReplicaExpires: a replica that dies with a
// request in flight holds its price in Redis only until the hold's
// deadline; the other replicas admit again after it (the fake clock
// drives the deadline: the scripts take the time from the replicas).
func TestRedisBudgetHoldOfADeadReplicaExpires(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		url := redistest.Start(t)
		c := fakeclock.New()
		dead, live := newReplica(t, c, store, url), newReplica(t, c, store, url)
		dead.l.SharedHoldTTL = 2 * time.Minute
		p := key("k", Limits{Budget: 0.03, BudgetPeriod: "day"})
		large := ask(5000, 500) // $0.0175: one fits
		if _, r := dead.l.AdmitAsk(p, large); r != nil {
			t.Fatal(r)
		}
		if _, r := live.l.AdmitAsk(p, large); r == nil || r.Code != "budget_exceeded" {
			t.Fatalf("while the dead replica's request holds the budget: %+v, want budget_exceeded", r)
		}
		c.Advance(2*time.Minute - time.Millisecond)
		if _, r := live.l.AdmitAsk(p, large); r == nil {
			t.Fatal("admitted before the dead replica's hold expired")
		}
		c.Advance(time.Millisecond)
		tk, r := live.l.AdmitAsk(p, large)
		if r != nil {
			t.Fatalf("once the dead replica's hold expired: %v", r)
		}
		live.end(t, tk, p, c.Now(), 0.017)
	})
}

// TestRedisBudgetSettlesToTheRealCost: what a request reserved is
// replaced by what it cost, on every replica's next admission.
func TestRedisBudgetSettlesToTheRealCost(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		url := redistest.Start(t)
		c := fakeclock.New()
		a, b := newReplica(t, c, store, url), newReplica(t, c, store, url)
		p := key("k", Limits{Budget: 0.05, BudgetPeriod: "day"})
		large := ask(5000, 500) // $0.0175
		tk, r := a.l.AdmitAsk(p, large)
		if r != nil {
			t.Fatal(r)
		}
		tk2, r := b.l.AdmitAsk(p, large)
		if r != nil {
			t.Fatal(r)
		}
		// $0.035 reserved: a third does not fit the $0.015 left.
		if _, r := b.l.AdmitAsk(p, large); r == nil {
			t.Fatal("a third request admitted with two in flight")
		}
		a.end(t, tk, p, c.Now(), 0.003) // a short answer
		// $0.003 spent and $0.0175 reserved: a third fits on b, which
		// learned a's cost from Redis alone.
		tk3, r := b.l.AdmitAsk(p, large)
		if r != nil {
			t.Fatalf("after the first settled to $0.003: %v", r)
		}
		b.end(t, tk2, p, c.Now(), 0.003)
		b.end(t, tk3, p, c.Now(), 0.003)
		if got := storeSpent(t, store, "k", c.Now()); got != 0.009 {
			t.Fatalf("store spent $%v, want $0.009", got)
		}
	})
}

// TestRedisBudgetRestartReseedsFromTheStore: after a Redis restart the
// budget starts again from the store's spend, never from zero.
func TestRedisBudgetRestartReseedsFromTheStore(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		srv := redistest.StartServer(t)
		c := fakeclock.New()
		a := newReplica(t, c, store, srv.URL())
		p := key("k", Limits{Budget: 0.05, BudgetPeriod: "day"})
		large := ask(5000, 500) // $0.0175
		for range 2 {
			tk, r := a.l.AdmitAsk(p, large)
			if r != nil {
				t.Fatal(r)
			}
			a.end(t, tk, p, c.Now(), 0.017)
		}
		srv.Restart()
		// A replica that starts now reads the store's $0.034 and seeds
		// the empty Redis with it.
		b := newReplica(t, c, store, "")
		rs, err := redisstore.New(redisstore.Options{URL: srv.URL(), DialTimeout: 2 * time.Second, IOTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		var shared error
		b.l.Shared = rs
		b.l.OnShared = func(err error, _ bool) { shared = err }
		poll.Until(t, 10*time.Second, func() bool {
			_, err := rs.List(t.Context(), "none/")
			return err == nil
		}, func() string { return "the restarted Redis does not answer" })
		_, r := b.l.AdmitAsk(p, large)
		if shared != nil {
			t.Fatalf("shared budget: %v", shared)
		}
		if r == nil || r.Code != "budget_exceeded" || r.Used != 0.034 {
			t.Fatalf("after a Redis restart: %+v, want budget_exceeded with $0.034 used (the store's)", r)
		}
		// a, whose own figure has it all, seeds the same.
		poll.Until(t, 10*time.Second, func() bool {
			_, err := a.l.Shared.(*redisstore.Store).List(t.Context(), "none/")
			return err == nil
		}, func() string { return "the restarted Redis does not answer a's client" })
		if _, r := a.l.AdmitAsk(p, large); r == nil {
			t.Fatal("a admitted a request past the budget after the restart")
		}
		small := ask(1000, 500) // $0.0075 fits the $0.016 left
		tk, r := b.l.AdmitAsk(p, small)
		if r != nil {
			t.Fatalf("a small request within what is left: %v", r)
		}
		b.end(t, tk, p, c.Now(), 0.006)
	})
}

// fleetSpend runs three replicas on store, sharing budgets through Redis
// at url ("" for none), with 8 callers each on key id's $0.05 budget, for
// a simulated minute: each caller sends a request (1,000 prompt tokens,
// max_tokens 500: priced $0.0075 at gpt-4o's price) as soon as the last
// one ended, each answer takes 1 s to 1.35 s and costs $0.0055 (300
// completion tokens); a caller refused while requests are in flight
// tries again 100 ms later, one refused for the rest of the period stops.
// Every replica reads the store back every 5 s (store.refresh). It
// returns what the store says was spent, and the price.
func fleetSpend(t *testing.T, store ledger.Store, url, id string) (spent, price float64) {
	c := fakeclock.New()
	const step, refresh = 100 * time.Millisecond, 5 * time.Second
	p := key(id, Limits{Budget: 0.05, BudgetPeriod: "day"})
	a := ask(1000, 500)
	price, _ = a.cost(gpt4o)
	const cost = 0.0055
	type caller struct {
		r       *replica
		tk      *Ticket
		ends    time.Time
		stopped bool
	}
	var callers []*caller
	for range 3 {
		r := newReplica(t, c, store, url)
		for range 8 {
			callers = append(callers, &caller{r: r})
		}
	}
	start := c.Now()
	for now := start; now.Sub(start) < time.Minute; now = c.Now() {
		for i, cl := range callers {
			if cl.tk != nil && !now.Before(cl.ends) {
				cl.r.end(t, cl.tk, p, now, cost)
				cl.tk = nil
			}
			if cl.tk != nil || cl.stopped {
				continue
			}
			tk, ref := cl.r.l.AdmitAsk(p, a)
			switch {
			case ref == nil:
				cl.tk, cl.ends = tk, now.Add(time.Second+time.Duration(i%8)*50*time.Millisecond)
			case ref.RetryAfter > time.Minute:
				cl.stopped = true
			}
		}
		c.Advance(step)
		if c.Now().Sub(start)%refresh == 0 {
			for i := 0; i < len(callers); i += 8 {
				if err := callers[i].r.spend.Refresh(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return storeSpent(t, store, id, c.Now()), price
}

// TestRedisBudgetFleetFigures prints what three replicas with 8 callers
// each spend of a $0.05 budget with Redis and without (the README's
// figures: go test ./tenant -run TestRedisBudgetFleetFigures -v), and
// holds the fleet with Redis to the budget plus at most one request.
func TestRedisBudgetFleetFigures(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		url := redistest.Start(t)
		shared, price := fleetSpend(t, store, url, "with-redis")
		alone, _ := fleetSpend(t, store, "", "without-redis")
		t.Logf("3 replicas x 8 callers, $0.05 budget, requests priced $%.4f costing $0.0055: with Redis $%.4f spent (%+.0f%%), without $%.4f (%+.0f%%)",
			price, shared, 100*(shared/0.05-1), alone, 100*(alone/0.05-1))
		if shared > 0.05+price {
			t.Fatalf("with Redis the fleet spent $%.4f of $0.05: more than one request over", shared)
		}
	})
}
