// Package breaker is a per-backend circuit breaker (a "sin bin") with the
// semantics of the Azure API Management backend circuit breaker rule:
// Failures classified failures within a sliding Window open the breaker for
// Trip; a Retry-After from the backend may lengthen the trip; when the trip
// ends exactly one request (the probe) is let through, and its outcome either
// closes the breaker or opens it again.
//
// On top of that rule:
//
//   - A trip ends on time without traffic: opening arms a timer on the
//     Settings.Clock, and when it fires the breaker moves to half-open (or
//     closes, after a followed Retry-After) and emits the transition, so
//     an idle backend is not shown benched long after its trip, and its
//     failback is noticed.
//   - With FollowRetryAfter, a Throttled failure (a quota 429) benches the
//     backend at once for exactly its Retry-After, then closes without a
//     probe.
//   - A probe is decided by its first Partial outcome (a stream's first
//     event), not by the end of a stream that may last minutes, and it
//     holds its slot for at most ProbeLease.
//   - A probe of another Class than the failure that opened the breaker
//     (a plain call while streams stall) cannot close it.
//   - AllowEarly lets one probe through an open breaker once the backend's
//     own Retry-After has passed, through a partial trip, or for a
//     backend that passed its last health check but needs more in a row,
//     for a pool whose every member is benched.
//   - Envoy's outlier rules (eject.go): a backend benched again after it
//     came back is benched longer each time (Snapshot.Level) and needs
//     more passing health checks (Checked) to come back early; a trip
//     opened while the backend still answered a share of its calls (a
//     brownout, Snapshot.Partial) is not ended by a passing check; and
//     after either the backend's share of traffic ramps up
//     (Snapshot.Share) while a single failure sends it back.
//
// The breaker is two-step: Allow asks for permission before a call and
// returns a Done function that records the outcome once it is known, which
// may be long after the call started (the end of a stream).
//
// Transitions carry a sequence number (Transition.Seq). They are emitted
// outside the breaker's lock, so two that happen close together may reach
// an observer out of order: an observer that keeps the state drops a
// transition whose Seq is not greater than the last it applied.
package breaker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// Interface is what the routing engine needs of a breaker. *Breaker is the
// in-process implementation; a shared one (for example backed by Redis) can
// stand in for it. Implementations must be safe for concurrent use.
type Interface interface {
	// Allow reports whether a call may go ahead. When ok, done must be
	// called with the call's outcome (see Done).
	Allow() (done Done, ok bool)
	// AllowEarly lets one call through an open breaker whose RetryAt is
	// set and has passed, whose trip is partial (Snapshot.Partial: the
	// backend still answered most calls), or whose backend passed its
	// last health check but not yet as many in a row as its level needs
	// (Snapshot.Passes > 0), although its Until has not: the call is a
	// half-open probe (the breaker moves to HalfOpen, with a transition).
	// It reports false for a closed breaker, a half-open one with its
	// probe in flight, and an open one that is none of those; an open
	// breaker whose Until has passed, or a half-open one with no probe,
	// lets the call through as Allow does.
	// The routing engine calls it only when no member of a pool is usable
	// (Envoy's panic threshold): the bench must not empty a pool for a
	// fixed minute once a backend's own Retry-After has passed.
	AllowEarly() (done Done, ok bool)
	// Snapshot returns the current state without changing it.
	Snapshot() Snapshot
	// Force puts the breaker into Open (until the given time) or Closed,
	// for operators and health checks. kind and cause are recorded in the
	// transition.
	Force(to State, until time.Time, kind Kind, cause string)
	// Checked records a health check's verdict on a benched backend and
	// reports whether it closed the breaker (see Breaker.Checked).
	Checked(passed bool, cause string) bool
}

var _ Interface = (*Breaker)(nil)

