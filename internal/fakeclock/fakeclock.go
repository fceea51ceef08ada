// Package fakeclock is a manually advanced clock for tests of time-based
// decisions. Its timers fire when Advance moves the clock past them.
package fakeclock

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// Clock is a clock that moves only when told to. It is safe for concurrent
// use.
type Clock struct {
	mu     sync.Mutex
	armed  *sync.Cond // signalled when a timer is armed
	now    time.Time
	timers []*timer
	seq    uint64
}

var _ clock.Clock = (*Clock)(nil)

// New returns a clock set to a fixed, arbitrary instant.
func New() *Clock {
	c := &Clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	c.armed = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and runs, in the order of their
// due times, the timers that fall due, each on the calling goroutine and
// with the clock reading its due time. A timer armed by one of them that
// also falls due within d runs too.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		t := c.nextDueLocked(end)
		if t == nil {
			break
		}
		t.pending = false
		if t.at.After(c.now) {
			c.now = t.at
		}
		f := t.f
		c.mu.Unlock()
		f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

// nextDueLocked removes and returns the earliest timer due by end. Requires
// c.mu held.
func (c *Clock) nextDueLocked(end time.Time) *timer {
	live := c.timers[:0]
	for _, t := range c.timers {
		if t.pending {
			live = append(live, t)
		} else {
			t.listed = false
		}
	}
	c.timers = live
	sort.SliceStable(c.timers, func(i, j int) bool {
		if !c.timers[i].at.Equal(c.timers[j].at) {
			return c.timers[i].at.Before(c.timers[j].at)
		}
		return c.timers[i].seq < c.timers[j].seq
	})
	if len(c.timers) == 0 || c.timers[0].at.After(end) {
		return nil
	}
	t := c.timers[0]
	c.timers = c.timers[1:]
	t.listed = false
	return t
}

// Pending returns how many timers are armed and not yet due.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked()
}

func (c *Clock) pendingLocked() int {
	n := 0
	for _, t := range c.timers {
		if t.pending {
			n++
		}
	}
	return n
}

// BlockUntilTimer waits until a timer is armed that falls due exactly d
// from now (code under test is waiting on a timeout of d), or ctx ends,
// and then returns its error.
func (c *Clock) BlockUntilTimer(ctx context.Context, d time.Duration) error {
	return c.waitFor(ctx, func() bool {
		for _, t := range c.timers {
			if t.pending && t.at.Equal(c.now.Add(d)) {
				return true
			}
		}
		return false
	})
}

// BlockUntilTimerAt waits until a timer is armed that falls due at t, or
// ctx ends, and then returns its error: for code that arms its timer from
// an instant it read earlier (clock.At), which the clock may have passed.
func (c *Clock) BlockUntilTimerAt(ctx context.Context, t time.Time) error {
	return c.waitFor(ctx, func() bool {
		for _, tm := range c.timers {
			if tm.pending && tm.at.Equal(t) {
				return true
			}
		}
		return false
	})
}

// BlockUntilContext is BlockUntil that gives up when ctx ends, and then
// returns its error.
func (c *Clock) BlockUntilContext(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return c.pendingLocked() >= n })
}

// BlockUntil waits until at least n timers are armed: code under test has
// reached the point where it waits on the clock, so an Advance now acts on
// its timers.
func (c *Clock) BlockUntil(n int) {
	c.waitFor(context.Background(), func() bool { return c.pendingLocked() >= n })
}

// waitFor waits, with c.mu held while ok runs, until ok reports true (it
// is checked again whenever a timer is armed) or ctx ends.
func (c *Clock) waitFor(ctx context.Context, ok func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.armed.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for !ok() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.armed.Wait()
	}
	return nil
}

// AfterFunc implements clock.Clock. Unlike time.AfterFunc, f runs on the
// goroutine that calls Advance.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &timer{c: c, at: c.now.Add(d), f: f, pending: true, listed: true, seq: c.seq}
	c.timers = append(c.timers, t)
	c.armed.Broadcast()
	return t
}

// AfterFuncAt arms f to run once the clock reaches t, in one step (see
// clock.At): f runs on the goroutine that calls Advance, at the next
// Advance when t has passed already.
func (c *Clock) AfterFuncAt(t time.Time, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	tm := &timer{c: c, at: t, f: f, pending: true, listed: true, seq: c.seq}
	c.timers = append(c.timers, tm)
	c.armed.Broadcast()
	return tm
}

type timer struct {
	c       *Clock
	at      time.Time
	f       func()
	pending bool
	// listed says t is in c.timers. A stopped timer stays there until
	// an Advance sweeps it out, so Reset lists it again only when it is
	// not: listed twice, Pending would count it twice.
	listed bool
	seq    uint64
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.pending = false
	return was
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.c.seq++
	t.at, t.seq = t.c.now.Add(d), t.c.seq
	t.pending = true
	if !t.listed {
		t.listed = true
		t.c.timers = append(t.c.timers, t)
	}
	t.c.armed.Broadcast()
	return was
}
