// Package fakeclock is a manually advanced clock for tests of time-based
// decisions.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told to. It is safe for concurrent
// use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock set to a fixed, arbitrary instant.
func New() *Clock {
	return &Clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
