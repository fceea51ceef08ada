package ledgertest

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

type round struct {
	deleted int
	before  time.Time
	err     error
}

// testRetention: a Retention on a fake clock deletes the records older
// than its Keep, a bounded batch at a time, a round every Every; the
// tags of the records go with them and the daily sums stay.
func testRetention(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	now := day(2).AddDate(0, 2, 0).Add(12 * time.Hour) // 2027-01-02 12:00
	ago := func(days int) time.Time { return now.AddDate(0, 0, -days) }
	recs := []ledger.Usage{
		{At: ago(40), RequestID: "old1", KeyID: "A", Tags: []string{"prod"}, PromptTokens: 1, Cost: 0.1},
		{At: ago(33), RequestID: "old2", KeyID: "A", Tags: []string{"prod"}, PromptTokens: 2, Cost: 0.2},
		{At: ago(33), RequestID: "old3", KeyID: "B", PromptTokens: 4, Cost: 0.4},
		{At: ago(31), RequestID: "kept1", KeyID: "A", Tags: []string{"prod"}, PromptTokens: 8, Cost: 0.8},
		{At: now, RequestID: "kept2", KeyID: "B", PromptTokens: 16, Cost: 1.6},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New()
	clk.Advance(now.Sub(clk.Now()))
	rounds := make(chan round, 10)
	r := ledger.NewRetention(s, ledger.RetentionOptions{Keep: 24 * time.Hour, Every: time.Hour, Batch: 2, MaxBatches: 1, Clock: clk,
		OnRound: func(n int, before time.Time, err error) { rounds <- round{n, before, err} }})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	// Keep is raised to MinRetention (32 days); a round deletes one batch
	// of two, the next round (an hour later) the rest.
	cutoff := now.Add(-ledger.MinRetention)
	if got := waitRound(t, rounds); got != (round{2, cutoff, nil}) {
		t.Fatalf("first round %+v, want 2 deleted before %s", got, cutoff)
	}
	if got := remaining(t, s); !slices.Equal(got, []string{"kept2", "kept1", "old3"}) {
		t.Fatalf("after the first round: %v", got)
	}
	waitTimer(t, clk, time.Hour)
	clk.Advance(time.Hour)
	if got := waitRound(t, rounds); got.deleted != 1 || got.err != nil {
		t.Fatalf("second round %+v, want 1 deleted", got)
	}
	if got := remaining(t, s); !slices.Equal(got, []string{"kept2", "kept1"}) {
		t.Fatalf("after the second round: %v", got)
	}
	// The tags of the deleted records went with them; the daily sums
	// (whole days) still count everything.
	tagged, err := s.Spend(ctx, ledger.SpendQuery{From: ago(50).Add(time.Hour), To: now.Add(time.Hour), Tag: "prod"})
	if want := []ledger.SpendRow{{Requests: 1, PromptTokens: 8, Cost: 0.8}}; err != nil || !reflect.DeepEqual(tagged, want) {
		t.Fatalf("tag prod over the requests = %+v, %v; want %+v", tagged, err, want)
	}
	days, err := s.Spend(ctx, ledger.SpendQuery{From: ago(50).Truncate(24 * time.Hour), To: now.Truncate(24 * time.Hour).Add(24 * time.Hour)})
	if want := []ledger.SpendRow{{Requests: 5, PromptTokens: 31, Cost: 3.1}}; err != nil || !reflect.DeepEqual(days, want) {
		t.Fatalf("the daily sums after retention = %+v, %v; want %+v", days, err, want)
	}
	// A round with nothing to delete is not reported.
	waitTimer(t, clk, time.Hour)
	clk.Advance(time.Hour)
	waitTimer(t, clk, time.Hour)
	select {
	case got := <-rounds:
		t.Fatalf("a round with nothing to delete was reported: %+v", got)
	default:
	}
}

// testRetentionHold: a Retention whose Hold is longer than its Keep (a
// budget that reads 45 days of per-request records) deletes only what
// is older than the Hold; with a Hold shorter than Keep, Keep rules.
func testRetentionHold(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	now := day(2).AddDate(0, 2, 0).Add(12 * time.Hour)
	ago := func(days int) time.Time { return now.AddDate(0, 0, -days) }
	if err := s.RecordUsage(ctx, []ledger.Usage{
		{At: ago(50), RequestID: "old", KeyID: "A", Cost: 0.1},
		{At: ago(40), RequestID: "held", KeyID: "A", Cost: 0.2},
		{At: ago(1), RequestID: "new", KeyID: "A", Cost: 0.4},
	}); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New()
	clk.Advance(now.Sub(clk.Now()))
	hold := 45 * 24 * time.Hour
	r := ledger.NewRetention(s, ledger.RetentionOptions{Keep: ledger.MinRetention, Clock: clk,
		Hold: func() time.Duration { return hold }})
	n, before, err := r.Round(ctx)
	if err != nil || n != 1 || !before.Equal(now.Add(-hold)) {
		t.Fatalf("Round with a 45-day hold = %d, %s, %v; want 1 deleted before %s", n, before, err, now.Add(-hold))
	}
	if got := remaining(t, s); !slices.Equal(got, []string{"new", "held"}) {
		t.Fatalf("after a round with a 45-day hold: %v", got)
	}
	hold = time.Hour // shorter than Keep: Keep rules
	if n, before, err := r.Round(ctx); err != nil || n != 1 || !before.Equal(now.Add(-ledger.MinRetention)) {
		t.Fatalf("Round with a 1-hour hold = %d, %s, %v; want 1 deleted before %s", n, before, err, now.Add(-ledger.MinRetention))
	}
	if got := remaining(t, s); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("after a round with a 1-hour hold: %v", got)
	}
}

func waitRound(t *testing.T, rounds <-chan round) round {
	t.Helper()
	select {
	case r := <-rounds:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no retention round within 30 s")
	}
	return round{}
}

func remaining(t *testing.T, s ledger.Store) []string {
	t.Helper()
	us, err := s.Requests(context.Background(), ledger.RequestQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ids(us)
}
