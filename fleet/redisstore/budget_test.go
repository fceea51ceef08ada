package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
)

var day0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// lines are a key's and its team's budgets of the day, a request's
// amount against each, and the caller's own figure of their spend.
func lines(keyBudget, teamBudget, amount, seed int64) []fleet.BudgetLine {
	end := day0.Add(24 * time.Hour)
	return []fleet.BudgetLine{
		{Subject: "key:k", Start: day0, End: end, Budget: keyBudget, Amount: amount, Seed: seed},
		{Subject: "team:t", Start: day0, End: end, Budget: teamBudget, Amount: amount, Seed: seed},
	}
}

// testBudgetScripts checks the hold and settle scripts on b: both lines
// or neither, the figures, settling, the seed as a floor, and expiry.
func testBudgetScripts(t *testing.T, b fleet.Budgets) {
	ctx := t.Context()
	now := day0.Add(9 * time.Hour)
	deadline := now.Add(time.Minute)
	hold := func(id string, ls []fleet.BudgetLine, at time.Time) (bool, []fleet.BudgetFigures) {
		t.Helper()
		ok, figs, err := b.HoldBudget(ctx, id, ls, at, at.Add(time.Minute))
		if err != nil {
			t.Fatalf("HoldBudget(%s): %v", id, err)
		}
		return ok, figs
	}
	// Seeded from the caller's figure: 10 spent of the key's 100.
	if ok, figs := hold("h1", lines(100, 1000, 60, 10), now); !ok || fmt.Sprint(figs) != "[{10 0} {10 0}]" {
		t.Fatalf("first hold: %v %v, want held, figures [{10 0} {10 0}]", ok, figs)
	}
	// The key has 30 left: 40 does not fit it, so the team holds
	// nothing either.
	if ok, figs := hold("h2", lines(100, 1000, 40, 0), now); ok || fmt.Sprint(figs) != "[{10 60} {10 60}]" {
		t.Fatalf("hold over the key's budget: %v %v, want refused, figures [{10 60} {10 60}]", ok, figs)
	}
	if ok, figs := hold("h3", lines(1000, 1000, 0, 0), now); !ok || fmt.Sprint(figs) != "[{10 60} {10 60}]" {
		t.Fatalf("after a refused hold: %v %v, want the team's held unchanged [{10 60} {10 60}]", ok, figs)
	}
	// h1 cost 25: spent 35, nothing held.
	if err := b.SettleBudget(ctx, "h1", lines(100, 1000, 60, 0), 25, now); err != nil {
		t.Fatal(err)
	}
	if err := b.SettleBudget(ctx, "h1", lines(100, 1000, 60, 0), 0, now); err != nil { // settled twice: no change
		t.Fatal(err)
	}
	if ok, figs := hold("h4", lines(100, 1000, 65, 0), now); !ok || fmt.Sprint(figs) != "[{35 0} {35 0}]" {
		t.Fatalf("after settling: %v %v, want held, figures [{35 0} {35 0}]", ok, figs)
	}
	// A hold of nothing settled as nothing: -0 is no integer to Redis.
	if err := b.SettleBudget(ctx, "h3", lines(100, 1000, 0, 0), 0, now); err != nil {
		t.Fatal(err)
	}
	// A caller whose own figure is higher raises spent to it.
	if err := b.SettleBudget(ctx, "h0", lines(100, 1000, 0, 50), 0, now); err != nil {
		t.Fatal(err)
	}
	if ok, figs := hold("h5", lines(100, 1000, 1, 0), now); ok || fmt.Sprint(figs) != "[{50 65} {50 65}]" {
		t.Fatalf("after a seed of 50: %v %v, want refused, figures [{50 65} {50 65}]", ok, figs)
	}
	// h4's replica died: at its deadline its hold is swept.
	if ok, figs := hold("h6", lines(100, 1000, 50, 0), deadline); !ok || fmt.Sprint(figs) != "[{50 0} {50 0}]" {
		t.Fatalf("at the dead hold's deadline: %v %v, want held, figures [{50 0} {50 0}]", ok, figs)
	}
}

func TestBudgetScripts(t *testing.T) {
	url := redistest.Start(t)
	testBudgetScripts(t, newStore(t, redisstore.Options{URL: url}))
}

// TestBudgetScriptsOnACluster: the key's and the team's accounts share
// a slot, so one script holds both on a cluster.
func TestBudgetScriptsOnACluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	testBudgetScripts(t, newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, IOTimeout: time.Second}))
}

