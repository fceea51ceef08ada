package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

// hist is a histogram with count calls in the bucket of ms each.
func hist(pairs ...int64) ledger.Histogram {
	var h ledger.Histogram
	for i := 0; i < len(pairs); i += 2 {
		for range pairs[i+1] {
			h.Add(pairs[i])
		}
	}
	return h
}

// testTraffic: the traffic sums are exact per UTC day, pool and backend
// (the one that answered, "" for none): requests (cache answers and
// unanswered ones too), errors (400 and above, or no answer), failovers
// and the calls' latency histogram (not cache answers); a batch recorded
// twice counts once; a range takes the days that start in it; an empty
// range is ErrInvalid.
func testTraffic(t *testing.T, s ledger.Store) {
	ctx := t.Context()
	tr, ok := s.(ledger.TrafficReader)
	if !ok {
		t.Fatal("the store does not read traffic")
	}
	recs := []ledger.Usage{
		{At: t0, RequestID: "a", Pool: "chat", Backend: "uksouth", Status: 200, DurationMs: 120},
		{At: t0.Add(time.Minute), RequestID: "b", Pool: "chat", Backend: "sweden", Status: 200, Failover: true, DurationMs: 900,
			Attempts: []ledger.Attempt{{Backend: "uksouth", Status: 429, Reason: "rate_limited"}, {Backend: "sweden", Status: 200, Reason: "ok"}}},
		{At: t0.Add(2 * time.Minute), RequestID: "c", Pool: "chat", Status: 502, Unanswered: true, DurationMs: 3000},
		{At: t0.Add(3 * time.Minute), RequestID: "d", Pool: "mini", Backend: "uksouth", Status: 200, Cache: "hit", DurationMs: 2},
		{At: t0.Add(4 * time.Minute), RequestID: "f", Pool: "chat", Backend: "uksouth", Status: 429, DurationMs: 50},
		{At: t0.Add(59 * time.Minute), RequestID: "g", Pool: "chat", Backend: "uksouth", Status: 200, DurationMs: 200_000},
		{At: t0.Add(24 * time.Hour), RequestID: "e", Pool: "chat", Backend: "uksouth", Status: 200},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordUsage(ctx, recs[:3]); err != nil { // a retried batch
		t.Fatal(err)
	}
	d0 := t0.Truncate(24 * time.Hour)
	want := []ledger.TrafficSum{
		{Day: d0, Pool: "chat", Backend: "", Requests: 1, Errors: 1, Latency: hist(3000, 1)},
		{Day: d0, Pool: "chat", Backend: "sweden", Requests: 1, Failovers: 1, Latency: hist(900, 1)},
		{Day: d0, Pool: "chat", Backend: "uksouth", Requests: 3, Errors: 1, Latency: hist(120, 1, 50, 1, 200_000, 1)},
		{Day: d0, Pool: "mini", Backend: "uksouth", Requests: 1},
		{Day: d0.Add(24 * time.Hour), Pool: "chat", Backend: "uksouth", Requests: 1},
	}
	got, err := tr.TrafficSums(ctx, d0, d0.Add(48*time.Hour))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("TrafficSums of two days = %v\n%+v\nwant\n%+v", err, got, want)
	}
	// The days that start in the range: [d0+1m, d0+24h) has none, and
	// [d0-1m, d0+24h+1m) both.
	if got, err := tr.TrafficSums(ctx, d0.Add(time.Minute), d0.Add(24*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("TrafficSums within a day = %+v, %v; want none", got, err)
	}
	if got, err := tr.TrafficSums(ctx, d0.Add(-time.Minute), d0.Add(24*time.Hour+time.Minute)); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("TrafficSums over the days' edges = %+v, %v", got, err)
	}
	if _, err := tr.TrafficSums(ctx, t0, t0); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("TrafficSums of an empty range: %v, want ErrInvalid", err)
	}
	// uksouth's day: calls of 50, 120 and 200000 ms: p50 is 200 (120's
	// bucket), p95 past the last edge.
	h := want[2].Latency
	if h.Quantile(0.5) != 200 || !math.IsInf(h.Quantile(0.95), 1) || h.Quantile(0.2) != 50 || !math.IsNaN(ledger.Histogram{}.Quantile(0.95)) {
		t.Errorf("quantiles: p20 %v p50 %v p95 %v", h.Quantile(0.2), h.Quantile(0.5), h.Quantile(0.95))
	}
}

// testTrafficRetention: a retention round deletes the traffic sums of
// the days wholly before its cutoff, with the request log's rows, and
// keeps the day its cutoff falls in whole.
func testTrafficRetention(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	now := t0.AddDate(0, 2, 0).Add(12 * time.Hour)
	cutoff := now.Add(-ledger.MinRetention)
	day := cutoff.Truncate(24 * time.Hour) // the cutoff is at 21:00 of it
	var recs []ledger.Usage
	for i, at := range []time.Time{day.Add(-48 * time.Hour), day.Add(time.Hour), day.Add(22 * time.Hour), now} {
		recs = append(recs, ledger.Usage{At: at, RequestID: fmt.Sprint("r", i), Pool: "chat", Backend: "b", Status: 200, DurationMs: 100})
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New()
	clk.Advance(now.Sub(clk.Now()))
	r := ledger.NewRetention(s, ledger.RetentionOptions{Keep: ledger.MinRetention, Clock: clk})
	if n, _, err := r.Round(ctx); err != nil || n != 2 {
		t.Fatalf("Round = %d, %v; want the 2 records before the cutoff deleted", n, err)
	}
	got, err := s.(ledger.TrafficReader).TrafficSums(ctx, t0.Truncate(24*time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var days []string
	for _, g := range got {
		days = append(days, fmt.Sprintf("%s:%d", g.Day.Sub(day), g.Requests))
	}
	if want := fmt.Sprintf("[0s:2 %s:1]", now.Truncate(24*time.Hour).Sub(day)); fmt.Sprint(days) != want {
		t.Fatalf("traffic days after retention (from the cutoff's day: requests) = %v, want %s", days, want)
	}
}
