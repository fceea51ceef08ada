package gameday

import (
	"slices"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// runBackends lists the backends of a run in plotting order: the
// scenario's regions in order, then any other backend that answered a
// request or had a breaker transition, sorted ("" first, for successes
// without a backend header).
func runBackends(sc *ScenarioResult, run *RunResult) []string {
	var out []string
	for _, reg := range sc.Regions {
		if !slices.Contains(out, reg.Name) {
			out = append(out, reg.Name)
		}
	}
	var extra []string
	note := func(b string) {
		if !slices.Contains(out, b) && !slices.Contains(extra, b) {
			extra = append(extra, b)
		}
	}
	for _, s := range run.Samples {
		if s.OK {
			note(s.Backend)
		}
	}
	for _, t := range run.Transitions {
		note(t.Backend)
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// runSpan is the time axis of a run's plots: its duration, stretched to
// the last answer or transition if one came later.
func runSpan(run *RunResult) time.Duration {
	span := run.Duration
	for _, s := range run.Samples {
		span = max(span, s.End())
	}
	for _, t := range run.Transitions {
		span = max(span, t.At)
	}
	if span <= 0 {
		span = time.Second
	}
	return span
}

// rpsBuckets counts completed requests per time bucket.
type rpsBuckets struct {
	// Width is the width of a bucket; bucket b runs from b*Width to
	// (b+1)*Width.
	Width time.Duration
	// Backends name the success series, bottom of the stack first.
	Backends []string
	// OK[i][b] counts successful requests answered by Backends[i] that
	// ended in bucket b.
	OK [][]int
	// Failed[b] counts failed requests that ended in bucket b.
	Failed []int
}

// bucketWidth picks a bucket width for a time axis of length span: the
// smallest of 1, 2, 2.5 and 5 times a power of ten milliseconds (no 2.5
// below 10 ms) that makes at most maxBuckets buckets.
func bucketWidth(span time.Duration) time.Duration {
	target := span / maxBuckets
	for p := time.Millisecond; ; p *= 10 {
		for _, m := range []float64{1, 2, 2.5, 5} {
			if m == 2.5 && p < 10*time.Millisecond {
				continue
			}
			if c := time.Duration(m * float64(p)); c >= target {
				return c
			}
		}
	}
}

// bucketRequests counts samples by the bucket of width width in which they
// ended, over [0, span): successes by backend, failures apart. Successes
// from a backend not in backends get a series of their own after them, in
// order of name. Samples that ended outside [0, span) count in the first or
// last bucket.
func bucketRequests(samples []load.Sample, backends []string, span, width time.Duration) rpsBuckets {
	if width <= 0 {
		width = time.Millisecond
	}
	n := int(max((span+width-1)/width, 1))
	b := rpsBuckets{Width: width, Backends: slices.Clone(backends), Failed: make([]int, n)}
	var extra []string
	for _, s := range samples {
		if s.OK && !slices.Contains(b.Backends, s.Backend) && !slices.Contains(extra, s.Backend) {
			extra = append(extra, s.Backend)
		}
	}
	slices.Sort(extra)
	b.Backends = append(b.Backends, extra...)
	b.OK = make([][]int, len(b.Backends))
	for i := range b.OK {
		b.OK[i] = make([]int, n)
	}
	for _, s := range samples {
		i := min(max(int(s.End()/width), 0), n-1)
		if !s.OK {
			b.Failed[i]++
			continue
		}
		b.OK[slices.Index(b.Backends, s.Backend)][i]++
	}
	return b
}

// stateSpan is a breaker state over a stretch of a run.
type stateSpan struct {
	From, To time.Duration
	State    string
	// Cause is the cause of the transition into State, "" for the state
	// the run began in.
	Cause string
}

// breakerSpans lays backend's breaker states end to end over [0, span]
// from transitions (of any backends, in any order): the state before the
// first transition is that transition's From, or "closed" if it has none.
// Zero-length states (two transitions at the same instant) are dropped.
func breakerSpans(transitions []Transition, backend string, span time.Duration) []stateSpan {
	var ts []Transition
	for _, t := range transitions {
		if t.Backend == backend {
			ts = append(ts, t)
		}
	}
	slices.SortStableFunc(ts, func(a, b Transition) int { return cmpDuration(a.At, b.At) })
	cur := stateSpan{State: "closed"}
	if len(ts) > 0 && ts[0].From != "" {
		cur.State = ts[0].From
	}
	var out []stateSpan
	for _, t := range ts {
		at := min(max(t.At, 0), span)
		if at > cur.From {
			cur.To = at
			out = append(out, cur)
		}
		cur = stateSpan{From: at, State: t.To, Cause: t.Cause}
	}
	if span > cur.From || len(out) == 0 {
		cur.To = span
		out = append(out, cur)
	}
	return out
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// thinSamples returns samples ordered by start time, evenly thinned to at
// most limit of them (every one when there are no more than limit).
func thinSamples(samples []load.Sample, limit int) []load.Sample {
	s := slices.Clone(samples)
	slices.SortStableFunc(s, func(a, b load.Sample) int {
		if c := cmpDuration(a.Start, b.Start); c != 0 {
			return c
		}
		return cmpDuration(a.Latency, b.Latency)
	})
	if limit <= 0 || len(s) <= limit {
		return s
	}
	out := make([]load.Sample, 0, limit)
	for i := range limit {
		out = append(out, s[i*len(s)/limit])
	}
	return out
}
