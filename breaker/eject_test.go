package breaker

import (
	"math"
	"strings"
	"testing"
	"time"
)

// brownout records failures at a third of the calls until the breaker
// opens: fail, ok, ok, fail, ok, ok, ...
func brownout(t *testing.T, b *Breaker) {
	t.Helper()
	for i := 0; b.Snapshot().State == Closed; i++ {
		if i > 100 {
			t.Fatal("the breaker never opened")
		}
		if i%3 == 0 {
			call(t, b, fail)
		} else {
			call(t, b, okOut)
		}
	}
}

// TestOneProbeDoesNotEndABrownoutsTrip: a backend that failed a third of
// its calls is benched for its trip; a passing health check, however
// many, does not put it back (issue 22: it was back within 1-10 s each
// time and benched only 40 of 90 s), while an outage's trip still ends on
// the first passing check.
func TestOneProbeDoesNotEndABrownoutsTrip(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 5, Window: 30 * time.Second, Trip: time.Minute})
	brownout(t, b)
	s := b.Snapshot()
	if s.State != Open || !s.Partial || s.PassesNeeded != 0 || s.Level != 1 {
		t.Fatalf("after a brownout: %+v, want open, partial, no checks can end it, level 1", s)
	}
	if tr := rec.last(t); !tr.Partial || tr.Level != 1 {
		t.Errorf("the opening transition says partial %v level %d, want true 1", tr.Partial, tr.Level)
	}
	for range 5 {
		if b.Checked(true, "health probe passed") {
			t.Fatal("a passing health check ended a brownout's trip")
		}
		clk.Advance(5 * time.Second)
	}
	if s := b.Snapshot(); s.State != Open {
		t.Fatalf("state %v after passing checks, want open", s.State)
	}
	// It runs its course; then one probe, and a slow start.
	clk.Advance(time.Minute)
	call(t, b, okOut)
	if s := b.Snapshot(); s.State != Closed || s.Share != MinShare {
		t.Fatalf("after the trip and a passing probe: %+v, want closed at share %v", s, MinShare)
	}

	// An outage (every call failed) is ended by the first passing check.
	o, _, _ := newTest(Settings{Failures: 5, Trip: time.Minute})
	for range 5 {
		call(t, o, fail)
	}
	if s := o.Snapshot(); s.Partial || s.PassesNeeded != 1 {
		t.Fatalf("after an outage: %+v, want not partial, one pass needed", s)
	}
	if !o.Checked(true, "health probe passed") || o.Snapshot().State != Closed {
		t.Fatal("a passing check did not end an outage's first trip")
	}
	if s := o.Snapshot(); s.Share != 1 {
		t.Errorf("share %v after a first outage trip, want 1 (no slow start)", s.Share)
	}
}

// TestEjectionGrowsForAFlappingBackend: each time a backend that came
// back is benched again, its trip is longer (Trip times the level, up to
// MaxTrip) and it needs one more passing check in a row to come back
// early; a failed probe of a backend that has not come back keeps the
// level (issue 22: every dark spell of a flapping region cost the same).
func TestEjectionGrowsForAFlappingBackend(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 1, Trip: time.Minute, MaxTrip: 150 * time.Second, SlowStart: -1})
	trip := func(wantLevel int, want time.Duration) {
		t.Helper()
		b.Force(Open, time.Time{}, KindUnresponsive, "dark")
		s := b.Snapshot()
		if s.Level != wantLevel || s.Until.Sub(clk.Now()) != want || s.PassesNeeded != wantLevel {
			t.Fatalf("trip: level %d, for %v, %d passes needed; want %d, %v, %d", s.Level, s.Until.Sub(clk.Now()), s.PassesNeeded, wantLevel, want, wantLevel)
		}
	}
	trip(1, time.Minute)
	if !b.Checked(true, "pass") {
		t.Fatal("one pass did not end the first trip")
	}
	clk.Advance(10 * time.Second)
	trip(2, 2*time.Minute)
	if b.Checked(true, "pass") {
		t.Fatal("one pass ended a second trip")
	}
	b.Checked(false, "fail") // starts the count again
	if b.Checked(true, "pass") {
		t.Fatal("a pass after a failed check ended a second trip")
	}
	if !b.Checked(true, "pass") {
		t.Fatal("two passes in a row did not end a second trip")
	}
	clk.Advance(10 * time.Second)
	trip(3, 150*time.Second) // 3 minutes, capped by MaxTrip

	// The trip runs out and the half-open probe fails: not back, same level.
	clk.Advance(150 * time.Second)
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Open || s.Level != 3 || s.Until.Sub(clk.Now()) != 150*time.Second {
		t.Fatalf("after a failed half-open probe: %+v, want open at level 3 for 150s", s)
	}

	// A trip the backend's own Retry-After sets is not an ejection.
	f, _, _ := newTest(Settings{Failures: 1, FollowRetryAfter: true})
	call(t, f, Outcome{Result: Failure, RetryAfter: time.Second})
	if s := f.Snapshot(); s.Level != 0 {
		t.Errorf("level %d after a followed Retry-After, want 0", s.Level)
	}
}

