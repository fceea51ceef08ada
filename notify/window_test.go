package notify

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	type op struct {
		at    time.Duration // since t0
		add   bool
		count int // expected count after the op
	}
	cases := []struct {
		name string
		span time.Duration
		ops  []op
	}{
		{"counts within the span", 10 * time.Second, []op{
			{0, true, 1}, {time.Second, true, 2}, {9 * time.Second, true, 3},
		}},
		{"old buckets expire", 10 * time.Second, []op{
			{0, true, 1}, {5 * time.Second, true, 2},
			{10 * time.Second, false, 1}, {15 * time.Second, false, 0},
		}},
		{"jump past the span clears", 10 * time.Second, []op{
			{0, true, 1}, {0, true, 2}, {time.Hour, false, 0}, {time.Hour, true, 1},
		}},
		{"time going back counts in the newest bucket", 10 * time.Second, []op{
			{5 * time.Second, true, 1}, {0, true, 2}, {14 * time.Second, false, 2}, {15 * time.Second, false, 0},
		}},
		{"long span uses wider buckets", time.Hour, []op{
			{0, true, 1}, {59 * time.Minute, true, 2}, {61 * time.Minute, false, 1}, {2 * time.Hour, false, 0},
		}},
		{"sub-second span", 100 * time.Millisecond, []op{
			{0, true, 1}, {10 * time.Millisecond, true, 2}, {2 * time.Second, false, 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(tc.span)
			if len(w.counts) > maxBuckets {
				t.Fatalf("%d buckets", len(w.counts))
			}
			for i, o := range tc.ops {
				var got int
				if o.add {
					got = w.add(t0.Add(o.at))
				} else {
					got = w.count(t0.Add(o.at))
				}
				if got != o.count {
					t.Fatalf("op %d (%+v): count %d, want %d", i, o, got, o.count)
				}
			}
		})
	}
}
