package route

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
)

// minCheckInterval is the least time between two health checks of one
// backend that slow calls start: a burst of slow calls costs one check.
const minCheckInterval = 5 * time.Second

// errUnresponsive cancels the attempts still waiting for their first byte
// from a backend that a health check found unresponsive: they fail over
// at once instead of waiting out their timeouts.
var errUnresponsive = errors.New("switchover: backend unresponsive (health check failed); attempt abandoned")

// errCheckTimeout ends a health check that got no answer in time.
var errCheckTimeout = errors.New("switchover: health check timed out")

// checker is a backend's liveness checking: the attempts waiting for a
// first byte, and whether a check is running. It is safe for concurrent
// use.
type checker struct {
	mu      sync.Mutex
	running bool
	last    time.Time
	waiting map[*waiter]struct{}
	// active mirrors running, for selection to read without the lock.
	active atomic.Bool
}

type waiter struct{ cancel context.CancelCauseFunc }

// wait registers an attempt waiting for its first byte, until unwait.
func (c *checker) wait(w *waiter) {
	c.mu.Lock()
	if c.waiting == nil {
		c.waiting = map[*waiter]struct{}{}
	}
	c.waiting[w] = struct{}{}
	c.mu.Unlock()
}

// unwait unregisters an attempt registered by wait.
func (c *checker) unwait(w *waiter) {
	c.mu.Lock()
	delete(c.waiting, w)
	c.mu.Unlock()
}

// abortWaiting cancels every attempt waiting for a first byte, and
// returns how many there were.
func (c *checker) abortWaiting(cause error) int {
	c.mu.Lock()
	ws := make([]*waiter, 0, len(c.waiting))
	for w := range c.waiting {
		ws = append(ws, w)
	}
	c.waiting = nil
	c.mu.Unlock()
	for _, w := range ws {
		w.cancel(cause)
	}
	return len(ws)
}

// begin reports whether a check may start at now (none running, none
// started within minCheckInterval), and marks one running if so.
func (c *checker) begin(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running || (!c.last.IsZero() && now.Sub(c.last) < minCheckInterval) {
		return false
	}
	c.running, c.last = true, now
	c.active.Store(true)
	return true
}

func (c *checker) end() {
	c.mu.Lock()
	c.running = false
	c.active.Store(false)
	c.mu.Unlock()
}

// checking reports whether a check of the backend is running: selection
// passes the backend over while another member can take the call.
func (c *checker) checking() bool { return c.active.Load() }

// slowCall is called when an attempt on b has waited past the backend's
// slow threshold without a first byte. It checks in the background that
// b still answers at all (a one-token call, bounded by the backend's
// learned check timeout); while the check runs, selection passes b over
// for any other member that can take a call; when b does not answer, b's
// breaker is opened and
// every attempt still waiting on b is abandoned, so that they fail over
// now rather than when their first-byte timeouts end, and the caller's
// patience never decides whether a hung region is noticed.
func (p *Pool) slowCall(b *Backend, model string, waited time.Duration) {
	clk := clock.Or(p.Clock)
	if !b.check.begin(clk.Now()) {
		return
	}
	go func() {
		defer b.check.end()
		timeout := p.CheckTimeout(b)
		// The clock bounds the check; the wall-clock bound only makes sure
		// no check outlives maxCheckTimeout whatever the clock does.
		wctx, wcancel := context.WithTimeout(context.Background(), maxCheckTimeout)
		defer wcancel()
		ctx, cancel := context.WithCancelCause(wctx)
		t := clk.AfterFunc(timeout, func() { cancel(errCheckTimeout) })
		err := b.Probe(ctx, b.HealthCheck, model)
		t.Stop()
		timedOut := context.Cause(ctx) == errCheckTimeout
		cancel(context.Canceled)
		if !timedOut && answered(err) {
			return
		}
		result := "timeout"
		var pe *ProbeError
		if !timedOut && errors.As(err, &pe) {
			result = pe.Result
		}
		cause := fmt.Sprintf("unresponsive: a call waited %s with no first byte and a health check failed (%s)", waited.Round(time.Millisecond), result)
		if br := b.Breaker; br != nil && br.Snapshot().State != breaker.Open {
			br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, cause)
		}
		n := b.check.abortWaiting(errUnresponsive)
		p.observe(Event{Kind: EventUnresponsive, Backend: b, Reason: ReasonUnresponsive, Err: fmt.Errorf("%s; %d waiting attempts failed over", cause, n)})
	}()
}

// answered reports whether a probe result shows the backend answering:
// any HTTP status below 500 (a 429 or a 400 is an answer), as opposed to
// no answer at all or a server error.
func answered(err error) bool {
	if err == nil {
		return true
	}
	var pe *ProbeError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Result {
	case "2xx", "3xx", "4xx", "429":
		return true
	}
	return false
}
