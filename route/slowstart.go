package route

import (
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// A member is held back from a selection, though its breaker lets calls
// through, while its backend is coming back carefully (its breaker's slow
// start after a partial or repeated trip: it takes only its Share of the
// calls offered to it) or is under suspicion (a call waited past its slow
// threshold and a health check is deciding whether the backend answers at
// all: new calls go elsewhere until it does). A held member is used all
// the same when no other member can take the call: holding back never
// refuses a request (Envoy's rule that ejection must not empty a pool).

// shareUnit is a whole call in rampTurns' fixed-point credit.
const shareUnit = 1_000_000

// rampTurns spreads a ramping backend's share of calls evenly: each call
// offered adds the share to a credit, and a whole credit is a call taken,
// so a share of 0.25 takes exactly every fourth call offered. It is safe
// for concurrent use; the zero value is ready.
type rampTurns struct {
	mu     sync.Mutex
	credit int64
}

// take reports whether the backend takes this call at share (0 to 1).
func (r *rampTurns) take(share float64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.credit += int64(share*shareUnit + 0.5)
	if r.credit < shareUnit {
		return false
	}
	r.credit -= shareUnit
	return true
}

// usableBreaker is a breaker that answers usable's question without a
// Snapshot (which reads the clock, takes the lock and counts the
// failures): *breaker.Breaker. Every request asks it of every member
// walked, so it is what keeps selection cheap in large pools.
type usableBreaker interface {
	Usable(now time.Time) (ok bool, share float64)
}

var _ usableBreaker = (*breaker.Breaker)(nil)

// usable reports whether the backend would take a call at now (not
// drained, its breaker ready) and the share of calls it takes (below 1
// during its breaker's slow start).
func (b *Backend) usable(now time.Time) (ok bool, share float64) {
	if b.Drained() {
		return false, 0
	}
	if b.Breaker == nil {
		return true, 1
	}
	if u, ok := b.Breaker.(usableBreaker); ok {
		return u.Usable(now)
	}
	s := b.Breaker.Snapshot()
	if !s.Ready(now) {
		return false, 0
	}
	if s.Share <= 0 || s.Share > 1 {
		return true, 1
	}
	return true, s.Share
}

// heldBack reports whether a usable backend should sit this call out if
// another member can take it: it is in its slow start and this is not its
// turn, or a health check of it is running.
func (b *Backend) heldBack(share float64) bool {
	if b.check.checking() {
		return true
	}
	return share < 1 && !b.turns.take(share)
}

// earlyRank orders the benched members the panic path may try when no
// member can take a call: first those whose backend's own Retry-After has
// passed (soonest first), then those benched for a brownout, whose trip is
// partial, then those benched again that passed their last health check
// but need more in a row (in each, the one whose trip ends soonest first).
// ok is false for a member that may not be tried early.
func earlyRank(s breaker.Snapshot, now time.Time) (tier int, at time.Time, ok bool) {
	switch {
	case s.State != breaker.Open:
		return 0, time.Time{}, false
	case !s.RetryAt.IsZero() && !now.Before(s.RetryAt):
		return 0, s.RetryAt, true
	case s.Partial:
		return 1, s.Until, true
	case s.Passes > 0 && s.PassesNeeded > 0:
		return 2, s.Until, true
	}
	return 0, time.Time{}, false
}
