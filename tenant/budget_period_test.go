package tenant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
)

// spendOf spends cost on p's key (and team) through a ticket, as a
// request that cost it would.
func spendOf(t *testing.T, l *Limiter, p *Principal, cost float64) {
	t.Helper()
	tk, r := l.Admit(p, "", "", 0)
	if r != nil {
		t.Fatalf("refused before spending: %v", r)
	}
	tk.Done(0, false, cost)
}

// TestBudgetOfAnHourRefusesThenAdmitsAfterTheHour: a 5/1h budget spent
// refuses until the next clock hour, says so in Reset and Retry-After,
// and admits again from it.
func TestBudgetOfAnHourRefusesThenAdmitsAfterTheHour(t *testing.T) {
	c := fakeclock.New() // 12:00 UTC
	c.Advance(20 * time.Minute)
	l := NewLimiter(c, NewSpend(c, nil), nil)
	p := &Principal{ID: "k", Limits: Limits{Budget: 5, BudgetPeriod: "1h"}}
	spendOf(t, l, p, 5)
	_, r := l.Admit(p, "", "", 0)
	if r == nil || r.Code != "budget_exceeded" {
		t.Fatalf("after spending the hour's budget: %+v, want budget_exceeded", r)
	}
	end := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	if !r.Reset.Equal(end) || r.RetryAfter != 40*time.Minute {
		t.Errorf("Reset %v, Retry-After %v; want %v and 40m", r.Reset, r.RetryAfter, end)
	}
	c.Advance(40*time.Minute - time.Second)
	if _, r := l.Admit(p, "", "", 0); r == nil {
		t.Fatal("admitted a second before the hour ended")
	}
	c.Advance(time.Second)
	if _, r := l.Admit(p, "", "", 0); r != nil {
		t.Fatalf("refused in the next hour: %v", r)
	}
}

// TestBudgetOf30DaysRetryAfter: a 100/30d budget runs in 30-day blocks
// from Monday 1970-01-05; the one holding 2026-11-30 runs from 7 November
// to 7 December, and a refusal's Retry-After reaches its end.
func TestBudgetOf30DaysRetryAfter(t *testing.T) {
	c := fakeclock.New() // 2026-11-30 12:00 UTC
	l := NewLimiter(c, NewSpend(c, nil), nil)
	team := Limits{Budget: 100, BudgetPeriod: "30d"}
	l.teams = func(string) (Limits, bool) { return team, true }
	p := &Principal{ID: "k", Team: "t"}
	start, end, ok := BudgetPeriod(team, c.Now())
	if want := time.Date(2026, 11, 7, 0, 0, 0, 0, time.UTC); !ok || !start.Equal(want) || !end.Equal(want.AddDate(0, 0, 30)) {
		t.Fatalf("BudgetPeriod = %v, %v, %v; want %v for 30 days", start, end, ok, want)
	}
	// Spent before the block's start: does not count.
	l.spend.Add("k", "t", 90, start.Add(-time.Hour))
	spendOf(t, l, p, 60)
	l.spend.Add("k", "t", 40, c.Now()) // another replica's, say
	_, r := l.Admit(p, "", "", 0)
	if r == nil || r.Subject != "team" || r.Code != "budget_exceeded" {
		t.Fatalf("after spending 100 of 100/30d: %+v, want the team's budget_exceeded", r)
	}
	if !r.Reset.Equal(end) || r.RetryAfter != end.Sub(c.Now()) || r.RetryAfter != 156*time.Hour {
		t.Errorf("Reset %v, Retry-After %v; want %v, 156h", r.Reset, r.RetryAfter, end)
	}
}

// stores runs f on an SQLite and a PostgreSQL ledger.
func stores(t *testing.T, f func(t *testing.T, s ledger.Store)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openLedger(t)) })
	t.Run("postgres", func(t *testing.T) {
		s, err := postgres.Open(context.Background(), pgtest.Shared(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f(t, s)
	})
}

// TestSpendRefreshReadsAsFarAsThePeriods: Refresh reads the store back
// to the earliest start of the periods in use, by day where periods
// start at midnight and by hour where one starts within a day, on both
// stores.
func TestSpendRefreshReadsAsFarAsThePeriods(t *testing.T) {
	stores(t, func(t *testing.T, store ledger.Store) {
		ctx := context.Background()
		c := fakeclock.New() // 2026-11-30 12:00 UTC, a Monday
		c.Advance(30 * time.Minute)
		now := c.Now()
		costs := []struct {
			at   time.Time
			cost float64
		}{
			{time.Date(2026, 11, 6, 10, 0, 0, 0, time.UTC), 1000}, // before the 30-day block
			{time.Date(2026, 11, 8, 10, 0, 0, 0, time.UTC), 100},  // in it, before the month
			{time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), 10},  // yesterday
			{time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 1},    // today, before noon
			{time.Date(2026, 11, 30, 12, 10, 0, 0, time.UTC), 0.1},
		}
		var batch []ledger.Usage
		for i, x := range costs {
			batch = append(batch, ledger.Usage{At: x.at, RequestID: fmt.Sprint("r", i), KeyID: "k", Team: "t", Cost: x.cost})
		}
		if err := store.RecordUsage(ctx, batch); err != nil {
			t.Fatal(err)
		}
		s := NewSpend(c, store)
		periods := []string{"1h", "12h", "30d", "week"}
		s.SetPeriods(func() []string { return periods })
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"1h": 0.1, "12h": 0.1, "30d": 111.1, "week": 1.1, "day": 1.1}
		for p, w := range want {
			start, _ := ledger.PeriodStart(p, now)
			for _, sub := range []string{"key:k", "team:t"} {
				if got := s.Spent(sub, start); !near(got, w) {
					t.Errorf("%s per %s: spent %v, want %v", sub, p, got, w)
				}
			}
		}
		// No budgets of hours: the days are read from the daily sums,
		// and a period of days still counts every day of it.
		periods = []string{"30d"}
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		start, _ := ledger.PeriodStart("30d", now)
		if got := s.Spent("key:k", start); !near(got, 111.1) {
			t.Errorf("per 30d, read by day: %v, want 111.1", got)
		}
		// No budgets: nothing is read.
		periods = nil
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.Spent("key:k", start); got != 0 {
			t.Errorf("with no budget periods: %v read, want nothing", got)
		}
	})
}

func near(a, b float64) bool { return nanos(a) == nanos(b) }

// TestDirectoryPeriods: the directory lists the budget periods of its
// keys and teams once each, for Spend.SetPeriods.
func TestDirectoryPeriods(t *testing.T) {
	d := NewDirectory(fakeclock.New(), nil)
	d.SetConfig([]ConfigKey{
		{Secret: "a", Principal: Principal{ID: "a", Limits: Limits{Budget: 5, BudgetPeriod: "1h"}}},
		{Secret: "b", Principal: Principal{ID: "b", Limits: Limits{Budget: 5, BudgetPeriod: "1h"}}},
		{Secret: "c", Principal: Principal{ID: "c", Limits: Limits{RPM: 5}}},
	}, []Team{{Name: "t", Limits: Limits{Budget: 100, BudgetPeriod: "30d"}}})
	if got := fmt.Sprint(d.Periods()); got != "[1h 30d]" {
		t.Errorf("Periods = %s, want [1h 30d]", got)
	}
}
