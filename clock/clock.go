// Package clock is the time source of switchover's time-based decisions:
// breakers, per-attempt timeouts, trips that end without traffic. Code
// reads the time and arms timers only through a Clock, so tests drive it
// with a fake one and never sleep.
package clock

import "time"

// Clock tells the time and runs functions after a delay. Implementations
// must be safe for concurrent use.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, as
	// time.AfterFunc does, and returns a Timer that can stop it.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not happened, and reports whether
	// it stopped it.
	Stop() bool
	// Reset re-arms the timer to fire d from now, as time.Timer.Reset does
	// for an AfterFunc timer, and reports whether it was still pending.
	Reset(d time.Duration) bool
}

// Wall is the real clock.
var Wall Clock = wall{}

type wall struct{}

func (wall) Now() time.Time { return time.Now() }

func (wall) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// At arms f to run once c reads t, as c.AfterFunc(t.Sub(c.Now()), f)
// does, and returns the Timer that can stop it. A clock with an
// AfterFuncAt method (a test's fake clock) arms it at t in one step:
// a delay read from the clock and armed a moment later runs late by as
// far as the clock moved in between, which is nothing on the wall clock
// but a whole step on a clock a test moves while the code arms it.
func At(c Clock, t time.Time, f func()) Timer {
	if a, ok := c.(interface {
		AfterFuncAt(t time.Time, f func()) Timer
	}); ok {
		return a.AfterFuncAt(t, f)
	}
	return c.AfterFunc(t.Sub(c.Now()), f)
}

// Or returns c, or Wall when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Wall
	}
	return c
}
