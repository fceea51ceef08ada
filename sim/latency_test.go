package sim

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestLognormal(t *testing.T) {
	tests := []struct {
		name   string
		median time.Duration
		spread float64
		z      float64
		want   time.Duration
	}{
		{"z=0 is the median", 300 * time.Millisecond, 0.5, 0, 300 * time.Millisecond},
		{"no spread is the median", 300 * time.Millisecond, 0, 2, 300 * time.Millisecond},
		{"one sigma up", 300 * time.Millisecond, 0.5, 1, time.Duration(float64(300*time.Millisecond) * math.Exp(0.5))},
		{"one sigma down", 300 * time.Millisecond, 0.5, -1, time.Duration(float64(300*time.Millisecond) * math.Exp(-0.5))},
		{"zero median", 0, 0.5, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := lognormal(tc.median, tc.spread, tc.z); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPlanTiming(t *testing.T) {
	l := Latency{Median: 400 * time.Millisecond, FirstToken: 100 * time.Millisecond, PerToken: 10 * time.Millisecond}
	got := planTiming(l, 0, 3)
	want := timing{total: 1200 * time.Millisecond, firstToken: 300 * time.Millisecond, perToken: 30 * time.Millisecond}
	if got != want {
		t.Errorf("planTiming = %+v, want %+v", got, want)
	}
	if got := planTiming(l, 0, 0); got.total != 400*time.Millisecond {
		t.Errorf("factor 0 should mean 1: %+v", got)
	}
}

func TestRealWaiterStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (realWaiter{}).Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
	if err := (realWaiter{}).Wait(context.Background(), 0); err != nil {
		t.Errorf("zero wait = %v", err)
	}
}