// TestEjectionLevelIsForgivenWhileClosed: each Trip a backend stays
// closed forgives one level, so one outage a day is always a first.
func TestEjectionLevelIsForgivenWhileClosed(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 1, Trip: time.Minute, SlowStart: -1})
	for range 3 {
		call(t, b, fail)
		b.Force(Closed, time.Time{}, KindHealthProbe, "passed")
	}
	if s := b.Snapshot(); s.Level != 3 {
		t.Fatalf("level %d after three trips in a row, want 3", s.Level)
	}
	clk.Advance(time.Minute)
	if s := b.Snapshot(); s.Level != 2 {
		t.Fatalf("level %d a trip later, want 2", s.Level)
	}
	clk.Advance(5 * time.Minute)
	call(t, b, fail)
	if s := b.Snapshot(); s.Level != 1 || s.Until.Sub(clk.Now()) != time.Minute {
		t.Fatalf("after six quiet minutes: %+v, want level 1, a one-minute trip", s)
	}
	// An operator's close forgets the level at once.
	b.Force(Closed, time.Time{}, KindManual, "operator")
	if s := b.Snapshot(); s.Level != 0 {
		t.Fatalf("level %d after an operator's close, want 0", s.Level)
	}
}

// TestSlowStartAfterRecovery: a backend back from a repeated (or partial)
// trip takes a tenth of its share, rising to all of it over SlowStart;
// while it does, one failure benches it again a level up, and after it
// the Failures rule applies again.
func TestSlowStartAfterRecovery(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 5, Trip: time.Minute, SlowStart: 30 * time.Second})
	b.Force(Open, time.Time{}, KindUnresponsive, "dark")
	b.Checked(true, "pass")
	if s := b.Snapshot(); s.Share != 1 {
		t.Fatalf("share %v after a first trip, want 1", s.Share)
	}
	b.Force(Open, time.Time{}, KindUnresponsive, "dark again")
	b.Checked(true, "pass")
	if !b.Checked(true, "pass") {
		t.Fatal("two passes did not end the second trip")
	}
	for _, tc := range []struct {
		after time.Duration
		want  float64
	}{{0, 0.1}, {15 * time.Second, 0.55}, {29 * time.Second, 0.97}, {30 * time.Second, 1}} {
		clk.Advance(tc.after - clk.Now().Sub(b.Snapshot().Since))
		if s := b.Snapshot(); math.Abs(s.Share-tc.want) > 1e-9 {
			t.Errorf("share %.3f at %v into the slow start, want %.3f", s.Share, tc.after, tc.want)
		}
	}
	// After the slow start, one failure does not open.
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("one failure after the slow start: %v, want closed", s.State)
	}

	// During a slow start one failure is enough: a level up.
	b.Force(Open, time.Time{}, KindUnresponsive, "dark a third time")
	for range 3 {
		b.Checked(true, "pass")
	}
	clk.Advance(5 * time.Second)
	call(t, b, okOut)
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Open || s.Level != 4 || s.Until.Sub(clk.Now()) != 4*time.Minute {
		t.Fatalf("a failure during the slow start: %+v, want open at level 4 for 4m", s)
	}

	// A partial trip's slow start fails again: still partial.
	p, pclk, _ := newTest(Settings{Failures: 5, Trip: time.Minute})
	brownout(t, p)
	pclk.Advance(time.Minute)
	call(t, p, okOut)
	call(t, p, fail)
	if s := p.Snapshot(); s.State != Open || !s.Partial || s.Level != 2 {
		t.Fatalf("a brownout's slow start failed: %+v, want open, partial, level 2", s)
	}
}

// TestAllowEarlyLetsAProbeThroughAPartialTrip: when no other member can
// take a call, a backend benched for a brownout (it still answers most
// calls) is better than none: AllowEarly lets one call through as its
// probe. An outage's trip without a Retry-After is not cut short.
func TestAllowEarlyLetsAProbeThroughAPartialTrip(t *testing.T) {
	b, _, _ := newTest(Settings{Failures: 5, Trip: time.Minute})
	brownout(t, b)
	done, ok := b.AllowEarly()
	if !ok {
		t.Fatal("AllowEarly refused a partial trip")
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("a second call went through while the probe was in flight")
	}
	done(okOut)
	if s := b.Snapshot(); s.State != Closed || s.Share != MinShare {
		t.Fatalf("after the early probe passed: %+v, want closed in slow start", s)
	}

	o, _, _ := newTest(Settings{Failures: 5, Trip: time.Minute})
	for range 5 {
		call(t, o, fail)
	}
	if _, ok := o.AllowEarly(); ok {
		t.Fatal("AllowEarly let a call through an outage's trip")
	}
}

