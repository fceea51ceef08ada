package breaker

import (
	"testing"
	"time"
)

// TestUsableAgreesWithSnapshot: Usable, which answers without the lock
// while the breaker is closed with no slow start, says what Snapshot's
// Ready and Share say in every state: closed, open before and after its
// Until, half-open with and without its probe taken, in a slow start and
// after it, restored open and restored closed.
func TestUsableAgreesWithSnapshot(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 1, Trip: time.Minute, SlowStart: 30 * time.Second})
	check := func(when string) {
		t.Helper()
		now := clk.Now()
		s := b.Snapshot()
		ok, share := b.Usable(now)
		wantShare := 0.0
		if s.Ready(now) {
			wantShare = s.Share
		}
		if ok != s.Ready(now) || share != wantShare {
			t.Errorf("%s: Usable %v, %.3f; Snapshot %v (ready %v, share %.3f)", when, ok, share, s.State, s.Ready(now), s.Share)
		}
	}
	check("new")
	call(t, b, fail)
	check("open")
	clk.Advance(time.Minute)
	check("open past its until")
	done, ok := b.Allow() // the half-open probe
	if !ok {
		t.Fatal("no probe let through")
	}
	check("half-open, probe taken")
	done(Outcome{Result: Failure, Kind: KindServerError})
	check("open again")

	// A repeated trip ends in a slow start.
	b.Force(Closed, time.Time{}, KindManual, "reset")
	b.Force(Open, time.Time{}, KindUnresponsive, "dark")
	b.Checked(true, "pass")
	b.Force(Open, time.Time{}, KindUnresponsive, "dark again")
	for range 3 {
		b.Checked(true, "pass")
	}
	if s := b.Snapshot(); s.State != Closed || s.Share >= 1 {
		t.Fatalf("after a repeated trip: %v share %.2f, want closed in a slow start", s.State, s.Share)
	}
	check("slow start begins")
	clk.Advance(15 * time.Second)
	check("slow start half way")
	clk.Advance(15 * time.Second)
	check("slow start over")
	if !b.plain.Load() {
		t.Error("the lock-free answer is not back after the slow start")
	}

	r, rclk, _ := newTest(Settings{Failures: 1, Trip: time.Minute})
	r.Restore(Snapshot{State: Open, Until: rclk.Now().Add(time.Minute)})
	if ok, _ := r.Usable(rclk.Now()); ok {
		t.Error("restored open: usable")
	}
	r.Restore(Snapshot{State: Closed})
	if ok, share := r.Usable(rclk.Now()); !ok || share != 1 {
		t.Errorf("restored closed: %v, %.2f", ok, share)
	}
}
