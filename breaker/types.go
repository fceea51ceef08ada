package breaker

import (
	"fmt"
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
	// For the failure that opens the breaker it sets Snapshot.RetryAt (when
	// AllowEarly may let a probe through); it lengthens the trip with
	// Settings.AcceptRetryAfter and sets it with Settings.FollowRetryAfter.
	// Capped by Settings.MaxRetryAfter.
	RetryAfter time.Duration
	// Kind classifies a Failure (set by the routing engine); a
	// transition the failure causes carries it. KindUnknown when unset.
	Kind Kind
	// Cause is a short description used in transition events, such as
	// "429" or "timeout", for people: code decides on Kind. Optional.
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
	// Class is the Class of the failure that opened the breaker, while it
	// is Open or HalfOpen: a probe of that class decides (a recovery probe
	// of a backend whose streams stalled should be a stream). Empty when
	// Closed, for a Force or a Hold.
	Class string
	// Kind is the kind of the transition that opened the breaker (see
	// Transition.Kind), while it is Open or HalfOpen; KindUnknown when
	// Closed.
	Kind Kind
	// NoProbe is true for an open breaker whose trip ends by closing
	// without a probe (a followed Retry-After); false unless State is
	// Open.
	NoProbe bool
	// Failures is the number of failures counted in the current window.
	Failures int
	// Since is when the breaker entered State (zero before its first
	// transition).
	Since time.Time
	// Level counts the backend's ejections in a row (Envoy's ejection
	// multiplier): each time it is benched for its health (a failure, a
	// failed health check; not for quota, nor by an operator) after it
	// had come back, the level rises by one and the trip lasts Trip times
	// the level (up to MaxTrip). A failed half-open probe or recovery
	// check reopens at the same level: the backend had not come back.
	// Each Trip the breaker then stays closed forgives one level. Zero for
	// a backend never benched, or forgiven.
	Level int
	// Partial is true, while Open or HalfOpen, when the failures that
	// opened the breaker came with answers among them (at least one call
	// in five since the first of them succeeded: a brownout), or the
	// backend failed again during the slow start after such a trip. A
	// passing health check says little of a backend that fails a share
	// of its calls, so health checks do not end a partial trip
	// (PassesNeeded is 0): it runs its course, then a half-open probe and
	// the slow start decide. When no other member can take a call, a
	// partial trip lets one through as its probe (AllowEarly).
	Partial bool
	// Passes is the number of passing health checks in a row (Checked)
	// during the trip in force. PassesNeeded is how many end it early:
	// the Level for an open breaker (one for a first trip, more for a
	// backend found flapping), one for an idle half-open breaker, and 0
	// when health checks cannot end it (a partial trip, a quota trip, a
	// Hold, an operator's Force) or the breaker is closed.
	Passes, PassesNeeded int
	// Share is the share of its usual traffic the backend should take
	// now: below 1 during the slow start after a partial or repeated trip
	// (rising from MinShare to 1 over Settings.SlowStart), else 1. The
	// routing engine sends such a member only that share of the calls it
	// would get, and all of them when no other member can take them.
	// Zero, in a Snapshot not taken from a Breaker, counts as 1.
	Share float64
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
	// Kind is what caused the change: the kind of the failure that
	// opened the breaker (or reopened it from half-open), or who decided
	// it (KindTripEnded, KindRetryAfter, KindProbe, KindHealthProbe,
	// KindManual, or the kind given to Force or Adopt).
	Kind Kind
	// Cause describes the change to people, such as "5 failures in 30s,
	// last 429" or "probe succeeded". Nothing parses it: decide on Kind.
	Cause string
	// Probe is true when a half-open probe's verdict made the change
	// (closed on its success, reopened on its failure).
	Probe bool
	// RetryAt, Throttled and Class describe an open state as its
	// Snapshot would, taken with the transition under the breaker's lock
	// (zero unless To is Open): when the backend's Retry-After ends,
	// whether a quota refusal opened it, and the class of call that
	// failed.
	RetryAt   time.Time
	Throttled bool
	Class     string
	// NoProbe is true, for To == Open, when the trip ends by closing
	// without a probe: the breaker follows the backend's Retry-After and
	// the trip is exactly that.
	NoProbe bool
	// Level and Partial describe an open state as its Snapshot would
	// (zero unless To is Open), so that another replica adopting the trip
	// judges the backend's return as this one does.
	Level   int
	Partial bool
	// Seq numbers the breaker's transitions: strictly increasing per
	// breaker, assigned under its lock when the transition happens. Since
	// transitions are delivered outside the lock, an observer may get them
	// out of order; one that keeps the breaker's state must drop a
	// transition whose Seq is not greater than the last it applied.
	Seq uint64
	// Adopted is true for a transition made by Adopt: a decision taken
	// elsewhere (another replica of the gateway) and applied here, which
	// the fleet's code must not publish again.
	Adopted bool
}

// Recoverable reports whether s is an open breaker whose trip passing
// health checks may end: not a quota trip (its Retry-After says when),
// a brownout's or an operator's (PassesNeeded is 0 for those).
func (s Snapshot) Recoverable() bool {
	return s.State == Open && s.PassesNeeded > 0
}

// Brownout reports whether s is an open breaker benched for a brownout
// (its backend still answered most calls: a partial trip), which the
// gateway's recovery probes leave to run its course unless a pool of the
// backend is short: one passing probe says little of a region failing a
// third of its calls, but such a region is better than none.
func (s Snapshot) Brownout() bool {
	return s.State == Open && s.Partial && !s.Throttled && !s.NoProbe && s.Kind != KindManual
}
