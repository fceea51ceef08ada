package ledger_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// TestTrafficBackfillMatchesRecording: on SQLite and PostgreSQL, the
// sums migration 0014 computes from the request log's rows (the backfill
// of a store that had rows before it) are those RecordUsage adds as it
// writes them, bucket edges included, and those TrafficSum.Add counts.
func TestTrafficBackfillMatchesRecording(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			var s ledger.Store
			var err error
			if kind == "sqlite" {
				s, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
			} else {
				s, err = postgres.Open(ctx, pgtest.Start(t))
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
			r := rand.New(rand.NewPCG(1, 2))
			// Durations on and beside every edge, 0 (none) and past the last.
			var durations []int64
			for _, e := range ledger.TrafficBuckets() {
				durations = append(durations, e-1, e, e+1)
			}
			durations = append(durations, 0, 1, 500_000)
			want := map[string]*ledger.TrafficSum{}
			var recs []ledger.Usage
			for i := range 3000 {
				u := ledger.Usage{At: t0.Add(time.Duration(r.IntN(5*86400)) * time.Second), RequestID: fmt.Sprint("r", i),
					Pool: fmt.Sprint("pool-", r.IntN(2)), Backend: fmt.Sprint("b", r.IntN(3)), Status: []int{200, 200, 429, 500, 400, 399}[r.IntN(6)],
					Failover: r.IntN(10) == 0, DurationMs: durations[r.IntN(len(durations))]}
				switch r.IntN(20) {
				case 0:
					u.Cache = "hit"
				case 1:
					u.Unanswered, u.Backend, u.Status = true, "", 502
				}
				recs = append(recs, u)
				k := fmt.Sprint(u.At.Truncate(24*time.Hour).Unix(), u.Pool, "/", u.Backend)
				if want[k] == nil {
					want[k] = &ledger.TrafficSum{Day: u.At.Truncate(24 * time.Hour), Pool: u.Pool, Backend: u.Backend}
				}
				want[k].Add(u)
			}
			for i := 0; i < len(recs); i += 500 {
				if err := s.RecordUsage(ctx, recs[i:i+500]); err != nil {
					t.Fatal(err)
				}
			}
			tr := s.(ledger.TrafficReader)
			d0 := t0.Truncate(24 * time.Hour)
			recorded, err := tr.TrafficSums(ctx, d0, d0.Add(6*24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if len(recorded) != len(want) {
				t.Fatalf("%d sums recorded, want %d", len(recorded), len(want))
			}
			for _, g := range recorded {
				if w := want[fmt.Sprint(g.Day.Unix(), g.Pool, "/", g.Backend)]; w == nil || !reflect.DeepEqual(g, *w) {
					t.Fatalf("recorded %+v\nwant %+v", g, w)
				}
			}
			db := ledger.WriterDB(s)
			if _, err := db.ExecContext(ctx, "DELETE FROM traffic_daily"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, ledger.TrafficBackfill(kind)); err != nil {
				t.Fatalf("the backfill: %v", err)
			}
			backfilled, err := tr.TrafficSums(ctx, d0, d0.Add(6*24*time.Hour))
			if err != nil || !reflect.DeepEqual(backfilled, recorded) {
				t.Fatalf("backfilled (%v)\n%+v\nrecorded\n%+v", err, backfilled, recorded)
			}
		})
	}
}

// TestTrafficSumsBackfilledOnUpgrade: on SQLite and PostgreSQL, a store
// whose schema predates migration 0014 (rows in its request log, no
// traffic_daily) is given the sums of its rows when it is opened.
func TestTrafficSumsBackfilledOnUpgrade(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			open := func(dsn string) ledger.Store {
				var s ledger.Store
				var err error
				if kind == "sqlite" {
					s, err = sqlite.Open(ctx, dsn)
				} else {
					s, err = postgres.Open(ctx, dsn)
				}
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			dsn := filepath.Join(t.TempDir(), "ledger.db")
			if kind == "postgres" {
				dsn = pgtest.Start(t)
			}
			s := open(dsn)
			t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
			if err := s.RecordUsage(ctx, []ledger.Usage{
				{At: t0, RequestID: "a", Pool: "chat", Backend: "b1", Status: 200, DurationMs: 420},
				{At: t0.Add(time.Minute), RequestID: "b", Pool: "chat", Backend: "b1", Status: 503, Failover: true, DurationMs: 70},
			}); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"DROP TABLE traffic_daily", "ALTER TABLE api_keys DROP COLUMN request_log", "DELETE FROM schema_migrations WHERE version >= 14"} {
				if _, err := ledger.WriterDB(s).ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			s = open(dsn)
			defer s.Close()
			got, err := s.(ledger.TrafficReader).TrafficSums(ctx, t0.Truncate(24*time.Hour), t0.Add(24*time.Hour))
			var h ledger.Histogram
			h.Add(420)
			h.Add(70)
			want := []ledger.TrafficSum{{Day: t0.Truncate(24 * time.Hour), Pool: "chat", Backend: "b1", Requests: 2, Errors: 1, Failovers: 1, Latency: h}}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("the sums after the upgrade = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}
