package tenant

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
	"github.com/switchover-gw/switchover/ledger"
)

// fleetBudget is one of the budgets a request can have besides its
// key's and team's, $0.05 a day, set up on a replica.
type fleetBudget struct {
	name string
	// keys are the callers' keys (they take turns); user is the
	// requests' end user ("" for none).
	keys []*Principal
	user string
	// teams and orgs are the replicas' (nil: none); members the
	// subjects an organisation's spend is the sum of.
	teams   func(string) (Limits, bool)
	orgs    func(string) (string, Limits, bool)
	members func(string) []string
	// subject is the limiter's name of the budget, in refusals
	// "Subject Name".
	subject, refusedBy string
}

const fleetBudgetUSD = 0.05

// fleetBudgets are the organisation's (over two teams), the key's budget
// of its pool, and the end user's of a key and of a team (over two
// keys): $0.05 a day each, the only budget of its case.
func fleetBudgets() []fleetBudget {
	day := Limits{Budget: fleetBudgetUSD, BudgetPeriod: "day"}
	endUser := Limits{EndUser: EndUserLimits{Budget: fleetBudgetUSD, BudgetPeriod: "day"}}
	return []fleetBudget{
		{
			name: "org", keys: []*Principal{{ID: "k1", Team: "t1"}, {ID: "k2", Team: "t2"}},
			teams: func(string) (Limits, bool) { return Limits{}, true },
			orgs:  func(string) (string, Limits, bool) { return "acme", day, true },
			members: func(s string) []string {
				if s == "org:acme" {
					return []string{"team:t1", "team:t2"}
				}
				return nil
			},
			subject: "org:acme", refusedBy: "org acme",
		},
		{
			name: "pool", keys: []*Principal{{ID: "k", PoolBudgets: []PoolBudget{{Pool: "pool", Budget: fleetBudgetUSD, Period: "day"}}}},
			subject: "key:k/pool:pool", refusedBy: "key k",
		},
		{
			name: "end user of a key", keys: []*Principal{{ID: "k", Limits: endUser}}, user: "alice",
			subject: userSubject("key:k", "alice"), refusedBy: "end_user alice",
		},
		{
			name: "end user of a team", keys: []*Principal{{ID: "k1", Team: "t"}, {ID: "k2", Team: "t"}}, user: "alice",
			teams:   func(string) (Limits, bool) { return endUser, true },
			subject: userSubject("team:t", "alice"), refusedBy: "end_user alice",
		},
	}
}

// on sets b up on r.
func (b fleetBudget) on(r *replica) {
	if b.teams != nil {
		r.l.teams = b.teams
	}
	r.l.Orgs = b.orgs
	r.spend.SetMembers(b.members)
	r.spend.SetPoolBudgets(func() bool { return true })
}

// endAsk is replica.end of request a, recorded with its pool and end
// user.
func (r *replica) endAsk(t *testing.T, tk *Ticket, p *Principal, a Ask, at time.Time, cost float64) {
	tk.Done(0, false, cost)
	u := ledger.Usage{At: at, RequestID: fmt.Sprintf("r%d", requestIDs.Add(1)), KeyID: p.ID, Team: p.Team, Pool: a.Pool,
		EndUser: a.EndUser, Cost: cost}
	if err := r.store.RecordUsage(context.Background(), []ledger.Usage{u}); err != nil {
		t.Error(err)
		return
	}
	r.spend.Written([]ledger.Usage{u})
}