// Breaker is an in-process circuit breaker. It is safe for concurrent use.
type Breaker struct {
	name string
	s    Settings

	mu sync.Mutex
	// state, until describe the state machine; until is only meaningful
	// while Open. since is when state began.
	state State
	until time.Time
	since time.Time
	// level is the ejection level (Snapshot.Level) of the trip in force,
	// or of the last one while closed (levelAt forgives it with time).
	level int
	// partial is whether the trip in force, or the last one, was partial
	// (Snapshot.Partial); eject whether it benched the backend for its
	// health (not for quota, a Hold or an operator).
	partial, eject bool
	// passes counts passing health checks in a row during the trip.
	passes int
	// rampUntil ends the slow start after a trip; zero when none.
	rampUntil time.Time
	// probe is the call holding the half-open probe's slot, nil when none.
	probe *ticket
	// noProbe is set while Open for a Retry-After the breaker follows: at
	// until it closes instead of probing.
	noProbe bool
	// retryAt and throttled describe the failure that opened the breaker
	// (Snapshot.RetryAt, Snapshot.Throttled); zero unless Open.
	retryAt   time.Time
	throttled bool
	// class is the Class of the failure that opened the breaker; it stays
	// through HalfOpen and is cleared on closing.
	class string
	// kind is the Kind of the transition that opened the breaker; it stays
	// through HalfOpen and is cleared on closing.
	kind Kind
	// gen changes on every transition, so outcomes of calls allowed in an
	// earlier state are not counted against the current one.
	gen uint64
	// seq is the Seq of the last transition.
	seq uint64
	// trip ends the open period of generation gen; lease ends probe's
	// lease. Nil when not armed.
	trip, lease clock.Timer
	// retired stops timers and transition events (Retire).
	retired bool
	// fails is a ring of the times of the most recent failures, at most
	// Failures long; head is the index of the oldest. succ counts the
	// successes recorded while closed, and failSucc[i] what it was when
	// fails[i] was recorded.
	fails    []time.Time
	failSucc []uint64
	head     int
	succ     uint64
	// plain is set while the breaker is closed with no slow start ahead
	// (see Usable): what a pool asks of every member on every request is
	// then answered without the lock. Written under mu (markLocked).
	plain atomic.Bool
}

// ticket is one call Allow let through. Its fields are guarded by the
// breaker's mu.
type ticket struct {
	// gen is the generation the call's outcome is recorded against.
	gen uint64
	// partial: a Partial outcome was recorded; final: the outcome is in.
	partial, final bool
}

// New returns a closed breaker. name identifies it in transitions.
func New(name string, s Settings) *Breaker {
	s = s.withDefaults()
	b := &Breaker{name: name, s: s, fails: make([]time.Time, 0, s.Failures), failSucc: make([]uint64, s.Failures)}
	b.plain.Store(true)
	return b
}

// Usable reports whether a call at now would be let through (as
// Snapshot.Ready) and the share of calls the backend takes (as
// Snapshot.Share), without reading the clock and, while the breaker is
// closed with no slow start, without taking its lock: a pool asks it of
// each member on every request, so its cost is per member. Allow remains
// the decision; a breaker that trips between Usable and Allow refuses
// there.
func (b *Breaker) Usable(now time.Time) (ok bool, share float64) {
	if b.plain.Load() {
		return true, 1
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Open:
		if now.Before(b.until) {
			return false, 0
		}
	case HalfOpen:
		if b.probe != nil {
			return false, 0
		}
	case Closed:
		if !now.Before(b.rampUntil) {
			b.plain.Store(true) // the slow start is over
			return true, 1
		}
	}
	return true, b.shareLocked(now)
}

// markLocked sets plain from the state. Requires b.mu held; called after
// every change of state or of the slow start.
func (b *Breaker) markLocked() {
	b.plain.Store(b.state == Closed && b.rampUntil.IsZero())
}

// Name returns the name given to New.
func (b *Breaker) Name() string { return b.name }

// Settings returns the settings in use, with defaults filled in.
func (b *Breaker) Settings() Settings { return b.s }

// Allow implements Interface.
func (b *Breaker) Allow() (Done, bool) { return b.allow(false) }

// AllowEarly implements Interface. An open breaker whose Until has passed
// too lets the call through as Allow does.
func (b *Breaker) AllowEarly() (Done, bool) { return b.allow(true) }

