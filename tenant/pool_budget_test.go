package tenant

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

// TestPoolBudgetReservesAndRefusesOnlyItsPool: a key's budget of one pool
// prices and reserves each request to that pool as its own budget does:
// a burst of large requests admits only what fits; once spent, requests
// to the pool are refused (saying which pool) while other pools still
// admit; the next period admits again.
func TestPoolBudgetReservesAndRefusesOnlyItsPool(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, NewSpend(c, nil), nil)
	l.Price = gpt4o
	p := &Principal{ID: "k", PoolBudgets: []PoolBudget{{Pool: "o3", Budget: 0.06, Period: "1h"}}}
	large := ask(10000, 100) // priced at $0.026
	large.Pool = "o3"
	var tickets []*Ticket
	for range 16 {
		if tk, r := l.AdmitAsk(p, large); r == nil {
			tickets = append(tickets, tk)
		}
	}
	if len(tickets) != 2 {
		t.Fatalf("%d of 16 large requests admitted at once on $0.06 of pool o3, want 2 (each reserves $0.026)", len(tickets))
	}
	for _, tk := range tickets {
		tk.Done(10100, true, 0.0255)
	}
	_, r := l.AdmitAsk(p, large)
	if r == nil || r.Code != "budget_exceeded" || r.Subject != "key" || r.Name != "k" || !strings.Contains(r.Message, "key k on pool o3") {
		t.Fatalf("after $0.051 of $0.06 on pool o3: %+v, want budget_exceeded naming the pool", r)
	}
	if end := c.Now().Truncate(time.Hour).Add(time.Hour); !r.Reset.Equal(end) {
		t.Errorf("Reset %v, want the next hour %v", r.Reset, end)
	}
	other := ask(10000, 100) // pool "pool": no budget of its own
	if _, r := l.AdmitAsk(p, other); r != nil {
		t.Fatalf("another pool refused: %v", r)
	}
	c.Advance(time.Hour)
	if _, r := l.AdmitAsk(p, large); r != nil {
		t.Fatalf("pool o3 in the next hour: %v", r)
	}
}

// TestSpendRefreshReadsPoolSpend: with budgets of one pool, Refresh reads
// each key's spend on each pool back from the store, on both stores.
func TestSpendRefreshReadsPoolSpend(t *testing.T) {
	stores(t, func(t *testing.T, store ledger.Store) {
		ctx := context.Background()
		c := fakeclock.New()
		c.Advance(30 * time.Minute)
		batch := []ledger.Usage{
			{At: c.Now().Add(-time.Hour), RequestID: "r1", KeyID: "k", Pool: "o3", Cost: 2},
			{At: c.Now().Add(-time.Hour), RequestID: "r2", KeyID: "k", Pool: "gpt4o", Cost: 1},
			{At: c.Now().Add(-time.Minute), RequestID: "r3", KeyID: "k", Pool: "o3", Cost: 0.5},
		}
		if err := store.RecordUsage(ctx, batch); err != nil {
			t.Fatal(err)
		}
		s := NewSpend(c, store)
		s.SetPeriods(func() []string { return []string{"day", "1h"} })
		pools := false
		s.SetPoolBudgets(func() bool { return pools })
		day, _ := ledger.PeriodStart("day", c.Now())
		hour, _ := ledger.PeriodStart("1h", c.Now())
		o3 := poolSubject("key:k", "o3")
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.Spent(o3, day); got != 0 {
			t.Errorf("without budgets of a pool, spend on o3 read: %v", got)
		}
		pools = true
		if err := s.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := s.Spent(o3, day); got != 2.5 {
			t.Errorf("spend on o3 today: %v, want 2.5", got)
		}
		if got := s.Spent(o3, hour); got != 0.5 {
			t.Errorf("spend on o3 this hour: %v, want 0.5", got)
		}
		if got := s.Spent("key:k", day); got != 3.5 {
			t.Errorf("the key's spend today: %v, want 3.5", got)
		}
		// A request of this replica counts on its pool from its end.
		s.AddOn("k", "", "o3", 0.25, c.Now())
		if got := s.Spent(o3, hour); got != 0.75 {
			t.Errorf("spend on o3 this hour with this replica's: %v, want 0.75", got)
		}
	})
}
