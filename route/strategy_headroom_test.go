package route

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// shares returns a Remaining that reports left[name], unknown when absent.
func shares(left map[string]float64) func(*Backend) (float64, bool) {
	return func(b *Backend) (float64, bool) {
		v, ok := left[b.Name]
		return v, ok
	}
}

func TestHeadroomSequence(t *testing.T) {
	drifted := 1.0 // 0.6000000000000001, as a quota counted down in tenths
	for range 4 {
		drifted -= 0.1
	}
	if drifted == 0.6 {
		t.Fatal("no drift to test")
	}
	for _, tc := range []struct {
		name string
		spec [][2]int
		s    *Headroom
		want string
	}{
		{"nil Remaining: all full, by weight", [][2]int{{1, 5}, {1, 1}, {1, 1}},
			&Headroom{}, "aabacaa"},
		{"the most left wins", [][2]int{{1, 90}, {1, 5}, {1, 5}},
			&Headroom{Remaining: shares(map[string]float64{"a": 0.2, "b": 0.7, "c": 0.4})}, "bbbb"},
		{"unknown counts as full", [][2]int{{1, 1}, {1, 1}},
			&Headroom{Remaining: shares(map[string]float64{"a": 0.9})}, "bbbb"},
		// 0.81 and 0.84 both round up to 0.85: a tie, by weight 2/1.
		{"within a step: by weight", [][2]int{{1, 2}, {1, 1}, {1, 1}},
			&Headroom{Remaining: shares(map[string]float64{"a": 0.81, "b": 0.84, "c": 0.79})}, "abaaba"},
		{"a multiple of the step is its own step", [][2]int{{1, 1}, {1, 1}},
			&Headroom{Remaining: shares(map[string]float64{"a": 0.3, "b": 0.3001})}, "bbbb"},
		{"below a multiple is in its step", [][2]int{{1, 1}, {1, 2}},
			&Headroom{Remaining: shares(map[string]float64{"a": 0.3, "b": 0.2999})}, "bab"},
		{"float drift stays in its step", [][2]int{{1, 1}, {1, 2}},
			&Headroom{Remaining: shares(map[string]float64{"a": drifted, "b": 0.6})}, "bab"},
		{"exact shares with a negative step", [][2]int{{1, 2}, {1, 1}},
			&Headroom{Step: -1, Remaining: shares(map[string]float64{"a": 0.81, "b": 0.84})}, "bbbb"},
		{"a step of 1 ties all with quota left", [][2]int{{1, 2}, {1, 1}, {1, 1}},
			&Headroom{Step: 1, Remaining: shares(map[string]float64{"a": 0.1, "b": 0.9, "c": 0})}, "abaaba"},
		{"out of range and NaN", [][2]int{{1, 1}, {1, 1}, {1, 1}},
			&Headroom{Step: -1, Remaining: shares(map[string]float64{"a": 7, "b": math.NaN(), "c": -3})}, "ababab"},
		{"tier 2 only without tier 1", [][2]int{{2, 1}, {1, 1}},
			&Headroom{Remaining: shares(map[string]float64{"a": 1, "b": 0})}, "bbbb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := picks(tc.s, members(tc.spec...), len(tc.want)); got != tc.want {
				t.Fatalf("picks %s, want %s", got, tc.want)
			}
		})
	}
}

func TestHeadroomFollowsQuota(t *testing.T) {
	// Each pick uses 10% of a's quota or 20% of b's (b's limit is half
	// a's): picks keep the shares within a step or two of each other, so
	// a takes two picks to each of b's, its limit's share.
	c := members([2]int{1, 1}, [2]int{1, 1})
	left := map[string]float64{"a": 1, "b": 1}
	cost := map[string]float64{"a": 0.1, "b": 0.2}
	s := &Headroom{Remaining: shares(left)}
	var got strings.Builder
	for range 9 {
		m := c[s.Select(nil, c)]
		got.WriteString(m.Backend.Name)
		left[m.Backend.Name] -= cost[m.Backend.Name]
	}
	// Both full: a (the {a, b} tie's first pick); b (full); a (0.9 to
	// 0.8); the tie at 0.8: b (its second); a, a (0.8 and 0.7 to 0.6);
	// the tie at 0.6: a; b (0.6 to 0.5); a (0.5 to 0.4).
	if want := "ababaaaba"; got.String() != want {
		t.Fatalf("picks %s, want %s", got.String(), want)
	}
}

func TestHeadroomConcurrent(t *testing.T) {
	// Remaining is called from many goroutines without a lock (it must be
	// safe for concurrent use: this one reads atomics); with fixed shares
	// picks are one sequence: a and b tie at 0.5 with weights 3 and 1, c
	// has less left, so 8000 picks are exactly 6000 and 2000.
	c := members([2]int{1, 3}, [2]int{1, 1}, [2]int{1, 9})
	var calls atomic.Int64
	s := &Headroom{Remaining: func(b *Backend) (float64, bool) {
		calls.Add(1)
		if b.Name == "c" {
			return 0.2, true
		}
		return 0.5, true
	}}
	counts := concurrentPicks(s, c, 8, 1000)
	if counts["a"] != 6000 || counts["b"] != 2000 || counts["c"] != 0 {
		t.Fatalf("picks %v, want 6000/2000/0", counts)
	}
	if n := calls.Load(); n != 3*8000 {
		t.Fatalf("Remaining called %d times, want once per candidate per pick", n)
	}
}

func BenchmarkHeadroom(b *testing.B) {
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	s := &Headroom{Remaining: func(b *Backend) (float64, bool) { return 0.5, true }}
	b.ReportAllocs()
	for b.Loop() {
		s.Select(nil, c)
	}
}
