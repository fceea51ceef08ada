package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// trafficEdges are the upper edges, in ms, of the latency histogram of
// traffic_daily (migration 0014 names its columns after them: le_50 …
// le_120000, and le_inf above the last). Change neither without the
// other: a new set of edges is a new migration.
var trafficEdges = [...]int64{50, 100, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 4000, 5000, 7500,
	10000, 15000, 20000, 30000, 60000, 120000}

// TrafficBuckets returns the upper edges, in ms, of the traffic
// histogram's buckets (a fresh copy); a last bucket holds what is above
// the last edge.
func TrafficBuckets() []int64 { return slices.Clone(trafficEdges[:]) }

// Histogram counts calls by duration: [i] those of more than
// TrafficBuckets()[i-1] ms and at most TrafficBuckets()[i] ms; the last,
// those above every edge.
type Histogram [len(trafficEdges) + 1]int64

// Add counts a call of ms milliseconds.
func (h *Histogram) Add(ms int64) {
	i, _ := slices.BinarySearch(trafficEdges[:], ms) // the first edge >= ms
	h[i]++
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o Histogram) {
	for i, n := range o {
		h[i] += n
	}
}

// Count is how many calls h holds.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile returns the upper edge (ms) of the bucket that holds the
// nearest-rank q-quantile of h's calls: the quantile rounded up to its
// bucket, never below it. Past the last edge it returns +Inf; without
// calls, NaN.
func (h Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return math.NaN()
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	var cum int64
	for i, c := range h {
		cum += c
		if cum >= rank {
			if i == len(trafficEdges) {
				return math.Inf(1)
			}
			return float64(trafficEdges[i])
		}
	}
	return math.Inf(1)
}

// TrafficSum is the traffic of one UTC day, pool and backend, as the
// console's charts read it.
type TrafficSum struct {
	// Day is the day's start (UTC midnight).
	Day time.Time
	// Backend is the one that answered, "" for requests none answered.
	Pool, Backend string
	// Requests counts every request of the request log (cache answers and
	// unanswered ones too); Errors those of status 400 or more or no
	// answer; Failovers those answered after a failover.
	Requests, Errors, Failovers int64
	// Latency counts the calls (requests that are not cache answers, with
	// a duration) by their duration.
	Latency Histogram
}

// Add counts u, a request of the log, in s (whatever its day, pool and
// backend).
func (s *TrafficSum) Add(u Usage) {
	s.Requests++
	if u.Unanswered || u.Status >= 400 {
		s.Errors++
	}
	if u.Failover {
		s.Failovers++
	}
	if u.Cache == "" && u.DurationMs > 0 {
		s.Latency.Add(u.DurationMs)
	}
}

// TrafficReader reads the request log's traffic summed per UTC day, pool
// and backend, for charts: exact counts over any range, read from an
// aggregate kept as requests are recorded (traffic_daily), so a range of
// 90 days costs a read of at most 90 rows per pool and backend, whatever
// the traffic. The stores of ledger/sqlite and ledger/postgres implement
// it.
type TrafficReader interface {
	// TrafficSums returns the sums of the days that start in [from, to),
	// ordered by day, pool and backend. Retention deletes them with the
	// request log (whole days before its cutoff). ErrInvalid for an empty
	// range.
	TrafficSums(ctx context.Context, from, to time.Time) ([]TrafficSum, error)
}

// TrafficPruner deletes the traffic sums of the days before a time;
// Retention calls it after it has deleted the request log's rows.
type TrafficPruner interface {
	// DeleteTrafficBefore deletes the sums of the days that end at or
	// before before, and returns how many.
	DeleteTrafficBefore(ctx context.Context, before time.Time) (int, error)
}

var (
	_ TrafficReader = (*sqlStore)(nil)
	_ TrafficPruner = (*sqlStore)(nil)
)

// dayUs is a day in microseconds.
const dayUs = 86400_000_000

// dayNumber numbers t's UTC day: days since the epoch, as traffic_daily
// and the migration's at_us / 86400000000 do.
func dayNumber(t time.Time) int64 {
	us := t.UnixMicro()
	d := us / dayUs
	if us < 0 && us%dayUs != 0 {
		d-- // floor, for times before 1970
	}
	return d
}