// TestRedisOrgPoolAndEndUserBudgetsHoldAcrossThreeReplicas is issue 24's
// burst on a fleet for every budget besides a key's and a team's: three
// replicas sharing one Redis and one store, 8 callers each sending large
// requests at once and again until refused, on a $0.05 budget of an
// organisation, of a key's pool, and of an end user (of a key, and of a
// team's keys). Each request costs a little less than its price: two are
// admitted, the third does not fit what is left, so the fleet spends no
// more than one replica would.
func TestRedisOrgPoolAndEndUserBudgetsHoldAcrossThreeReplicas(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		url := redistest.Start(t)
		for _, b := range fleetBudgets() {
			t.Run(strings.ReplaceAll(b.name, " ", "_"), func(t *testing.T) {
				c := fakeclock.New()
				var reps []*replica
				for range 3 {
					r := newReplica(t, c, store, url)
					b.on(r)
					reps = append(reps, r)
				}
				large := ask(5000, 500) // $0.0175
				large.EndUser = b.user
				price, _ := large.cost(gpt4o)
				const real = 0.0165
				var wg sync.WaitGroup
				var admitted atomic.Int64
				var spent atomic.Int64 // nano-dollars
				for i, r := range reps {
					for j := range 8 {
						p := b.keys[(i+j)%len(b.keys)]
						wg.Go(func() {
							for n := 0; n < 10; {
								tk, ref := r.l.AdmitAsk(p, large)
								if ref != nil && ref.RetryAfter > time.Second {
									if got := ref.Subject + " " + ref.Name; got != b.refusedBy {
										t.Errorf("refused by %s, want %s", got, b.refusedBy)
									}
									return // spent: it resets at the end of the day
								}
								if ref != nil {
									continue // retry when the requests in flight end
								}
								n++
								admitted.Add(1)
								spent.Add(nanos(real))
								r.endAsk(t, tk, p, large, c.Now(), real)
							}
						})
					}
				}
				wg.Wait()
				usd := float64(spent.Load()) / 1e9
				t.Logf("%s: three replicas, 24 callers: %d large requests admitted, $%.4f spent of $%.2f (price $%.4f each)",
					b.name, admitted.Load(), usd, fleetBudgetUSD, price)
				if usd > fleetBudgetUSD+price {
					t.Fatalf("the fleet spent $%.4f on a budget of $%.2f: more than one request ($%.4f) over it", usd, fleetBudgetUSD, price)
				}
				if admitted.Load() != 2 {
					t.Fatalf("%d admitted: the budget fits 2 at $%.4f, that cost $%.4f each", admitted.Load(), price, real)
				}
			})
		}
	})
}

