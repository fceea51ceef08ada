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
//     own Retry-After has passed, for a pool whose every member is benched.
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
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// State is the state of a breaker.
type State uint8

const (
	// Closed lets every call through and counts failures.
	Closed State = iota
	// Open refuses calls until the trip ends.
	Open
	// HalfOpen lets one probe call through; its outcome decides the next state.
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Result says what happened to a call that Allow let through.
type Result uint8

const (
	// Success means the backend answered (any status that does not count as
	// a failure, including the caller's own 4xx errors).
	Success Result = iota
	// Failure means a classified failure: a counted status, a connection
	// error or a timeout.
	Failure
	// Ignore means the outcome says nothing about the backend, for example
	// the client went away. It releases a half-open probe without a verdict.
	Ignore
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignore:
		return "ignore"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Outcome is what a call reports through Done.
type Outcome struct {
	Result Result
	// RetryAfter is the backend's own Retry-After, zero when it sent none.
	// For the failure that opens the breaker it sets Snapshot.RetryAt (when
	// AllowEarly may let a probe through); it lengthens the trip with
	// Settings.AcceptRetryAfter and sets it with Settings.FollowRetryAfter.
	// Capped by Settings.MaxRetryAfter.
	RetryAfter time.Duration
	// Cause is a short description used in transition events, such as
	// "429" or "timeout". Optional.
	Cause string
	// Hold, for a Failure, opens the breaker at once, whatever the count,
	// for the longer of Trip and Hold (capped by MaxRetryAfter): for
	// failures that will not clear in a minute, such as an exhausted
	// billing quota. Zero means the failure is only counted. Hold takes
	// precedence over Throttled, and a held breaker has no RetryAt: the
	// backend has said asking again soon is no use.
	Hold time.Duration
	// Throttled, for a Failure, says the backend refused the call for
	// quota (HTTP 429) and RetryAfter says when it will take calls again.
	// With Settings.FollowRetryAfter and a RetryAfter above zero it opens
	// the breaker at once, whatever the count, for exactly RetryAfter
	// (capped by MaxRetryAfter), and when that ends the breaker closes
	// without a probe; Snapshot.Throttled is then true. Without
	// FollowRetryAfter, or without a RetryAfter, a Throttled failure is
	// counted like any other (API Management's rule). Default false:
	// failures that are not throttling (5xx, resets, timeouts) keep the
	// Failures-within-Window rule.
	Throttled bool
	// Partial says the call has started answering (a plain response's
	// headers, a stream's first event) but is not over. Done may be called
	// with a Partial outcome any number of times before its final
	// (non-Partial) call; only the first Partial counts, and Partial never
	// uses up the Done. A Partial Success of the half-open probe decides
	// the probe: the breaker closes at once, and the call's final outcome
	// is then recorded against the closed breaker (a stream that fails at
	// its end counts as a failure of the closed breaker). A Partial Failure
	// stands for the final outcome: it is recorded as the call's failure
	// and the later final call is ignored. A Partial Success or Ignore in
	// the Closed state does nothing. Default false: the outcome is final.
	Partial bool
	// Class is the kind of call, set by the routing engine: "stream" for
	// streamed calls, "" (the default) for plain ones. The breaker
	// remembers the Class of the failure that opened it; while half-open,
	// a Success of a probe of another Class (when that remembered Class is
	// not "") does not close the breaker but releases the probe without a
	// verdict, like Ignore, so that a probe of the right class decides: a
	// plain request's success says nothing about stalling streams. A
	// Failure of any Class reopens the breaker.
	Class string
}

// Done records the outcome of a call that Allow let through. It must be
// called exactly once with a final (non-Partial) outcome, and may be called
// before that with Partial outcomes; calls after the final one are ignored.
type Done func(Outcome)

// Snapshot is a breaker's state at one instant.
type Snapshot struct {
	State State
	// Until is when an open breaker will let a probe through. Zero unless
	// State is Open.
	Until time.Time
	// RetryAt is, for an open breaker, when the backend's own Retry-After
	// (that of the failure that opened it, Throttled or not, capped by
	// MaxRetryAfter) ends; zero when that failure carried none, for a Hold
	// or a Force, and unless State is Open. It may be before Until (a
	// Retry-After shorter than Trip, not followed); from RetryAt on,
	// AllowEarly lets a probe through.
	RetryAt time.Time
	// Throttled is true when the open state came from a Throttled failure.
	// False unless State is Open.
	Throttled bool
	// Failures is the number of failures counted in the current window.
	Failures int
	// Probing is true while a half-open probe is in flight and holds its
	// lease.
	Probing bool
	// Seq is the sequence number of the breaker's last transition (Force
	// and Restore included), zero before the first. Restore carries it
	// over, so that observers keep ordering the transitions of a breaker
	// that replaced another.
	Seq uint64
}

// Ready reports whether a call at now would be let through.
func (s Snapshot) Ready(now time.Time) bool {
	switch s.State {
	case Closed:
		return true
	case Open:
		return !now.Before(s.Until)
	default:
		return !s.Probing
	}
}

// ReadyAt is the earliest time a call would be let through: now when Ready,
// Until for an open breaker. A half-open breaker with its probe in flight
// reports now, since the probe decides within one call.
func (s Snapshot) ReadyAt(now time.Time) time.Time {
	if s.State == Open && now.Before(s.Until) {
		return s.Until
	}
	return now
}

// Transition is a change of state, delivered to Settings.OnTransition.
type Transition struct {
	Name string
	From State
	To   State
	At   time.Time
	// Until is when the breaker will let a probe through, for To == Open.
	Until time.Time
	// Cause describes the outcome that caused the change, such as
	// "5 failures in 30s, last 429" or "probe succeeded".
	Cause string
	// Seq numbers the breaker's transitions: strictly increasing per
	// breaker, assigned under its lock when the transition happens. Since
	// transitions are delivered outside the lock, an observer may get them
	// out of order; one that keeps the breaker's state must drop a
	// transition whose Seq is not greater than the last it applied.
	Seq uint64
}

// Clock tells the time and arms timers (a trip ends on time without
// traffic). The zero Settings use the wall clock.
type Clock = clock.Clock

// Settings configure a Breaker. The zero value is valid and gives the API
// Management defaults used in seed 000: 5 failures in 30s open for 60s.
type Settings struct {
	// Failures is how many failures within Window open the breaker.
	// Default 5. 1 opens on the first failure.
	Failures int
	// Window is the sliding window in which Failures are counted.
	// Default 30s.
	Window time.Duration
	// Trip is how long the breaker stays open. Default 60s.
	Trip time.Duration
	// AcceptRetryAfter keeps the breaker open for the longer of Trip and the
	// Retry-After of the failure that opened it. Default false.
	AcceptRetryAfter bool
	// FollowRetryAfter treats a Retry-After as the backend's own word on
	// when it will take calls again: the failure that opens the breaker
	// benches the backend for exactly its Retry-After (shorter or longer
	// than Trip, capped by MaxRetryAfter), and when that time is up the
	// breaker closes without a half-open probe. A Throttled failure with a
	// Retry-After opens the breaker at once, whatever the count. A quota
	// 429 then benches a backend until its quota returns, not for a fixed
	// minute in which it would have had quota again, and the returned
	// quota is used at once rather than one probe at a time. Failures
	// without a Retry-After (5xx, timeouts) still trip for Trip and need a
	// probe. Takes precedence over AcceptRetryAfter. Default false.
	FollowRetryAfter bool
	// MaxRetryAfter caps a Retry-After so that an absurd value (86400s)
	// cannot bench a backend for a day, and caps a Hold. Default 5m.
	MaxRetryAfter time.Duration
	// ProbeLease is how long a half-open probe holds its slot: a probe
	// whose verdict (a Partial or final outcome) has not come within
	// ProbeLease loses it, another call may probe (timed on Clock), and
	// the old call's later outcome is stale. It bounds how long one stuck
	// call can keep a backend half-open. Default 30s. Set it above the
	// slowest first byte a healthy backend gives, or a slow but good probe
	// is overtaken by the next.
	ProbeLease time.Duration
	// Clock is read for every decision and arms the timers that end trips
	// and probe leases. Nil means the wall clock. The breaker calls
	// AfterFunc and Timer.Stop while holding its lock: they must not call
	// back into the breaker synchronously (the wall clock and the test
	// fake run the function later, on another call).
	Clock Clock
	// OnTransition, if set, is called after every state change, outside the
	// breaker's lock, on the goroutine that caused the change (for a trip
	// that ends without traffic, the clock's timer goroutine). It must not
	// block for long. Two transitions may arrive out of order: see
	// Transition.Seq.
	OnTransition func(Transition)
}

// Defaults for the zero Settings.
const (
	DefaultFailures      = 5
	DefaultWindow        = 30 * time.Second
	DefaultTrip          = 60 * time.Second
	DefaultMaxRetryAfter = 5 * time.Minute
	DefaultProbeLease    = 30 * time.Second
)

func (s Settings) withDefaults() Settings {
	if s.Failures <= 0 {
		s.Failures = DefaultFailures
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	if s.Trip <= 0 {
		s.Trip = DefaultTrip
	}
	if s.MaxRetryAfter <= 0 {
		s.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if s.ProbeLease <= 0 {
		s.ProbeLease = DefaultProbeLease
	}
	s.Clock = clock.Or(s.Clock)
	return s
}

// Interface is what the routing engine needs of a breaker. *Breaker is the
// in-process implementation; a shared one (for example backed by Redis) can
// stand in for it. Implementations must be safe for concurrent use.
type Interface interface {
	// Allow reports whether a call may go ahead. When ok, done must be
	// called with the call's outcome (see Done).
	Allow() (done Done, ok bool)
	// AllowEarly lets one call through an open breaker whose RetryAt is
	// set and has passed, although its Until has not: the call is a
	// half-open probe (the breaker moves to HalfOpen, with a transition).
	// It reports false for a closed breaker, a half-open one with its
	// probe in flight, and an open one without a RetryAt or before it.
	// The routing engine calls it only when no member of a pool is usable
	// (Envoy's panic threshold): the bench must not empty a pool for a
	// fixed minute once a backend's own Retry-After has passed.
	AllowEarly() (done Done, ok bool)
	// Snapshot returns the current state without changing it.
	Snapshot() Snapshot
	// Force puts the breaker into Open (until the given time) or Closed,
	// for operators. cause is recorded in the transition.
	Force(to State, until time.Time, cause string)
}

var _ Interface = (*Breaker)(nil)

// Breaker is an in-process circuit breaker. It is safe for concurrent use.
type Breaker struct {
	name string
	s    Settings

	mu sync.Mutex
	// state, until describe the state machine; until is only meaningful
	// while Open.
	state State
	until time.Time
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
	// Failures long; head is the index of the oldest.
	fails []time.Time
	head  int
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
	return &Breaker{name: name, s: s, fails: make([]time.Time, 0, s.Failures)}
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
			ev = b.setLocked(HalfOpen, now, time.Time{}, "backend's retry-after elapsed, early probe")
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
	s := Snapshot{State: b.state, Probing: b.probe != nil, Seq: b.seq}
	if b.state == Open {
		s.Until, s.RetryAt, s.Throttled = b.until, b.retryAt, b.throttled
	}
	s.Failures = b.countLocked(now)
	return s
}

// Force implements Interface. Forcing Open with a zero until opens the
// breaker for Trip. Forcing HalfOpen is treated as Closed. A forced open
// state has no RetryAt and no Class.
func (b *Breaker) Force(to State, until time.Time, cause string) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	var ev *Transition
	if to == Open {
		if until.IsZero() {
			until = now.Add(b.s.Trip)
		}
		ev = b.setLocked(Open, now, until, cause)
	} else {
		ev = b.setLocked(Closed, now, time.Time{}, cause)
	}
	b.mu.Unlock()
	b.emit(ev)
}

// Restore sets the breaker to a state taken from another breaker (a
// configuration reload replacing a backend whose identity did not change),
// without a transition event. An open state is restored with its Until,
// RetryAt and Throttled, and its trip ends on time as any other; it closes
// without a probe when this breaker follows Retry-After and the trip is the
// backend's Retry-After (RetryAt not before Until). Anything else restores
// as closed (the count of failures starts over). The restore takes a Seq
// above both breakers' last, so that observers order this breaker's
// transitions after the old one's; Retire the old breaker.
func (b *Breaker) Restore(s Snapshot) {
	now := b.s.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopTimersLocked()
	b.gen++
	b.seq = max(b.seq, s.Seq) + 1
	b.fails, b.head, b.probe, b.class = b.fails[:0], 0, nil, ""
	b.noProbe, b.retryAt, b.throttled = false, time.Time{}, false
	if s.State == Open {
		b.state, b.until = Open, s.Until
		b.retryAt, b.throttled = s.RetryAt, s.Throttled
		b.noProbe = b.s.FollowRetryAfter && !s.RetryAt.IsZero() && !s.RetryAt.Before(s.Until)
		b.armTripLocked(now)
		return
	}
	b.state, b.until = Closed, time.Time{}
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
	ev := b.recordLocked(c, o, now)
	b.mu.Unlock()
	b.emit(ev)
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
				return b.setLocked(Closed, now, time.Time{}, "probe succeeded")
			}
			ev := b.setLocked(Closed, now, time.Time{}, "probe answering")
			c.gen = b.gen // its end counts against the closed breaker
			return ev
		case Failure:
			if o.Hold > 0 {
				return b.openLocked(now, o, "probe failed, held open: "+o.Cause)
			}
			return b.openLocked(now, o, "probe failed: "+o.Cause)
		default:
			if !o.Partial {
				b.releaseProbeLocked()
			}
		}
	case Closed:
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
// Trip and its Hold, or per its Retry-After. Requires b.mu held.
func (b *Breaker) openLocked(now time.Time, o Outcome, cause string) *Transition {
	if o.Hold > 0 {
		ev := b.setLocked(Open, now, now.Add(max(b.s.Trip, min(o.Hold, b.s.MaxRetryAfter))), cause)
		b.throttled, b.class = o.Throttled, o.Class
		return ev
	}
	ev := b.setLocked(Open, now, b.tripEnd(now, o.RetryAfter), cause)
	b.noProbe = b.s.FollowRetryAfter && o.RetryAfter > 0
	if o.RetryAfter > 0 {
		b.retryAt = now.Add(min(o.RetryAfter, b.s.MaxRetryAfter))
	}
	b.throttled, b.class = o.Throttled, o.Class
	return ev
}

// tripEnd is when a trip that starts at now ends.
func (b *Breaker) tripEnd(now time.Time, retryAfter time.Duration) time.Time {
	if b.s.FollowRetryAfter && retryAfter > 0 {
		return now.Add(min(retryAfter, b.s.MaxRetryAfter))
	}
	d := b.s.Trip
	if b.s.AcceptRetryAfter && retryAfter > d {
		d = min(retryAfter, b.s.MaxRetryAfter)
		d = max(d, b.s.Trip)
	}
	return now.Add(d)
}

// endTripLocked ends the open period at now: closed after a followed
// Retry-After, else half-open with no probe. Requires b.mu held and the
// breaker Open.
func (b *Breaker) endTripLocked(now time.Time) *Transition {
	if b.noProbe {
		return b.setLocked(Closed, now, time.Time{}, "retry-after elapsed")
	}
	return b.setLocked(HalfOpen, now, time.Time{}, "trip ended")
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
		b.fails = append(b.fails, now)
		return
	}
	b.fails[b.head] = now
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
func (b *Breaker) setLocked(to State, now, until time.Time, cause string) *Transition {
	from := b.state
	if from == to && to != Open {
		return nil
	}
	b.stopTimersLocked()
	b.state, b.until, b.probe = to, until, nil
	b.noProbe, b.retryAt, b.throttled = false, time.Time{}, false
	b.gen++
	b.seq++
	switch to {
	case Open:
		b.class = ""
		b.armTripLocked(now)
	case Closed:
		b.class = ""
		b.fails = b.fails[:0]
		b.head = 0
	}
	if b.retired {
		return nil
	}
	return &Transition{Name: b.name, From: from, To: to, At: now, Until: until, Cause: cause, Seq: b.seq}
}

func (b *Breaker) emit(ev *Transition) {
	if ev != nil && b.s.OnTransition != nil {
		b.s.OnTransition(*ev)
	}
}
