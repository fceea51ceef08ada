package tenant

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

func openLedger(t *testing.T) ledger.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSpendCountsEachCostOnceAcrossWriteAndRefresh follows one replica's
// costs from Add through the writer to the store and back: at no point is
// a cost missing or counted twice, and another replica's spend arrives
// with the refresh.
func TestSpendCountsEachCostOnceAcrossWriteAndRefresh(t *testing.T) {
	ctx := context.Background()
	c := fakeclock.New()
	store := openLedger(t)
	s := NewSpend(c, store)
	month, _ := ledger.PeriodStart("month", c.Now())
	spent := func() float64 { return s.Spent("key:k", month) }

	u := ledger.Usage{At: c.Now(), RequestID: "r1", KeyID: "k", Team: "t", Cost: 0.25}
	s.Add(u.KeyID, u.Team, u.Cost, u.At)
	if got := spent(); got != 0.25 {
		t.Fatalf("pending: %v, want 0.25", got)
	}
	if err := store.RecordUsage(ctx, []ledger.Usage{u}); err != nil {
		t.Fatal(err)
	}
	s.Written([]ledger.Usage{u})
	if got := spent(); got != 0.25 {
		t.Fatalf("written, before a refresh: %v, want 0.25", got)
	}
	c.Advance(time.Second)
	// Another replica spent 1.00 for the same key and team.
	other := ledger.Usage{At: c.Now(), RequestID: "r2", KeyID: "k", Team: "t", Cost: 1}
	if err := store.RecordUsage(ctx, []ledger.Usage{other}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := spent(); got != 1.25 {
		t.Fatalf("after a refresh: %v, want 1.25", got)
	}
	if got := s.Spent("team:t", month); got != 1.25 {
		t.Fatalf("team after a refresh: %v, want 1.25", got)
	}
	// A cost from before the period does not count.
	next := month.AddDate(0, 1, 0)
	if got := s.Spent("key:k", next); got != 0 {
		t.Fatalf("next month: %v, want 0", got)
	}
}

func TestSpendStaleWhenTheStoreFails(t *testing.T) {
	c := fakeclock.New()
	store := openLedger(t)
	s := NewSpend(c, store)
	s.Add("k", "", 0.5, c.Now())
	store.Close()
	if err := s.Refresh(context.Background()); err == nil {
		t.Fatal("refresh of a closed store succeeded")
	}
	if !s.Stale() {
		t.Error("not stale after a failed refresh")
	}
	month, _ := ledger.PeriodStart("month", c.Now())
	if got := s.Spent("key:k", month); got != 0.5 {
		t.Fatalf("the store's failure lost this replica's spend: %v", got)
	}
}

// TestSpendWrittenBeforeAdded is a regression test: a record the writer
// stored before the request's own Add was counted twice from then on.
func TestSpendWrittenBeforeAdded(t *testing.T) {
	c := fakeclock.New()
	s := NewSpend(c, openLedger(t))
	month, _ := ledger.PeriodStart("month", c.Now())
	u := ledger.Usage{At: c.Now(), RequestID: "r1", KeyID: "k", Cost: 0.5}
	s.Written([]ledger.Usage{u})
	s.Add("k", "", 0.5, u.At)
	if got := s.Spent("key:k", month); got != 0.5 {
		t.Fatalf("spent %v, want 0.5", got)
	}
}

// TestSpendPruneFoldsPastDays: without a store, the hours of past days
// are folded into one bucket a day, and what a budget counts is the same.
func TestSpendPruneFoldsPastDays(t *testing.T) {
	c := fakeclock.New() // 2026-11-30 12:00 UTC
	s := NewSpend(c, nil)
	s.SetPeriods(func() []string { return []string{"30d", "1h"} })
	for h := range 72 {
		s.Add("k", "", 1, c.Now().Add(-time.Duration(h)*time.Hour))
	}
	start, _ := ledger.PeriodStart("30d", c.Now())
	hour, _ := ledger.PeriodStart("1h", c.Now())
	s.Refresh(context.Background()) // prunes
	if got := s.Spent("key:k", start); got != 72 {
		t.Errorf("spent in the 30 days: %v, want 72", got)
	}
	if got := s.Spent("key:k", hour); got != 1 {
		t.Errorf("spent this hour: %v, want 1", got)
	}
	s.mu.Lock()
	n := len(s.pending["key:k"])
	s.mu.Unlock()
	if n != 3+13 { // 27, 28 and 29 November, and today's 13 hours
		t.Errorf("%d buckets, want 16", n)
	}
}