// trafficColumns are traffic_daily's latency columns, in bucket order.
var trafficColumns = func() []string {
	out := make([]string, 0, len(trafficEdges)+1)
	for _, e := range trafficEdges {
		out = append(out, "le_"+strconv.FormatInt(e, 10))
	}
	return append(out, "le_inf")
}()

// trafficKey is a row of traffic_daily.
type trafficKey struct {
	day           int64
	pool, backend string
}

// trafficSums are the sums a batch adds to traffic_daily.
type trafficSums map[trafficKey]*TrafficSum

func (m trafficSums) add(u Usage) {
	k := trafficKey{dayNumber(u.At), u.Pool, u.Backend}
	s := m[k]
	if s == nil {
		s = &TrafficSum{}
		m[k] = s
	}
	s.Add(u)
}

// addTraffic adds sums to traffic_daily within tx, in key order (the
// order in which concurrent batches lock rows).
func (s *sqlStore) addTraffic(ctx context.Context, tx *sql.Tx, sums trafficSums) error {
	if len(sums) == 0 {
		return nil
	}
	cols := append([]string{"requests", "errors", "failovers"}, trafficColumns...)
	var set strings.Builder
	for i, c := range cols {
		if i > 0 {
			set.WriteString(", ")
		}
		set.WriteString(c + " = traffic_daily." + c + " + excluded." + c)
	}
	up, err := tx.PrepareContext(ctx, s.q(`INSERT INTO traffic_daily (day, pool, backend, `+strings.Join(cols, ", ")+`)
		VALUES (?, ?, ?`+strings.Repeat(", ?", len(cols))+`)
		ON CONFLICT (day, pool, backend) DO UPDATE SET `+set.String()))
	if err != nil {
		return fmt.Errorf("ledger: record usage: traffic: %w", err)
	}
	defer up.Close()
	keys := make([]trafficKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b trafficKey) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.pool, b.pool), cmp.Compare(a.backend, b.backend))
	})
	args := make([]any, 0, 3+len(cols))
	for _, k := range keys {
		sm := sums[k]
		args = append(args[:0], k.day, k.pool, k.backend, sm.Requests, sm.Errors, sm.Failovers)
		for _, n := range sm.Latency {
			args = append(args, n)
		}
		if _, err := up.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("ledger: record usage: traffic: %w", err)
		}
	}
	return nil
}

func (s *sqlStore) TrafficSums(ctx context.Context, from, to time.Time) ([]TrafficSum, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("%w: traffic range [%s, %s) is empty", ErrInvalid, from, to)
	}
	// The days that start in [from, to): from the first midnight at or
	// after from, to the last before to.
	first, last := dayNumber(from), dayNumber(to)
	if !time.UnixMicro(first * dayUs).Equal(from) {
		first++
	}
	if time.UnixMicro(last * dayUs).Equal(to) {
		last--
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT day, pool, backend, requests, errors, failovers, `+
		strings.Join(trafficColumns, ", ")+` FROM traffic_daily WHERE day >= ? AND day <= ? ORDER BY day, pool, backend`), first, last)
	if err != nil {
		return nil, fmt.Errorf("ledger: traffic: %w", err)
	}
	defer rows.Close()
	var out []TrafficSum
	for rows.Next() {
		var r TrafficSum
		var day int64
		dest := []any{&day, &r.Pool, &r.Backend, &r.Requests, &r.Errors, &r.Failovers}
		for i := range r.Latency {
			dest = append(dest, &r.Latency[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("ledger: traffic: %w", err)
		}
		r.Day = time.UnixMicro(day * dayUs).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: traffic: %w", err)
	}
	return out, nil
}

func (s *sqlStore) DeleteTrafficBefore(ctx context.Context, before time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM traffic_daily WHERE day < ?`), dayNumber(before))
	if err != nil {
		return 0, fmt.Errorf("ledger: retention: traffic: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("ledger: retention: traffic: %w", err)
	}
	return int(n), nil
}