func (b *Breaker) allow(early bool) (Done, bool) {
	now := b.s.Clock.Now()
	c := &ticket{}
	var ev *Transition
	b.mu.Lock()
	switch b.state {
	case Closed:
		if early {
			b.mu.Unlock()
			return nil, false
		}
	case Open:
		switch {
		case !now.Before(b.until):
			// The trip's timer has not run yet: end the trip here.
			ev = b.endTripLocked(now)
			if b.state == HalfOpen {
				b.probeLocked(c)
			}
		case early && !b.retryAt.IsZero() && !now.Before(b.retryAt):
			ev = b.setLocked(HalfOpen, now, time.Time{}, KindRetryAfter, "backend's retry-after elapsed, early probe")
			b.probeLocked(c)
		case early && b.partial:
			// A backend that still answers most calls is better than none.
			ev = b.setLocked(HalfOpen, now, time.Time{}, KindTripEnded, "no other member can take the call: a probe through a partial trip")
			b.probeLocked(c)
		case early && b.passes > 0 && b.passesNeededLocked() > 0:
			// So is one that answers its health checks but has not yet
			// passed as many in a row as its level asks.
			ev = b.setLocked(HalfOpen, now, time.Time{}, KindTripEnded, "no other member can take the call: a probe of a backend that passed its last health check")
			b.probeLocked(c)
		default:
			b.mu.Unlock()
			return nil, false
		}
	case HalfOpen:
		if b.probe != nil {
			b.mu.Unlock()
			return nil, false
		}
		b.probeLocked(c)
	}
	c.gen = b.gen
	b.mu.Unlock()
	b.emit(ev)
	return func(o Outcome) { b.record(c, o) }, true
}

// Snapshot implements Interface.
func (b *Breaker) Snapshot() Snapshot {
	now := b.s.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{State: b.state, Probing: b.probe != nil, Seq: b.seq, Since: b.since}
	if b.state == Open {
		s.Until, s.RetryAt, s.Throttled, s.NoProbe = b.until, b.retryAt, b.throttled, b.noProbe
	}
	if b.state != Closed {
		s.Class, s.Kind, s.Partial, s.Passes = b.class, b.kind, b.partial, b.passes
	}
	s.Failures = b.countLocked(now)
	s.Level, s.PassesNeeded, s.Share = b.levelAt(now), b.passesNeededLocked(), b.shareLocked(now)
	return s
}

// Force implements Interface. Forcing Open with a zero until opens the
// breaker for the trip of its level. Forcing HalfOpen is treated as
// Closed. A forced open state has no RetryAt and no Class, and is not
// partial. A kind of failure (other than for quota) or KindHealthProbe
// benches the backend for its health: from closed, one level up (see
// Snapshot.Level). Forcing Closed as KindManual forgets the level, and
// the backend gets its whole share at once; other kinds close as a probe
// would, with a slow start when the trip calls for one.
func (b *Breaker) Force(to State, until time.Time, kind Kind, cause string) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	var ev *Transition
	if to == Open {
		level, eject := b.levelAt(now), ejectKind(kind) && kind != KindUnknown
		switch {
		case eject && b.state == Closed:
			level++ // it had come back
		case eject:
			level = max(level, 1)
		}
		if until.IsZero() {
			until = now.Add(b.s.Trip)
			if eject {
				until = now.Add(b.tripFor(level))
			}
		}
		ev = b.setLocked(Open, now, until, kind, cause)
		b.level, b.partial, b.eject = level, false, eject
		b.describeLocked(ev)
	} else {
		ev = b.closeLocked(now, kind, cause)
	}
	b.mu.Unlock()
	b.emit(ev)
}

// Restore sets the breaker to a state taken from another breaker (a
// configuration reload replacing a backend whose identity did not change),
// without a transition event. An open state is restored with its Until,
// RetryAt, Throttled, Level and Partial, and its trip ends on time as any
// other; it closes without a probe when this breaker follows Retry-After
// and the trip is the backend's Retry-After (RetryAt not before Until).
// Anything else restores as closed (the count of failures starts over),
// keeping the Level and a slow start in progress. The restore takes a Seq
// above both breakers' last, so that observers order this breaker's
// transitions after the old one's; Retire the old breaker.
func (b *Breaker) Restore(s Snapshot) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.markLocked()
	b.stopTimersLocked()
	b.gen++
	b.seq = max(b.seq, s.Seq) + 1
	b.fails, b.head, b.probe, b.class, b.kind = b.fails[:0], 0, nil, "", KindUnknown
	b.noProbe, b.retryAt, b.throttled = false, time.Time{}, false
	b.level, b.partial, b.eject, b.passes, b.rampUntil, b.since = s.Level, s.Partial, s.Level > 0, 0, time.Time{}, now
	if s.State == Open {
		b.state, b.until, b.kind = Open, s.Until, s.Kind
		b.retryAt, b.throttled = s.RetryAt, s.Throttled
		b.noProbe = b.s.FollowRetryAfter && !s.RetryAt.IsZero() && !s.RetryAt.Before(s.Until)
		b.armTripLocked(now)
		return
	}
	b.state, b.until = Closed, time.Time{}
	if s.Share > 0 && s.Share < 1 && !s.Since.IsZero() && b.s.SlowStart > 0 {
		b.since, b.rampUntil = s.Since, s.Since.Add(b.s.SlowStart)
	}
}

