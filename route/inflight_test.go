package route

import (
	"sync"
	"testing"
)

func TestInFlightCounts(t *testing.T) {
	b := &Backend{Name: "a"}
	for _, tc := range []struct {
		name string
		op   func()
		want int64
	}{
		{"zero value", func() {}, 0},
		{"begin", b.beginAttempt, 1},
		{"begin again", b.beginAttempt, 2},
		{"end", b.endAttempt, 1},
		{"end the last", b.endAttempt, 0},
	} {
		tc.op()
		if got := b.InFlight(); got != tc.want {
			t.Fatalf("%s: InFlight() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestInFlightConcurrent(t *testing.T) {
	// Begins and ends from many goroutines balance out, and the count
	// never reads below zero while every end follows its begin.
	b := &Backend{Name: "a"}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 1000 {
				b.beginAttempt()
				if n := b.InFlight(); n < 1 {
					t.Errorf("InFlight() = %d inside an attempt", n)
				}
				b.endAttempt()
			}
		})
	}
	wg.Wait()
	if n := b.InFlight(); n != 0 {
		t.Fatalf("InFlight() = %d after every attempt ended", n)
	}
}
