// Package breaker is a per-backend circuit breaker (a "sin bin") with the
// semantics of the Azure API Management backend circuit breaker rule:
// Failures classified failures within a sliding Window open the breaker for
// Trip; a Retry-After from the backend may lengthen the trip; when the trip
// ends exactly one request (the probe) is let through, and its outcome either
// closes the breaker or opens it again.
//
// The breaker is two-step: Allow asks for permission before a call and
// returns a Done function that records the outcome once it is known, which
// may be long after the call started (the end of a stream).
package breaker

import (
	"fmt"

	"github.com/switchover-gw/switchover/clock"
	"sync"
	"time"
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
	// It lengthens a trip only when Settings.AcceptRetryAfter is set.
	RetryAfter time.Duration
	// Cause is a short description used in transition events, such as
	// "429" or "timeout". Optional.
	Cause string
	// Hold, for a Failure, opens the breaker at once, whatever the count,
	// for the longer of Trip and Hold (capped by MaxRetryAfter): for
	// failures that will not clear in a minute, such as an exhausted
	// billing quota. Zero means the failure is only counted.
	Hold time.Duration
}

// Done records the outcome of a call that Allow let through. It must be
// called exactly once; later calls are ignored.
type Done func(Outcome)

// Snapshot is a breaker's state at one instant.
type Snapshot struct {
	State State
	// Until is when an open breaker will let a probe through. Zero unless
	// State is Open.
	Until time.Time
	// Failures is the number of failures counted in the current window.
	Failures int
	// Probing is true while a half-open probe is in flight.
	Probing bool
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
	// breaker closes without a half-open probe. A quota 429 then benches a
	// backend until its quota returns, not for a fixed minute in which it
	// would have had quota again, and the returned quota is used at once
	// rather than one probe at a time. Failures without a Retry-After
	// (5xx, timeouts) still trip for Trip and need a probe. Takes
	// precedence over AcceptRetryAfter. Default false.
	FollowRetryAfter bool
	// MaxRetryAfter caps a Retry-After so that an absurd value (86400s)
	// cannot bench a backend for a day. Default 5m. Only used with
	// AcceptRetryAfter or FollowRetryAfter.
	MaxRetryAfter time.Duration
	// Clock is read for every decision. Nil means the wall clock.
	Clock Clock
	// OnTransition, if set, is called after every state change, outside the
	// breaker's lock, on the goroutine that caused the change. It must not
	// block for long.
	OnTransition func(Transition)
}

// Defaults for the zero Settings.
const (
	DefaultFailures      = 5
	DefaultWindow        = 30 * time.Second
	DefaultTrip          = 60 * time.Second
	DefaultMaxRetryAfter = 5 * time.Minute
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
	if s.Clock == nil {
		s.Clock = clock.Wall
	}
	return s
}