// Adopt applies a state decided elsewhere (another replica's breaker for
// the same backend), with a transition marked Adopted: Open with s's
// Until, RetryAt, Throttled, Class, Level and Partial (its trip then ends
// on time as any other, closing without a probe when this breaker follows
// Retry-After and the trip is the backend's Retry-After; a Level above 0
// makes it a health ejection, whose end may bring a slow start), or
// Closed (the count of failures starts over; a slow start when the trip
// calls for one). Other states are ignored. Adopting an open state into
// an open breaker whose trip ends later changes nothing; it never shortens
// a trip. kind is the kind of the decision where it was taken.
func (b *Breaker) Adopt(s Snapshot, kind Kind, cause string) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	var ev *Transition
	switch s.State {
	case Open:
		if b.state == Open && !b.until.Before(s.Until) || !now.Before(s.Until) {
			b.mu.Unlock()
			return
		}
		ev = b.setLocked(Open, now, s.Until, kind, cause)
		b.retryAt, b.throttled, b.class = s.RetryAt, s.Throttled, s.Class
		b.noProbe = b.s.FollowRetryAfter && !s.RetryAt.IsZero() && !s.RetryAt.Before(s.Until)
		b.level, b.partial, b.eject = s.Level, s.Partial, s.Level > 0
		b.describeLocked(ev)
	case Closed:
		ev = b.closeLocked(now, kind, cause)
	}
	b.mu.Unlock()
	if ev != nil {
		ev.Adopted = true
	}
	b.emit(ev)
}

// Retire stops the breaker's timers and its transition events, for a
// breaker another has replaced (see Restore): calls still in flight may
// record their outcomes, but its state no longer changes on its own and
// nothing more reaches OnTransition. It cannot be undone.
func (b *Breaker) Retire() {
	b.mu.Lock()
	b.retired = true
	b.stopTimersLocked()
	b.mu.Unlock()
}

func (b *Breaker) record(c *ticket, o Outcome) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	failed := o.Result == Failure && !c.final && !(o.Partial && c.partial)
	ev := b.recordLocked(c, o, now)
	b.mu.Unlock()
	b.emit(ev)
	if failed && b.s.OnFailure != nil {
		b.s.OnFailure(o, now)
	}
}

