package sqlite_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
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
	path := os.Getenv("SWITCHOVER_BENCH_TRAFFIC")
	if path == "" {
		path = filepath.Join(b.TempDir(), "traffic.db")
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	from := benchStart
	to := from.Add(trafficDays * 24 * time.Hour)
	tr := s.(ledger.TrafficReader)
	if got, err := s.Requests(ctx, ledger.RequestQuery{Limit: 1}); err != nil {
		b.Fatal(err)
	} else if len(got) == 0 {
		start := time.Now()
		r := rand.New(rand.NewPCG(1, 2))
		batch := make([]ledger.Usage, 0, 5000)
		for i := range benchRows {
			u := benchRequest(r, i)
			u.At = from.Add(time.Duration(i) * (trafficDays * 24 * time.Hour / benchRows))
			batch = append(batch, u)
			if len(batch) == cap(batch) {
				if err := s.RecordUsage(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.Logf("stored %d requests in %v", benchRows, time.Since(start).Round(time.Second))
	}
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
