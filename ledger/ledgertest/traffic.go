package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// testTraffic: the traffic rows of a range are its newest requests,
// newest first, at most the limit, with the columns the charts need; a
// bad limit or an empty range is ErrInvalid.
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
		{At: t0.Add(time.Hour), RequestID: "e", Pool: "chat", Backend: "uksouth", Status: 200},
	}
	if err := s.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	rows, err := tr.Traffic(ctx, t0, t0.Add(time.Hour), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.TrafficRow{
		{At: t0.Add(3 * time.Minute), Pool: "mini", Backend: "uksouth", Status: 200, Cache: "hit", DurationMs: 2},
		{At: t0.Add(2 * time.Minute), Pool: "chat", Status: 502, Unanswered: true, DurationMs: 3000},
		{At: t0.Add(time.Minute), Pool: "chat", Backend: "sweden", Status: 200, Failover: true, DurationMs: 900},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if !rows[i].At.Equal(want[i].At) || rows[i].Pool != want[i].Pool || rows[i].Backend != want[i].Backend || rows[i].Status != want[i].Status ||
			rows[i].Failover != want[i].Failover || rows[i].Unanswered != want[i].Unanswered || rows[i].Cache != want[i].Cache || rows[i].DurationMs != want[i].DurationMs {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	if rows, err := tr.Traffic(ctx, t0, t0.Add(2*time.Hour), 100); err != nil || len(rows) != 5 {
		t.Errorf("the whole range: %d rows, %v", len(rows), err)
	}
	for _, bad := range []struct {
		from, to time.Time
		limit    int
	}{{t0, t0.Add(time.Hour), 0}, {t0, t0.Add(time.Hour), ledger.MaxRequestsLimit + 1}, {t0, t0, 10}} {
		if _, err := tr.Traffic(ctx, bad.from, bad.to, bad.limit); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("Traffic(%v, %v, %d): %v, want ErrInvalid", bad.from, bad.to, bad.limit, err)
		}
	}
}