// recordLocked records outcome o of call c. Requires b.mu held.
func (b *Breaker) recordLocked(c *ticket, o Outcome, now time.Time) *Transition {
	if c.final || (o.Partial && c.partial) {
		return nil
	}
	if o.Partial {
		c.partial = true
		// A Partial Failure stands for the final outcome.
		c.final = o.Result == Failure
	} else {
		c.final = true
	}
	if c.gen != b.gen {
		// Allowed in an earlier state; its verdict is stale.
		return nil
	}
	switch b.state {
	case HalfOpen:
		if b.probe != c {
			// A probe that lost its lease or was released.
			return nil
		}
		switch o.Result {
		case Success:
			if b.class != "" && o.Class != b.class {
				// Says nothing about the calls that failed.
				b.releaseProbeLocked()
				return nil
			}
			if !o.Partial {
				return probed(b.closeLocked(now, KindProbe, "probe succeeded"))
			}
			ev := b.closeLocked(now, KindProbe, "probe answering")
			c.gen = b.gen // its end counts against the closed breaker
			return probed(ev)
		case Failure:
			if o.Hold > 0 {
				return probed(b.openLocked(now, o, "probe failed, held open: "+o.Cause))
			}
			return probed(b.openLocked(now, o, "probe failed: "+o.Cause))
		default:
			if !o.Partial {
				b.releaseProbeLocked()
			}
		}
	case Closed:
		if o.Result == Success && !o.Partial {
			b.succ++
		}
		if o.Result != Failure {
			return nil
		}
		switch {
		case o.Hold > 0:
			return b.openLocked(now, o, "held open: "+o.Cause)
		case o.Throttled && b.s.FollowRetryAfter && o.RetryAfter > 0:
			cause := fmt.Sprintf("throttled for %s", min(o.RetryAfter, b.s.MaxRetryAfter))
			if o.Cause != "" {
				cause += ": " + o.Cause
			}
			return b.openLocked(now, o, cause)
		case b.rampingLocked(now) && b.ejects(o):
			// Back from a partial or repeated trip: one failure is enough.
			return b.openLocked(now, o, "failed during its slow start: "+o.Cause)
		}
		b.pushLocked(now)
		if len(b.fails) == b.s.Failures && now.Sub(b.fails[b.head]) <= b.s.Window {
			cause := fmt.Sprintf("%d failures in %s", b.s.Failures, b.s.Window)
			if o.Cause != "" {
				cause += ", last " + o.Cause
			}
			return b.openLocked(now, o, cause)
		}
	}
	return nil
}

// openLocked opens the breaker at now for the failure o: for the longer of
// Trip and its Hold, or per its Retry-After, or for the trip of its
// ejection level. Requires b.mu held.
func (b *Breaker) openLocked(now time.Time, o Outcome, cause string) *Transition {
	level, partial, eject := b.ejectionLocked(now, o)
	if o.Hold > 0 {
		ev := b.setLocked(Open, now, now.Add(max(b.s.Trip, min(o.Hold, b.s.MaxRetryAfter))), o.Kind, cause)
		b.throttled, b.class = o.Throttled, o.Class
		b.level, b.partial, b.eject = level, partial, eject
		return b.describeLocked(ev)
	}
	trip := b.s.Trip
	if eject {
		trip = b.tripFor(level)
	}
	ev := b.setLocked(Open, now, b.tripEnd(now, trip, o.RetryAfter), o.Kind, cause)
	b.noProbe = b.s.FollowRetryAfter && o.RetryAfter > 0
	if o.RetryAfter > 0 {
		b.retryAt = now.Add(min(o.RetryAfter, b.s.MaxRetryAfter))
	}
	b.throttled, b.class = o.Throttled, o.Class
	b.level, b.partial, b.eject = level, partial, eject
	return b.describeLocked(ev)
}

// describeLocked completes ev, a transition to Open, with what describes
// the open state (set after setLocked), so that an observer needs no
// Snapshot that may already be newer. Requires b.mu held.
func (b *Breaker) describeLocked(ev *Transition) *Transition {
	if ev != nil && ev.To == Open {
		ev.RetryAt, ev.Throttled, ev.Class, ev.NoProbe = b.retryAt, b.throttled, b.class, b.noProbe
		ev.Level, ev.Partial = b.level, b.partial
	}
	return ev
}

// probed marks ev, if any, as a half-open probe's verdict.
func probed(ev *Transition) *Transition {
	if ev != nil {
		ev.Probe = true
	}
	return ev
}

// tripEnd is when a trip of length trip that starts at now ends, given
// the failure's Retry-After.
func (b *Breaker) tripEnd(now time.Time, trip, retryAfter time.Duration) time.Time {
	if b.s.FollowRetryAfter && retryAfter > 0 {
		return now.Add(min(retryAfter, b.s.MaxRetryAfter))
	}
	d := trip
	if b.s.AcceptRetryAfter && retryAfter > d {
		d = min(retryAfter, b.s.MaxRetryAfter)
		d = max(d, trip)
	}
	return now.Add(d)
}

// endTripLocked ends the open period at now: closed after a followed
// Retry-After, else half-open with no probe. Requires b.mu held and the
// breaker Open.
func (b *Breaker) endTripLocked(now time.Time) *Transition {
	if b.noProbe {
		return b.closeLocked(now, KindRetryAfter, "retry-after elapsed")
	}
	return b.setLocked(HalfOpen, now, time.Time{}, KindTripEnded, "trip ended")
}

