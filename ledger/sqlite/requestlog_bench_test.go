package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// benchRows is how many requests BenchmarkRequestLog stores.
const benchRows = 1_000_000

// benchStart is the first request's time: the rows span 30 days from it.
var benchStart = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// benchRequest is request i of the benchmark's log: 20 keys in 5 teams,
// 4 pools, 8 backends, 6 models, an end user on a third of them (2,000
// end users), 3% failovers (two attempts), 1% 5xx, 2% 429, 5% cache
// hits, 0.5% unanswered; one request every 2.6 s over 30 days.
func benchRequest(r *rand.Rand, i int) ledger.Usage {
	key := r.IntN(20)
	backend := fmt.Sprintf("backend-%d", r.IntN(8))
	u := ledger.Usage{
		At:        benchStart.Add(time.Duration(i) * (30 * 24 * time.Hour / benchRows)),
		RequestID: fmt.Sprintf("req-%08x-%04x", i, r.IntN(1<<16)),
		KeyID:     fmt.Sprintf("key_%02d", key), Team: fmt.Sprintf("team-%d", key%5),
		Pool: fmt.Sprintf("pool-%d", r.IntN(4)), Backend: backend, Model: fmt.Sprintf("model-%d", r.IntN(6)),
		PromptTokens: int64(r.IntN(4000)), CompletionTokens: int64(r.IntN(800)), Cost: float64(r.IntN(10000)) / 1e6,
		Status: 200, Tried: 1, DurationMs: int64(200 + r.IntN(3000)), FirstByteMs: int64(100 + r.IntN(900)),
		Attempts: []ledger.Attempt{{Backend: backend, Status: 200, Reason: "ok", DurationMs: 300}},
	}
	if r.IntN(3) == 0 {
		u.EndUser = fmt.Sprintf("user-%04d@example.com", r.IntN(2000))
	}
	switch p := r.IntN(1000); {
	case p < 30:
		from := fmt.Sprintf("backend-%d", r.IntN(8))
		u.Failover, u.Tried = true, 2
		u.Attempts = []ledger.Attempt{{Backend: from, Status: 429, Reason: "rate_limited", DurationMs: 200},
			{Backend: backend, Status: 200, Reason: "ok", StartMs: 201, DurationMs: 300}}
	case p < 40:
		u.Status = 500 + r.IntN(4)
	case p < 60:
		u.Status = 429
	case p < 110:
		u.Cache, u.Saved, u.Cost, u.Attempts, u.Tried = "hit", u.Cost, 0, nil, 0
	case p < 115:
		u.Unanswered, u.Backend, u.Status, u.Cost, u.Tried = true, "", 502, 0, 2
		u.Attempts = []ledger.Attempt{{Backend: backend, Reason: "timeout", DurationMs: 3000},
			{Backend: fmt.Sprintf("backend-%d", r.IntN(8)), Status: 503, Reason: "server_error", StartMs: 3001, DurationMs: 20}}
	}
	return u
}

// openBenchLog opens the SQLite file the environment variable env names
// (a temporary one named name when unset) and, when it holds no request,
// stores benchRows requests of benchRequest, each at at(i) when at is
// set, and returns it with its path. It is closed at the benchmark's end.
func openBenchLog(b *testing.B, env, name string, at func(i int) time.Time) (ledger.Store, string) {
	ctx := context.Background()
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(b.TempDir(), name)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if got, err := s.Requests(ctx, ledger.RequestQuery{Limit: 1}); err != nil {
		b.Fatal(err)
	} else if len(got) > 0 {
		return s, path
	}
	start := time.Now()
	r := rand.New(rand.NewPCG(1, 2))
	batch := make([]ledger.Usage, 0, 5000)
	for i := range benchRows {
		u := benchRequest(r, i)
		if at != nil {
			u.At = at(i)
		}
		batch = append(batch, u)
		if len(batch) == cap(batch) {
			if err := s.RecordUsage(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("stored %d requests in %v", benchRows, time.Since(start).Round(time.Second))
	return s, path
}

// BenchmarkRequestLog stores 1,000,000 requests in SQLite and times each
// filter of the request log (a page of 50, as the console asks: limit
// 51). The target: each under 300 ms. Building the table takes
// minutes; with SWITCHOVER_BENCH_REQUEST_LOG=path the file is kept and
// reused (built when missing):
//
//	SWITCHOVER_BENCH_REQUEST_LOG=/tmp/reqlog.db go test ./ledger/sqlite -run '^$' -bench RequestLog -benchtime 10x
func BenchmarkRequestLog(b *testing.B) {
	ctx := context.Background()
	s, _ := openBenchLog(b, "SWITCHOVER_BENCH_REQUEST_LOG", "requests.db", nil)
	mid := benchStart.Add(15 * 24 * time.Hour)
	one, err := s.Requests(ctx, ledger.RequestQuery{Before: ledger.Cursor{At: mid, RequestID: "req-z"}, Limit: 1})
	if err != nil || len(one) != 1 {
		b.Fatalf("a request from the middle: %v, %v", one, err)
	}
	cases := []struct {
		name string
		q    ledger.RequestQuery
	}{
		{"newest", ledger.RequestQuery{}},
		{"day", ledger.RequestQuery{From: mid, To: mid.Add(24 * time.Hour)}},
		{"key", ledger.RequestQuery{Key: "key_07"}},
		{"team", ledger.RequestQuery{Team: "team-3"}},
		{"model", ledger.RequestQuery{Model: "model-4"}},
		{"pool", ledger.RequestQuery{Pool: "pool-2"}},
		{"backend", ledger.RequestQuery{Backend: "backend-5"}},
		{"backend around an event", ledger.RequestQuery{Backend: "backend-5", From: mid.Add(-5 * time.Minute), To: mid.Add(5 * time.Minute)}},
		{"status 5xx", ledger.RequestQuery{StatusMin: 500, StatusMax: 599}},
		{"status 429", ledger.RequestQuery{StatusMin: 429, StatusMax: 429}},
		{"status error", ledger.RequestQuery{StatusMin: 400, StatusMax: 599}},
		{"failover yes", ledger.RequestQuery{Failover: "yes"}},
		{"failover no", ledger.RequestQuery{Failover: "no"}},
		{"cache hit", ledger.RequestQuery{Cache: "hit"}},
		{"end user", ledger.RequestQuery{EndUser: "user-0042@example.com"}},
		{"text request id", ledger.RequestQuery{Text: one[0].RequestID}},
		{"text model", ledger.RequestQuery{Text: "model-2"}},
		{"text end user", ledger.RequestQuery{Text: "user-0042@example.com"}},
		{"text no match", ledger.RequestQuery{Text: "nothing-at-all"}},
		{"key and 5xx in a week", ledger.RequestQuery{Key: "key_03", StatusMin: 500, StatusMax: 599, From: mid, To: mid.Add(7 * 24 * time.Hour)}},
		{"team, model and failover", ledger.RequestQuery{Team: "team-1", Model: "model-0", Failover: "yes"}},
		{"backend and 5xx", ledger.RequestQuery{Backend: "backend-2", StatusMin: 500, StatusMax: 599}},
		{"page 100", ledger.RequestQuery{Before: ledger.Cursor{At: benchStart.Add(29 * 24 * time.Hour), RequestID: "req-z"}}},
	}
	for _, tc := range cases {
		tc.q.Limit = 51
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				got, err := s.Requests(ctx, tc.q)
				if err != nil {
					b.Fatal(err)
				}
				n = len(got)
			}
			b.ReportMetric(float64(n), "rows")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
