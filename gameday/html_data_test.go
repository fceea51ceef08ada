package gameday

import (
	"slices"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/load"
)

func TestBucketRequests(t *testing.T) {
	ok := func(end time.Duration, backend string) load.Sample {
		return load.Sample{Start: end - 100*time.Millisecond, Latency: 100 * time.Millisecond, OK: true, Backend: backend}
	}
	fail := func(end time.Duration) load.Sample {
		return load.Sample{Start: end - 100*time.Millisecond, Latency: 100 * time.Millisecond, Failure: "503"}
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	samples := []load.Sample{
		ok(ms(500), "uksouth"), ok(ms(999), "uksouth"), ok(ms(1000), "uksouth"),
		fail(ms(1500)), fail(ms(1600)),
		ok(ms(1700), "swedencentral"), ok(ms(2500), "swedencentral"), ok(ms(3900), "swedencentral"),
		ok(ms(4000), "uksouth"), // at the span: last bucket
		ok(ms(9000), "uksouth"), // past the span: last bucket
		ok(ms(200), "zeta"),     // not a region: a series of its own
		ok(ms(300), ""),         // no backend header
	}
	got := bucketRequests(samples, fixtureRegions, 4*time.Second, time.Second)
	want := rpsBuckets{
		Width:    time.Second,
		Backends: []string{"uksouth", "swedencentral", "francecentral", "", "zeta"},
		OK: [][]int{
			{2, 1, 0, 2},
			{0, 1, 1, 1},
			{0, 0, 0, 0},
			{1, 0, 0, 0},
			{1, 0, 0, 0},
		},
		Failed: []int{0, 2, 0, 0},
	}
	if !slices.Equal(got.Backends, want.Backends) || got.Width != want.Width || !slices.Equal(got.Failed, want.Failed) ||
		!slices.EqualFunc(got.OK, want.OK, slices.Equal) {
		t.Errorf("bucketRequests =\n%+v\nwant\n%+v", got, want)
	}
}

// TestBucketRequestsFailover checks on the fixture that the region that
// took over carries traffic only after the failover, and the primary again
// after the failback.
func TestBucketRequestsFailover(t *testing.T) {
	run := fixtureReport().Scenarios[0].Runs[0]
	const w = 500 * time.Millisecond
	b := bucketRequests(run.Samples, fixtureRegions, runSpan(&run), w)
	primary, backup := b.OK[0], b.OK[1]
	for i := range b.Failed {
		at := time.Duration(i) * w
		switch {
		case at < 3500*time.Millisecond:
			if backup[i] != 0 {
				t.Errorf("swedencentral answered %d in bucket %v, before the failover", backup[i], at)
			}
		case at >= 4*time.Second && at < 6500*time.Millisecond:
			if backup[i] == 0 || primary[i] != 0 {
				t.Errorf("bucket %v: swedencentral %d, uksouth %d; want only swedencentral", at, backup[i], primary[i])
			}
		case at >= 7*time.Second && at < 10*time.Second:
			if primary[i] == 0 || backup[i] != 0 {
				t.Errorf("bucket %v: uksouth %d, swedencentral %d; want only uksouth after the failback", at, primary[i], backup[i])
			}
		}
	}
	total := 0
	for _, s := range append(slices.Clone(b.OK), b.Failed) {
		for _, c := range s {
			total += c
		}
	}
	if total != len(run.Samples) {
		t.Errorf("buckets hold %d requests, want %d", total, len(run.Samples))
	}
}

func TestBucketWidth(t *testing.T) {
	for _, tc := range []struct {
		span, want time.Duration
	}{
		{0, time.Millisecond},
		{50 * time.Millisecond, time.Millisecond},
		{time.Second, 10 * time.Millisecond},
		{10 * time.Second, 100 * time.Millisecond},
		{25 * time.Second, 250 * time.Millisecond},
		{30 * time.Second, 250 * time.Millisecond},
		{31 * time.Second, 500 * time.Millisecond},
		{10 * time.Minute, 5 * time.Second},
	} {
		got := bucketWidth(tc.span)
		if got != tc.want {
			t.Errorf("bucketWidth(%v) = %v, want %v", tc.span, got, tc.want)
		}
		if n := (tc.span + got - 1) / got; n > maxBuckets {
			t.Errorf("bucketWidth(%v) makes %d buckets, more than %d", tc.span, n, maxBuckets)
		}
	}
}

func TestBreakerSpans(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		ts   []Transition
		want []stateSpan
	}{
		{"none", nil, []stateSpan{{0, 10 * s, "closed", ""}}},
		{"other backend only", []Transition{{At: s, Backend: "b", From: "closed", To: "open"}}, []stateSpan{{0, 10 * s, "closed", ""}}},
		{"trip and recover, out of order", []Transition{
			{At: 6 * s, Backend: "a", From: "half_open", To: "closed", Cause: "probe ok"},
			{At: 2 * s, Backend: "a", From: "closed", To: "open", Cause: "failures"},
			{At: 5 * s, Backend: "a", From: "open", To: "half_open", Cause: "trip ended"},
		}, []stateSpan{{0, 2 * s, "closed", ""}, {2 * s, 5 * s, "open", "failures"}, {5 * s, 6 * s, "half_open", "trip ended"}, {6 * s, 10 * s, "closed", "probe ok"}}},
		{"open at the start", []Transition{{At: 0, Backend: "a", From: "closed", To: "open"}},
			[]stateSpan{{0, 10 * s, "open", ""}}},
		{"starts in From", []Transition{{At: 4 * s, Backend: "a", From: "open", To: "half_open"}},
			[]stateSpan{{0, 4 * s, "open", ""}, {4 * s, 10 * s, "half_open", ""}}},
		{"after the span", []Transition{{At: 12 * s, Backend: "a", From: "closed", To: "open"}},
			[]stateSpan{{0, 10 * s, "closed", ""}}},
		{"same instant", []Transition{{At: 3 * s, Backend: "a", From: "closed", To: "open"}, {At: 3 * s, Backend: "a", From: "open", To: "half_open"}},
			[]stateSpan{{0, 3 * s, "closed", ""}, {3 * s, 10 * s, "half_open", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := breakerSpans(tc.ts, "a", 10*s)
			if !slices.Equal(got, tc.want) {
				t.Errorf("breakerSpans =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestThinSamples(t *testing.T) {
	var s []load.Sample
	for i := range 10000 {
		s = append(s, load.Sample{Start: time.Duration(9999-i) * time.Millisecond})
	}
	got := thinSamples(s, 2500)
	if len(got) != 2500 {
		t.Fatalf("got %d samples, want 2500", len(got))
	}
	for i, x := range got {
		if want := time.Duration(4*i) * time.Millisecond; x.Start != want {
			t.Fatalf("sample %d starts at %v, want %v (every 4th, in start order)", i, x.Start, want)
		}
	}
	if got := thinSamples(s[:100], 2500); len(got) != 100 || got[0].Start != 9900*time.Millisecond {
		t.Errorf("thinSamples of 100 = %d samples from %v, want all 100 sorted", len(got), got[0].Start)
	}
}