// tripEnded runs on the clock's timer at the end of the open period of
// generation gen.
func (b *Breaker) tripEnded(gen uint64) {
	now := b.s.Clock.Now()
	var ev *Transition
	b.mu.Lock()
	switch {
	case b.state != Open || b.gen != gen:
		// The period ended otherwise (Allow, a probe, Force).
	case now.Before(b.until):
		b.armTripLocked(now) // a clock whose timer ran early
	default:
		ev = b.endTripLocked(now)
	}
	b.mu.Unlock()
	b.emit(ev)
}

// armTripLocked arms the timer that ends the current open period. Requires
// b.mu held and the breaker Open.
func (b *Breaker) armTripLocked(now time.Time) {
	if b.trip != nil {
		b.trip.Stop()
	}
	b.trip = nil
	if b.retired {
		return
	}
	gen := b.gen
	b.trip = b.s.Clock.AfterFunc(b.until.Sub(now), func() { b.tripEnded(gen) })
}

// probeLocked makes c the half-open probe and starts its lease. Requires
// b.mu held and the breaker HalfOpen.
func (b *Breaker) probeLocked(c *ticket) {
	b.probe = c
	if b.lease != nil {
		b.lease.Stop()
	}
	b.lease = nil
	if b.retired {
		return
	}
	b.lease = b.s.Clock.AfterFunc(b.s.ProbeLease, func() { b.leaseEnded(c) })
}

// leaseEnded runs on the clock's timer when probe c's lease ends.
func (b *Breaker) leaseEnded(c *ticket) {
	b.mu.Lock()
	if b.state == HalfOpen && b.probe == c {
		b.probe, b.lease = nil, nil
	}
	b.mu.Unlock()
}

// releaseProbeLocked frees the probe's slot without a verdict. Requires
// b.mu held.
func (b *Breaker) releaseProbeLocked() {
	b.probe = nil
	if b.lease != nil {
		b.lease.Stop()
		b.lease = nil
	}
}

// stopTimersLocked stops the trip and lease timers. Requires b.mu held.
func (b *Breaker) stopTimersLocked() {
	for _, t := range []*clock.Timer{&b.trip, &b.lease} {
		if *t != nil {
			(*t).Stop()
			*t = nil
		}
	}
}

// pushLocked records a failure at now. Requires b.mu held.
func (b *Breaker) pushLocked(now time.Time) {
	if len(b.fails) < b.s.Failures {
		b.failSucc[len(b.fails)] = b.succ
		b.fails = append(b.fails, now)
		return
	}
	b.fails[b.head], b.failSucc[b.head] = now, b.succ
	b.head = (b.head + 1) % len(b.fails)
}

// countLocked counts failures within the window ending at now. Requires b.mu
// held.
func (b *Breaker) countLocked(now time.Time) int {
	n := 0
	for _, t := range b.fails {
		if now.Sub(t) <= b.s.Window {
			n++
		}
	}
	return n
}

// setLocked moves to a new state, numbers the transition, stops the pending
// timers (and arms the trip's, for Open), and returns the event to emit
// after the lock is released, or nil when nothing changed or the breaker is
// retired. The caller sets what describes an open state (noProbe, retryAt,
// throttled, class) after it. Requires b.mu held.
func (b *Breaker) setLocked(to State, now, until time.Time, kind Kind, cause string) *Transition {
	from := b.state
	if from == to && to != Open {
		return nil
	}
	b.stopTimersLocked()
	b.state, b.until, b.probe, b.since = to, until, nil, now
	b.noProbe, b.retryAt, b.throttled = false, time.Time{}, false
	b.passes, b.rampUntil = 0, time.Time{}
	b.markLocked()
	b.gen++
	b.seq++
	switch to {
	case Open:
		b.class, b.kind = "", kind
		b.armTripLocked(now)
	case Closed:
		b.class, b.kind = "", KindUnknown
		b.fails = b.fails[:0]
		b.head = 0
	}
	if b.retired {
		return nil
	}
	return &Transition{Name: b.name, From: from, To: to, At: now, Until: until, Kind: kind, Cause: cause, Seq: b.seq}
}

func (b *Breaker) emit(ev *Transition) {
	if ev != nil && b.s.OnTransition != nil {
		b.s.OnTransition(*ev)
	}
}
