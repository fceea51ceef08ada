package breaker

import "time"

// Outlier rules on top of API Management's (after Envoy's outlier
// detection): a backend benched again after it came back is benched
// longer each time and needs more passing health checks to come back
// early; a backend benched while it still answered most of its calls (a
// brownout) is not put back by one passing check; and a backend that
// comes back from either takes its share of traffic back gradually, with
// a single failure sending it back. See Snapshot.Level, Snapshot.Partial
// and Snapshot.Share.

// MinShare is the share of its traffic a backend takes as its slow start
// begins (Envoy's min_weight_percent, 10%).
const MinShare = 0.1

// ejects reports whether failure o benches the backend for its health,
// as opposed to for quota (a 429, an exhausted account), for good (a
// Hold: a misconfiguration) or for as long as the backend itself said (a
// followed Retry-After): only the former raise the ejection level.
func (b *Breaker) ejects(o Outcome) bool {
	return o.Hold <= 0 && !o.Throttled && ejectKind(o.Kind) && !(b.s.FollowRetryAfter && o.RetryAfter > 0)
}

// ejectKind reports whether a trip of kind k benches the backend for its
// health: a failure other than for quota, or a failed health check.
func ejectKind(k Kind) bool {
	switch k {
	case KindThrottled, KindQuotaExhausted:
		return false
	case KindHealthProbe:
		return true
	}
	return k.Failure() || k == KindUnknown
}

// tripFor is how long a trip at level lasts: Trip times the level, at
// most MaxTrip.
func (b *Breaker) tripFor(level int) time.Duration {
	return min(b.s.Trip*time.Duration(max(level, 1)), b.s.MaxTrip)
}

// levelAt is the ejection level at now: while closed, less one level for
// each Trip since the breaker closed. Requires b.mu held.
func (b *Breaker) levelAt(now time.Time) int {
	if b.state != Closed || b.level == 0 {
		return b.level
	}
	return max(0, b.level-int(now.Sub(b.since)/b.s.Trip))
}

// ejectionLocked is the level and partiality of a trip that failure o
// starts at now, and whether it benches the backend for its health. From
// closed the level rises by one (the backend had come back); from open or
// half-open it stays (it had not). A trip is partial when the backend
// answered at least one call in five since the first failure counted, or
// it failed during the slow start after a partial trip. Requires b.mu
// held.
func (b *Breaker) ejectionLocked(now time.Time, o Outcome) (level int, partial, eject bool) {
	level = b.levelAt(now)
	if !b.ejects(o) {
		return level, false, false
	}
	if b.state != Closed {
		return max(level, 1), b.partial, true
	}
	return level + 1, b.partial && b.rampingLocked(now) || b.answeredAmongFailuresLocked(), true
}

// answeredAmongFailuresLocked reports whether at least one call in five
// since the oldest failure counted succeeded: s successes among n
// failures with 4s >= n. Requires b.mu held.
func (b *Breaker) answeredAmongFailuresLocked() bool {
	n := len(b.fails)
	if n == 0 {
		return false
	}
	oldest := 0
	if n == b.s.Failures {
		oldest = b.head
	}
	s := b.succ - b.failSucc[oldest]
	return s > 0 && 4*s >= uint64(n)
}

// rampingLocked reports whether the breaker is in the slow start after a
// trip at now. Requires b.mu held.
func (b *Breaker) rampingLocked(now time.Time) bool {
	return b.state == Closed && now.Before(b.rampUntil)
}

// shareLocked is Snapshot.Share at now. Requires b.mu held.
func (b *Breaker) shareLocked(now time.Time) float64 {
	if !b.rampingLocked(now) {
		return 1
	}
	f := float64(now.Sub(b.since)) / float64(b.s.SlowStart)
	return MinShare + (1-MinShare)*min(max(f, 0), 1)
}

// passesNeededLocked is Snapshot.PassesNeeded. Requires b.mu held.
func (b *Breaker) passesNeededLocked() int {
	switch b.state {
	case HalfOpen:
		return 1
	case Open:
		if b.noProbe || b.throttled || b.partial || b.kind == KindManual {
			return 0
		}
		return max(b.level, 1)
	}
	return 0
}

// closeLocked closes the breaker at now: with a slow start when the trip
// was a health ejection that was partial or repeated, and forgetting the
// level when an operator decided. Requires b.mu held.
func (b *Breaker) closeLocked(now time.Time, kind Kind, cause string) *Transition {
	if b.state == Closed {
		return nil
	}
	ramp := b.eject && (b.level >= 2 || b.partial) && b.s.SlowStart > 0 && kind != KindManual
	if kind == KindManual {
		b.level = 0
	}
	ev := b.setLocked(Closed, now, time.Time{}, kind, cause)
	if ramp {
		b.rampUntil = now.Add(b.s.SlowStart)
		b.markLocked()
	}
	return ev
}

// Checked records the verdict of a health check of the backend made
// outside the breaker (the gateway's recovery probe), and reports whether
// it closed the breaker. While open, PassesNeeded passing checks in a row
// end the trip early (a failing one starts the count again); health
// checks cannot end a partial trip, a quota trip or an operator's. While
// half-open with no probe in flight (an idle pool), one passing check is
// the probe's verdict. The breaker closes as after its own probe, with a
// slow start when the trip calls for one. Closed: nothing.
func (b *Breaker) Checked(passed bool, cause string) bool {
	now := b.s.Clock.Now()
	b.mu.Lock()
	need := b.passesNeededLocked()
	if need == 0 || b.probe != nil {
		b.mu.Unlock()
		return false
	}
	if !passed {
		b.passes = 0
		b.mu.Unlock()
		return false
	}
	b.passes++
	if b.passes < need {
		b.mu.Unlock()
		return false
	}
	ev := b.closeLocked(now, KindHealthProbe, cause)
	b.mu.Unlock()
	b.emit(ev)
	return true
}
