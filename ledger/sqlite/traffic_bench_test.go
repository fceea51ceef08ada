package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// trafficDays is the range BenchmarkTraffic reads and its requests span.
const trafficDays = 90

// BenchmarkTraffic stores 1,000,000 requests over 90 days in SQLite (the
// request log's benchmark traffic: 4 pools, 8 backends, failovers,
// errors, cache hits, unanswered requests) and times what the console's
// traffic charts read: the daily sums of the 90 days ("sums"), and
// those folded per backend with each day's p95 ("days"), as
// console/spend.go does. "backfill" times migration 0014's filling of the
// sums from the 1,000,000 rows (in a transaction rolled back). Building
// the table takes minutes; with SWITCHOVER_BENCH_TRAFFIC=path the file
// is kept and reused (built when missing):
//
//	SWITCHOVER_BENCH_TRAFFIC=/tmp/traffic.db go test ./ledger/sqlite -run '^$' -bench 'Traffic/(sums|days)' -benchtime 20x
//	SWITCHOVER_BENCH_TRAFFIC=/tmp/traffic.db go test ./ledger/sqlite -run '^$' -bench 'Traffic/backfill' -benchtime 2x
func BenchmarkTraffic(b *testing.B) {
	ctx := context.Background()
	from := benchStart
	to := from.Add(trafficDays * 24 * time.Hour)
	s, path := openBenchLog(b, "SWITCHOVER_BENCH_TRAFFIC", "traffic.db", func(i int) time.Time {
		return from.Add(time.Duration(i) * (trafficDays * 24 * time.Hour / benchRows))
	})
	tr := s.(ledger.TrafficReader)
	var total int64
	sums, err := tr.TrafficSums(ctx, from, to)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sums {
		total += s.Requests
	}
	if total != benchRows {
		b.Fatalf("the sums count %d requests, want %d", total, benchRows)
	}
	b.Run("sums", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.TrafficSums(ctx, from, to); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(sums)), "rows")
	})
	b.Run("days", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sums, err := tr.TrafficSums(ctx, from, to)
			if err != nil {
				b.Fatal(err)
			}
			type cell struct {
				requests, errors, failovers int64
				lat                         ledger.Histogram
			}
			days := map[string]*[trafficDays]cell{}
			for _, s := range sums {
				d := days[s.Backend]
				if d == nil {
					d = &[trafficDays]cell{}
					days[s.Backend] = d
				}
				c := &d[int(s.Day.Sub(from)/(24*time.Hour))]
				c.requests += s.Requests
				c.errors += s.Errors
				c.failovers += s.Failovers
				c.lat.Merge(s.Latency)
			}
			for _, d := range days {
				for i := range d {
					_ = d[i].lat.Quantile(0.95)
				}
			}
		}
	})
	b.Run("backfill", func(b *testing.B) {
		mig, err := os.ReadFile("../migrations/sqlite/0014_traffic_daily.sql")
		if err != nil {
			b.Fatal(err)
		}
		fill := string(mig[strings.Index(string(mig), "INSERT INTO traffic_daily"):])
		db, err := sql.Open("sqlite", path)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for b.Loop() {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM traffic_daily"); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, fill); err != nil {
				b.Fatal(err)
			}
			tx.Rollback()
		}
	})
}
