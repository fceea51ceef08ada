package fakeclock

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

func TestAdvanceFiresDueTimersInOrder(t *testing.T) {
	c := New()
	start := c.Now()
	var got []time.Duration
	c.AfterFunc(3*time.Second, func() { got = append(got, c.Now().Sub(start)) })
	c.AfterFunc(1*time.Second, func() {
		got = append(got, c.Now().Sub(start))
		c.AfterFunc(time.Second, func() { got = append(got, c.Now().Sub(start)) })
	})
	stopped := c.AfterFunc(2500*time.Millisecond, func() { t.Error("stopped timer fired") })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	c.Advance(5 * time.Second)
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	}
	if c.Now().Sub(start) != 5*time.Second {
		t.Fatalf("now = %v after Advance(5s)", c.Now().Sub(start))
	}
}

func TestResetMovesATimer(t *testing.T) {
	c := New()
	fired := 0
	tm := c.AfterFunc(time.Second, func() { fired++ })
	c.Advance(900 * time.Millisecond)
	if !tm.Reset(time.Second) {
		t.Fatal("Reset of a pending timer = false")
	}
	c.Advance(900 * time.Millisecond)
	if fired != 0 {
		t.Fatal("fired before its reset due time")
	}
	c.Advance(200 * time.Millisecond)
	if fired != 1 {
		t.Fatalf("fired %d times, want 1", fired)
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a fired timer = true")
	}
	c.Advance(time.Second)
	if fired != 2 {
		t.Fatalf("fired %d times after re-arming, want 2", fired)
	}
	if c.Pending() != 0 {
		t.Fatalf("Pending = %d", c.Pending())
	}
}

// TestAtArmsAnInstant: clock.At on the fake clock arms the instant itself,
// whatever the clock reads when it is armed: it fires when Advance reaches
// that instant, reading it, and one armed for an instant already passed
// fires at the next Advance.
func TestAtArmsAnInstant(t *testing.T) {
	c := New()
	start := c.Now()
	var at []time.Duration
	clock.At(c, start.Add(3*time.Second), func() { at = append(at, c.Now().Sub(start)) })
	c.Advance(2 * time.Second)
	if len(at) != 0 {
		t.Fatalf("fired at %v, before its instant", at)
	}
	c.Advance(time.Second)
	clock.At(c, start, func() { at = append(at, c.Now().Sub(start)) })
	c.Advance(0)
	if want := []time.Duration{3 * time.Second, 3 * time.Second}; len(at) != 2 || at[0] != want[0] || at[1] != want[1] {
		t.Fatalf("fired at %v, want %v", at, want)
	}
}

// TestPendingCountsAStoppedAndResetTimerOnce: a timer stopped and reset
// before any Advance (a connection's body-read deadline, reused by each
// request on it) was listed once more at each Reset and counted that
// many times by Pending, so BlockUntil returned before the code under
// test had armed the timers it waited for
// (TestKeyPatienceMakesItsCallersPatient flaked so).
func TestPendingCountsAStoppedAndResetTimerOnce(t *testing.T) {
	c := New()
	fired := 0
	tm := c.AfterFunc(time.Minute, func() { fired++ })
	for range 3 {
		tm.Stop()
		if n := c.Pending(); n != 0 {
			t.Fatalf("Pending after Stop = %d, want 0", n)
		}
		tm.Reset(time.Minute)
		if n := c.Pending(); n != 1 {
			t.Fatalf("Pending after Stop and Reset = %d, want 1", n)
		}
	}
	tm.Reset(2 * time.Minute) // a pending timer moved, not added
	if n := c.Pending(); n != 1 {
		t.Fatalf("Pending after a Reset of a pending timer = %d, want 1", n)
	}
	c.Advance(3 * time.Minute)
	if fired != 1 || c.Pending() != 0 {
		t.Fatalf("fired %d times, %d pending; want once, none", fired, c.Pending())
	}
	tm.Reset(time.Minute) // fired, then reset: listed anew
	if n := c.Pending(); n != 1 {
		t.Fatalf("Pending after a Reset of a fired timer = %d, want 1", n)
	}
	c.Advance(time.Minute)
	if fired != 2 {
		t.Fatalf("fired %d times, want 2", fired)
	}
}