// TestAllowEarlyLetsAProbeThroughABackendPassingItsChecks: when no other
// member can take a call, a backend benched again (a flapping one, which
// needs several passing health checks in a row) that passed its last
// check is better than none: AllowEarly lets one call through as its
// probe. It found a pool of two flapping regions refusing every call for
// over a minute while one of them had been answering its checks. Before
// any passing check, or after a failed one, it stays out; a failed probe
// keeps its level.
func TestAllowEarlyLetsAProbeThroughABackendPassingItsChecks(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute, SlowStart: time.Minute})
	b.Force(Open, time.Time{}, KindUnresponsive, "dark")
	b.Checked(true, "pass") // the first trip ends
	clk.Advance(10 * time.Second)
	b.Force(Open, time.Time{}, KindUnresponsive, "dark again")
	if s := b.Snapshot(); s.Level != 2 || s.PassesNeeded != 2 {
		t.Fatalf("benched again: %+v, want level 2, two passes needed", s)
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly before any passing check")
	}
	b.Checked(true, "pass")
	b.Checked(false, "fail")
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly after a failed check")
	}
	b.Checked(true, "pass")
	done, ok := b.AllowEarly()
	if !ok {
		t.Fatal("AllowEarly refused a backend that passed its last check")
	}
	if e := rec.all()[len(rec.all())-1]; e.To != HalfOpen || !strings.Contains(e.Cause, "passed its last health check") {
		t.Fatalf("the early probe's transition: %+v", e)
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("a second call went through while the probe was in flight")
	}
	done(fail)
	if s := b.Snapshot(); s.State != Open || s.Level != 2 || s.Passes != 0 {
		t.Fatalf("after the early probe failed: %+v, want open at level 2, the passes forgotten", s)
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly again after the failed probe, with no pass since")
	}
	b.Checked(true, "pass")
	done, ok = b.AllowEarly()
	if !ok {
		t.Fatal("AllowEarly refused after a new pass")
	}
	done(okOut)
	if s := b.Snapshot(); s.State != Closed || s.Share != MinShare {
		t.Fatalf("after the early probe passed: %+v, want closed in its slow start", s)
	}

	// Benched for quota or by an operator: no checks end it, no early call.
	q, _, _ := newTest(Settings{Failures: 1, Trip: time.Minute})
	q.Force(Open, time.Time{}, KindManual, "operator")
	q.Checked(true, "pass")
	if _, ok := q.AllowEarly(); ok {
		t.Fatal("AllowEarly through an operator's trip")
	}
}

// TestReplicasCarryTheEjectionLevel: a trip adopted from another replica
// or restored on a reload keeps its level and partiality, so its end is
// judged the same everywhere.
func TestReplicasCarryTheEjectionLevel(t *testing.T) {
	b, clk, rec := newTest(Settings{Trip: time.Minute})
	b.Adopt(Snapshot{State: Open, Until: clk.Now().Add(2 * time.Minute), Level: 2, Partial: true}, KindServerError, "fleet")
	s := b.Snapshot()
	if s.Level != 2 || !s.Partial || s.PassesNeeded != 0 {
		t.Fatalf("adopted: %+v, want level 2, partial, no checks", s)
	}
	if tr := rec.last(t); tr.Level != 2 || !tr.Partial || !tr.Adopted {
		t.Errorf("adopted transition %+v", tr)
	}
	b.Adopt(Snapshot{State: Closed}, KindProbe, "fleet: probe succeeded")
	if s := b.Snapshot(); s.State != Closed || s.Share != MinShare {
		t.Fatalf("adopted close: %+v, want a slow start", s)
	}
	nb, _, _ := newTest(Settings{Trip: time.Minute})
	nb.s.Clock = b.s.Clock
	clk.Advance(6 * time.Second)
	nb.Restore(b.Snapshot())
	if s := nb.Snapshot(); s.Level != 2 || math.Abs(s.Share-b.Snapshot().Share) > 1e-9 {
		t.Fatalf("restored: level %d share %.3f, want 2 and %.3f", s.Level, s.Share, b.Snapshot().Share)
	}
}
