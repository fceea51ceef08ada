package breaker

import (
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// Clock tells the time and arms timers (a trip ends on time without
// traffic). The zero Settings use the wall clock.
type Clock = clock.Clock

// Settings configure a Breaker. The zero value is valid and gives the API
// Management defaults of the Azure OpenAI multi-region game day (5
// failures in 30s open for 60s), with trips that grow for a backend
// benched again and again and a slow start after a brownout (see
// Snapshot.Level, Snapshot.Partial and Snapshot.Share).
type Settings struct {
	// Failures is how many failures within Window open the breaker.
	// Default 5. 1 opens on the first failure.
	Failures int
	// Window is the sliding window in which Failures are counted.
	// Default 30s.
	Window time.Duration
	// Trip is how long the breaker stays open the first time it benches
	// the backend. Default 60s. Each further ejection in a row (see
	// Snapshot.Level) benches for Trip times the level, up to MaxTrip,
	// and each Trip the backend then stays closed forgives one level.
	Trip time.Duration
	// MaxTrip caps the trip of a backend benched again and again
	// (Envoy's max_ejection_time). Default 5m; a value below Trip counts
	// as Trip, so MaxTrip = Trip gives API Management's fixed trip.
	MaxTrip time.Duration
	// SlowStart is how long a backend that comes back from a partial trip
	// (a brownout) or from a repeated one (a flapping backend) takes to
	// get its whole share of traffic again: Snapshot.Share rises from a
	// tenth to 1 over it (Envoy's slow start), and while it does a single
	// failure benches the backend again, one level up, instead of
	// Failures within Window. Default 30s; negative: none (the backend
	// gets its whole share at once, and the Failures rule applies). A
	// longer ramp keeps a sick backend's cost low for longer, and keeps
	// a healthy one under-used for as long.
	SlowStart time.Duration
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
	// OnFailure, if set, is called for each call's failure as it is
	// recorded (a Partial Failure once, not again at the call's end),
	// outside the breaker's lock and after any transition it caused, with
	// the time it was recorded: for counting failures across replicas. It
	// must not block.
	OnFailure func(o Outcome, at time.Time)
}

// Defaults for the zero Settings.
const (
	DefaultFailures      = 5
	DefaultWindow        = 30 * time.Second
	DefaultTrip          = 60 * time.Second
	DefaultMaxRetryAfter = 5 * time.Minute
	DefaultProbeLease    = 30 * time.Second
	DefaultMaxTrip       = 5 * time.Minute
	DefaultSlowStart     = 30 * time.Second
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
	if s.MaxTrip <= 0 {
		s.MaxTrip = DefaultMaxTrip
	}
	s.MaxTrip = max(s.MaxTrip, s.Trip)
	if s.SlowStart == 0 {
		s.SlowStart = DefaultSlowStart
	}
	s.Clock = clock.Or(s.Clock)
	return s
}