// TestRedisOrgPoolAndEndUserBudgetsCarryOnThroughAnOutage: with Redis
// stopped, requests are answered and held against the replica's own
// figures, as a key's budget is (it fails open to the replica); once
// Redis is back, the fleet's account starts again from what the
// replicas know (the store's spend, and their own since), not from zero.
func TestRedisOrgPoolAndEndUserBudgetsCarryOnThroughAnOutage(t *testing.T) {
	eachLedger(t, func(t *testing.T, store ledger.Store) {
		for _, b := range fleetBudgets() {
			t.Run(strings.ReplaceAll(b.name, " ", "_"), func(t *testing.T) {
				srv := redistest.StartServer(t)
				c := fakeclock.New()
				var fails atomic.Int64
				newRep := func(load bool) *replica {
					r := newReplica(t, c, store, srv.URL())
					b.on(r)
					r.l.OnShared = func(err error, _ bool) {
						if err != nil {
							fails.Add(1)
						}
					}
					if load {
						r.l.EndUsers.Load = func(ctx context.Context, key, team, user string, since time.Time) (float64, error) {
							rows, err := store.Spend(ctx, ledger.SpendQuery{From: since, To: since.AddDate(1, 0, 0), Key: key, Team: team, EndUser: user})
							if err != nil || len(rows) == 0 {
								return 0, err
							}
							return rows[0].Cost, nil
						}
					}
					return r
				}
				// a counts its end users' spend from when it met them;
				// bb reads theirs from the store.
				a, bb := newRep(false), newRep(true)
				large := ask(5000, 500) // $0.0175
				large.EndUser = b.user
				p := b.keys[0]
				srv.Stop()
				for i := range 2 {
					tk, r := a.l.AdmitAsk(p, large)
					if r != nil {
						t.Fatalf("request %d with Redis stopped: %v", i+1, r)
					}
					a.endAsk(t, tk, p, large, c.Now(), 0.0165)
				}
				if fails.Load() == 0 {
					t.Fatal("no call to Redis failed while it was stopped")
				}
				// $0.033 spent on a: its own figure refuses a third.
				if _, r := a.l.AdmitAsk(p, large); r == nil || r.Code != "budget_exceeded" || r.Subject+" "+r.Name != b.refusedBy {
					t.Fatalf("a third on a with Redis stopped: %+v, want budget_exceeded by %s", r, b.refusedBy)
				}
				srv.Restart()
				rs := bb.l.Shared.(*redisstore.Store)
				poll.Until(t, 10*time.Second, func() bool {
					_, err := rs.List(t.Context(), "none/")
					return err == nil
				}, func() string { return "the restarted Redis does not answer" })
				// b reads the store, and seeds the empty Redis with it.
				if err := bb.spend.Refresh(t.Context()); err != nil {
					t.Fatal(err)
				}
				small := ask(1000, 500) // $0.0075: fits the $0.017 left
				small.EndUser = b.user
				if b.user != "" {
					tk, r := bb.l.AdmitAsk(p, small) // meets the end user
					if r != nil {
						t.Fatalf("b's first request of the end user: %v", r)
					}
					tk.Done(0, false, 0)
					if err := bb.l.EndUsers.Refresh(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				fails.Store(0)
				if _, r := bb.l.AdmitAsk(p, large); r == nil || r.Code != "budget_exceeded" || r.Used != 0.033 {
					t.Fatalf("on b after the restart: %+v, want budget_exceeded with $0.033 used", r)
				}
				tk, r := bb.l.AdmitAsk(p, small)
				if r != nil {
					t.Fatalf("a small request within what is left: %v", r)
				}
				// a finds b's hold in Redis: one small request of its own
				// fits beside it ($0.033 spent, $0.015 held), a second
				// only when one ends.
				tk2, r := a.l.AdmitAsk(p, small)
				if r != nil {
					t.Fatalf("a's small request beside b's: %v", r)
				}
				if _, r := a.l.AdmitAsk(p, small); r == nil || r.RetryAfter != time.Second {
					t.Fatalf("a's second small request beside b's and its own: %+v, want a retry when they end", r)
				}
				a.endAsk(t, tk2, p, small, c.Now(), 0.007)
				bb.endAsk(t, tk, p, small, c.Now(), 0.007)
				if fails.Load() != 0 {
					t.Fatalf("%d calls to Redis failed after it answered again", fails.Load())
				}
			})
		}
	})
}

// TestRedisEndUserBudgetKeysExpire: an end user's account in Redis is
// named by a hash of its id, never the id, and Redis deletes it an hour
// (EndUserKeep) after its period ends; it prints what an end user's
// account takes in Redis (the figure docs/operations.md gives).
func TestRedisEndUserBudgetKeysExpire(t *testing.T) {
	url := redistest.Start(t)
	rdb := redistest.Client(t, url)
	ctx := t.Context()
	c := fakeclock.New()
	r := newReplica(t, c, nil, url)
	p := key("k", Limits{EndUser: EndUserLimits{Budget: 1, BudgetPeriod: "day"}})
	before, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	const users = 1000
	for i := range users {
		a := ask(100, 10)
		a.EndUser = fmt.Sprintf("user-%04d@example.com", i)
		tk, ref := r.l.AdmitAsk(p, a)
		if ref != nil {
			t.Fatal(ref)
		}
		tk.Done(0, false, 0.0005)
	}
	after, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != users {
		t.Fatalf("%d keys in Redis for %d end users settled, want one each (its holds' set is empty): %v", len(keys), users, keys[:min(len(keys), 5)])
	}
	start, end, _ := BudgetPeriod(Limits{Budget: 1, BudgetPeriod: "day"}, c.Now())
	left := end.Sub(c.Now())
	for _, k := range keys {
		if strings.Contains(k, "example.com") || !strings.Contains(k, "{budget}:user:key:k/") {
			t.Fatalf("key %q: want {budget}:user:key:k/HASH, without the end user's id", k)
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= left || ttl > left+EndUserKeep {
			t.Fatalf("key %s expires in %v, want after the period's end (in %v) and within %v of it", k, ttl, left, EndUserKeep)
		}
	}
	one, err := rdb.MemoryUsage(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	used := func(info string) int64 {
		var n int64
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				fmt.Sscan(v, &n)
			}
		}
		return n
	}
	t.Logf("an end user's account in Redis: MEMORY USAGE %d bytes; used_memory grew %d bytes for %d end users (%d each); period starts %s",
		one, used(after)-used(before), users, (used(after)-used(before))/users, start.Format(time.RFC3339))
}