// TestBudgetSurvivesARestart: a server restarted empty starts each
// account from the caller's figure again, not from zero; the holds it
// lost are gone.
func TestBudgetSurvivesARestart(t *testing.T) {
	srv := redistest.StartServer(t)
	s := newStore(t, redisstore.Options{URL: srv.URL(), DialTimeout: time.Second, IOTimeout: time.Second})
	ctx := t.Context()
	now := day0.Add(time.Hour)
	if ok, _, err := s.HoldBudget(ctx, "h1", lines(100, 100, 30, 0), now, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	if err := s.SettleBudget(ctx, "h1", lines(100, 100, 30, 30), 30, now); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	var ok bool
	var figs []fleet.BudgetFigures
	var err error
	// After a failed dial the client dials again only once a second.
	poll.Until(t, 10*time.Second, func() bool {
		ok, figs, err = s.HoldBudget(ctx, "h2", lines(100, 100, 80, 30), now, now.Add(time.Minute))
		return err == nil
	}, func() string { return fmt.Sprintf("the restarted server does not answer: %v", err) })
	if ok || fmt.Sprint(figs) != "[{30 0} {30 0}]" {
		t.Fatalf("after a restart: %v %v, want refused, spent 30 again from the seed", ok, figs)
	}
}

// TestBudgetAccountOfASkewedClockIsKept is the regression test of
// accounts dropped at once: their expiry was an absolute time a day
// after the period's end by the caller's clock, which Redis, its own
// clock later (a replica's clock behind, or a test's fake one), took as
// past and deleted the keys, so that no hold was ever seen by the next.
func TestBudgetAccountOfASkewedClockIsKept(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redisstore.Options{URL: url})
	ctx := t.Context()
	past := time.Date(2020, 3, 1, 12, 0, 0, 0, time.UTC)
	day := time.Date(2020, 3, 1, 0, 0, 0, 0, time.UTC)
	ls := []fleet.BudgetLine{{Subject: "key:k", Start: day, End: day.Add(24 * time.Hour), Budget: 100, Amount: 60}}
	if ok, _, err := s.HoldBudget(ctx, "h1", ls, past, past.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("first hold: %v %v", ok, err)
	}
	ok, figs, err := s.HoldBudget(ctx, "h2", ls, past, past.Add(time.Minute))
	if err != nil || ok || fmt.Sprint(figs) != "[{0 60}]" {
		t.Fatalf("second hold: %v %v %v, want refused with 60 held", ok, figs, err)
	}
}

// six are the six budgets a request can have: its key's, team's,
// organisation's, the key's of its pool, and its end user's of the key
// and of the team; the end user's account is kept an hour after its
// period.
func six(budget, amount [6]int64) []fleet.BudgetLine {
	end := day0.Add(24 * time.Hour)
	subjects := [6]string{"key:k", "team:t", "org:o", "key:k/pool:p", "user:key:k/0a1b", "user:team:t/0a1b"}
	ls := make([]fleet.BudgetLine, 6)
	for i, s := range subjects {
		ls[i] = fleet.BudgetLine{Subject: s, Start: day0, End: end, Budget: budget[i], Amount: amount[i]}
		if i >= 4 {
			ls[i].Keep = time.Hour
		}
	}
	return ls
}

// TestBudgetHoldOfSixSubjectsIsAllOrNone: a hold of the six budgets a
// request can have is made on all of them or, when any one has no room,
// on none; each in turn is the one without room.
func TestBudgetHoldOfSixSubjectsIsAllOrNone(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "server", true: "cluster"}[cluster], func(t *testing.T) {
			t.Parallel()
			var s *redisstore.Store
			if cluster {
				s = newStore(t, redisstore.Options{URL: redistest.StartCluster(t).URL(), Cluster: true, IOTimeout: time.Second})
			} else {
				s = newStore(t, redisstore.Options{URL: redistest.Start(t)})
			}
			ctx := t.Context()
			now := day0.Add(time.Hour)
			budget := [6]int64{100, 100, 100, 100, 100, 100}
			ok, _, err := s.HoldBudget(ctx, "first", six(budget, [6]int64{50, 50, 50, 50, 50, 50}), now, now.Add(time.Minute))
			if err != nil || !ok {
				t.Fatalf("first hold: %v %v", ok, err)
			}
			for full := range 6 {
				amount := [6]int64{10, 10, 10, 10, 10, 10}
				amount[full] = 60 // 50 held + 60 > 100
				ok, figs, err := s.HoldBudget(ctx, fmt.Sprintf("over-%d", full), six(budget, amount), now, now.Add(time.Minute))
				if err != nil || ok {
					t.Fatalf("subject %d without room: held %v, %v", full, ok, err)
				}
				if fmt.Sprint(figs) != "[{0 50} {0 50} {0 50} {0 50} {0 50} {0 50}]" {
					t.Fatalf("subject %d without room: figures %v, want 50 held on each (nothing of the refused hold)", full, figs)
				}
			}
			if err := s.SettleBudget(ctx, "first", six(budget, [6]int64{}), 30, now); err != nil {
				t.Fatal(err)
			}
			ok, figs, err := s.HoldBudget(ctx, "second", six(budget, [6]int64{70, 70, 70, 70, 70, 70}), now, now.Add(time.Minute))
			if err != nil || !ok || fmt.Sprint(figs) != "[{30 0} {30 0} {30 0} {30 0} {30 0} {30 0}]" {
				t.Fatalf("after settling at 30: %v %v %v, want held on all, 30 spent on each", ok, figs, err)
			}
		})
	}
}

// TestBudgetAccountExpiresAfterItsKeep: an account is deleted by Redis
// its Keep after its period's end (from the caller's clock), so accounts
// of end users met once do not pile up.
func TestBudgetAccountExpiresAfterItsKeep(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redisstore.Options{URL: url, Prefix: "x/"})
	rdb := redistest.Client(t, url)
	ctx := t.Context()
	end := day0.Add(24 * time.Hour)
	ls := []fleet.BudgetLine{{Subject: "user:key:k/0a1b", Start: day0, End: end, Budget: 100, Amount: 10, Keep: 200 * time.Millisecond}}
	if ok, _, err := s.HoldBudget(ctx, "h", ls, end, end.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	if err := s.SettleBudget(ctx, "h", ls, 10, end); err != nil {
		t.Fatal(err)
	}
	key := "x/{budget}:user:key:k/0a1b:" + fmt.Sprint(day0.Unix())
	if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("account %s after the settle: exists %d, %v", key, n, err)
	}
	poll.Until(t, 10*time.Second, func() bool {
		n, err := rdb.Exists(ctx, key, key+":holds").Result()
		return err == nil && n == 0
	}, func() string { return "the account outlives its Keep" })
}
