package route

import (
	"context"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
)

// The hold of a request whose pool ran short (holdForProbes).
const (
	// shortHold is the longest a request waits for a benched member to
	// come back when its retryable failure found no member to retry on.
	shortHold = 2 * time.Second
	// holdStep is how often a held request looks again.
	holdStep = 100 * time.Millisecond
)

// holdForProbes is what a request does when its retryable failure found
// no member to retry on, before it relays that failure: when a member it
// has not tried is benched but probed (Backend.ProbeInterval, and a trip
// probes end: the gateway probes a short pool's benched members at once,
// and one passing probe ends the trip), it waits up to shortHold, and no later than deadline
// (zero: none) or the end of ctx, for such a member to take calls again,
// and reports whether one did. A region that failed while its peer was
// still benched from its own turn used to relay its calls' failures in the
// half second the peer's probe took. Nothing is held in a pool with
// fallbacks (they are the way on), nor when nothing probes the members.
func (p *Pool) holdForProbes(ctx context.Context, tried *memberSet, deadline time.Time) bool {
	if p.Fallback != nil || p.ContextFallback != nil {
		return false
	}
	clk := clock.Or(p.Clock)
	now := clk.Now()
	if back, probed := p.probedBack(now, tried); back || !probed {
		return false // one takes calls but not this request; or none will come back soon
	}
	end := now.Add(shortHold)
	if !deadline.IsZero() && deadline.Before(end) {
		end = deadline
	}
	for now.Before(end) {
		tick := make(chan struct{})
		next := now.Add(holdStep)
		if next.After(end) {
			next = end
		}
		t := clock.At(clk, next, func() { close(tick) })
		select {
		case <-tick:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		now = clk.Now()
		if back, _ := p.probedBack(now, tried); back {
			return true
		}
	}
	return false
}

// probedBack reports whether a member not in tried takes calls at now
// (back), and whether one that does not is being probed back.
func (p *Pool) probedBack(now time.Time, tried *memberSet) (back, probed bool) {
	for i, m := range p.Members {
		if tried.has(i) {
			continue
		}
		if m.Backend.Usable(now) {
			return true, true
		}
		if m.Backend.ProbeInterval > 0 && m.Backend.Breaker != nil && probedWhileShort(m.Backend.Breaker) {
			probed = true
		}
	}
	return false, probed
}

// probedWhileShort reports whether the gateway's recovery probes end br's
// trip while a pool of its backend is short: a trip passing probes may end,
// or a brownout's; not a quota trip (its Retry-After says when) nor an
// operator's.
func probedWhileShort(br breaker.Interface) bool {
	s := br.Snapshot()
	return s.Recoverable() || s.Brownout()
}