// Interface is what the routing engine needs of a breaker. *Breaker is the
// in-process implementation; a shared one (for example backed by Redis) can
// stand in for it.
type Interface interface {
	// Allow reports whether a call may go ahead. When ok, done must be
	// called exactly once with the call's outcome.
	Allow() (done Done, ok bool)
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
	// state, until, probing describe the state machine; until is only
	// meaningful while Open.
	state   State
	until   time.Time
	probing bool
	// noProbe is set while Open for a Retry-After the breaker follows: at
	// until it closes instead of probing.
	noProbe bool
	// gen changes on every transition, so outcomes of calls allowed in an
	// earlier state are not counted against the current one.
	gen uint64
	// fails is a ring of the times of the most recent failures, at most
	// Failures long; head is the index of the oldest.
	fails []time.Time
	head  int
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
func (b *Breaker) Allow() (Done, bool) {
	now := b.s.Clock.Now()
	var ev *Transition
	b.mu.Lock()
	switch b.state {
	case Open:
		if now.Before(b.until) {
			b.mu.Unlock()
			return nil, false
		}
		if b.noProbe {
			ev = b.setLocked(Closed, now, time.Time{}, "retry-after elapsed")
			break
		}
		ev = b.setLocked(HalfOpen, now, time.Time{}, "trip ended")
		b.probing = true
	case HalfOpen:
		if b.probing {
			b.mu.Unlock()
			return nil, false
		}
		b.probing = true
	}
	gen := b.gen
	b.mu.Unlock()
	b.emit(ev)

	var once sync.Once
	return func(o Outcome) {
		once.Do(func() { b.record(gen, o) })
	}, true
}

// Snapshot implements Interface.
func (b *Breaker) Snapshot() Snapshot {
	now := b.s.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{State: b.state, Probing: b.probing}
	if b.state == Open {
		s.Until = b.until
	}
	s.Failures = b.countLocked(now)
	return s
}

// Force implements Interface. Forcing Open with a zero until opens the
// breaker for Trip. Forcing HalfOpen is treated as Closed.
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
// without a transition event. An open state is restored with its Until;
// anything else restores as closed (the count of failures starts over).
func (b *Breaker) Restore(s Snapshot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	b.fails, b.head, b.probing, b.noProbe = b.fails[:0], 0, false, false
	if s.State == Open {
		b.state, b.until = Open, s.Until
		return
	}
	b.state, b.until = Closed, time.Time{}
}

func (b *Breaker) record(gen uint64, o Outcome) {
	now := b.s.Clock.Now()
	var ev *Transition
	b.mu.Lock()
	if gen != b.gen {
		// Allowed in an earlier state; its verdict is stale.
		b.mu.Unlock()
		return
	}
	switch b.state {
	case HalfOpen:
		b.probing = false
		switch o.Result {
		case Success:
			ev = b.setLocked(Closed, now, time.Time{}, "probe succeeded")
		case Failure:
			if o.Hold > 0 {
				ev = b.setLocked(Open, now, now.Add(max(b.s.Trip, min(o.Hold, b.s.MaxRetryAfter))), "probe failed, held open: "+o.Cause)
				break
			}
			ev = b.openLocked(now, o.RetryAfter, "probe failed: "+o.Cause)
		}
	case Closed:
		if o.Result == Failure && o.Hold > 0 {
			d := max(b.s.Trip, min(o.Hold, b.s.MaxRetryAfter))
			ev = b.setLocked(Open, now, now.Add(d), "held open: "+o.Cause)
			break
		}
		if o.Result == Failure {
			b.pushLocked(now)
			if len(b.fails) == b.s.Failures && now.Sub(b.fails[b.head]) <= b.s.Window {
				cause := fmt.Sprintf("%d failures in %s", b.s.Failures, b.s.Window)
				if o.Cause != "" {
					cause += ", last " + o.Cause
				}
				ev = b.openLocked(now, o.RetryAfter, cause)
			}
		}
	}
	b.mu.Unlock()
	b.emit(ev)
}

// openLocked opens the breaker at now for a failure with the given
// Retry-After. Requires b.mu held.
func (b *Breaker) openLocked(now time.Time, retryAfter time.Duration, cause string) *Transition {
	follow := b.s.FollowRetryAfter && retryAfter > 0
	ev := b.setLocked(Open, now, b.tripEnd(now, retryAfter), cause)
	b.noProbe = follow
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

// setLocked moves to a new state and returns the event to emit after the
// lock is released, or nil when nothing changed. Requires b.mu held.
func (b *Breaker) setLocked(to State, now, until time.Time, cause string) *Transition {
	from := b.state
	if from == to && to != Open {
		return nil
	}
	b.state = to
	b.until = until
	b.noProbe = false
	b.gen++
	if to != HalfOpen {
		b.probing = false
	}
	if to == Closed {
		b.fails = b.fails[:0]
		b.head = 0
	}
	return &Transition{Name: b.name, From: from, To: to, At: now, Until: until, Cause: cause}
}

func (b *Breaker) emit(ev *Transition) {
	if ev != nil && b.s.OnTransition != nil {
		b.s.OnTransition(*ev)
	}
}
