package breaker

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

type recorder struct {
	mu  sync.Mutex
	evs []Transition
}

func (r *recorder) add(t Transition) {
	r.mu.Lock()
	r.evs = append(r.evs, t)
	r.mu.Unlock()
}

func (r *recorder) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, e.From.String()+">"+e.To.String())
	}
	return out
}

func newTest(s Settings) (*Breaker, *fakeclock.Clock, *recorder) {
	clk := fakeclock.New()
	rec := &recorder{}
	s.Clock = clk
	s.OnTransition = rec.add
	return New("b", s), clk, rec
}

func call(t *testing.T, b *Breaker, o Outcome) {
	t.Helper()
	done, ok := b.Allow()
	if !ok {
		t.Fatalf("Allow refused, state %v", b.Snapshot().State)
	}
	done(o)
}

var fail = Outcome{Result: Failure, Cause: "429"}
var okOut = Outcome{Result: Success}

func TestOpensAfterFailuresInWindow(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 5, Window: 30 * time.Second, Trip: 60 * time.Second})
	for i := 0; i < 4; i++ {
		call(t, b, fail)
		clk.Advance(5 * time.Second)
	}
	if s := b.Snapshot(); s.State != Closed || s.Failures != 4 {
		t.Fatalf("after 4 failures: %+v", s)
	}
	call(t, b, fail) // 5th failure, 20s after the first
	s := b.Snapshot()
	if s.State != Open {
		t.Fatalf("after 5 failures in window: state %v", s.State)
	}
	if want := clk.Now().Add(60 * time.Second); !s.Until.Equal(want) {
		t.Fatalf("until = %v, want %v", s.Until, want)
	}
	if _, ok := b.Allow(); ok {
		t.Fatal("open breaker let a call through")
	}
	if got := rec.states(); len(got) != 1 || got[0] != "closed>open" {
		t.Fatalf("transitions = %v", got)
	}
}

func TestNoOpenWhenFailuresSpreadAcrossWindows(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 5, Window: 30 * time.Second})
	// 20 failures, 8 s apart: never 5 within any 30 s window (4 fit in 24 s,
	// the 5th is 32 s after the first of them).
	for i := 0; i < 20; i++ {
		call(t, b, fail)
		clk.Advance(8 * time.Second)
	}
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("state = %v, want closed", s.State)
	}
	if len(rec.states()) != 0 {
		t.Fatalf("unexpected transitions %v", rec.states())
	}
}

func TestWindowBoundaryIsInclusive(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 2, Window: 10 * time.Second})
	call(t, b, fail)
	clk.Advance(10 * time.Second)
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Open {
		t.Fatalf("two failures exactly one window apart: state %v, want open", s.State)
	}
}

func TestSuccessesDoNotResetWindow(t *testing.T) {
	// API Management counts failures in the interval; successes in between
	// do not forgive them.
	b, _, _ := newTest(Settings{Failures: 3})
	call(t, b, fail)
	call(t, b, okOut)
	call(t, b, fail)
	call(t, b, okOut)
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Open {
		t.Fatalf("state = %v, want open", s.State)
	}
}

func TestIgnoredOutcomesDoNotCount(t *testing.T) {
	b, _, _ := newTest(Settings{Failures: 2})
	for i := 0; i < 10; i++ {
		call(t, b, Outcome{Result: Ignore})
	}
	if s := b.Snapshot(); s.State != Closed || s.Failures != 0 {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestRetryAfterLengthensTrip(t *testing.T) {
	tests := []struct {
		name   string
		accept bool
		follow bool
		ra     time.Duration
		max    time.Duration
		want   time.Duration
	}{
		{"shorter than trip keeps trip", true, false, 10 * time.Second, 0, 60 * time.Second},
		{"longer than trip lengthens", true, false, 90 * time.Second, 0, 90 * time.Second},
		{"absurd value is capped", true, false, 86400 * time.Second, 5 * time.Minute, 5 * time.Minute},
		{"cap below trip keeps trip", true, false, 86400 * time.Second, 30 * time.Second, 60 * time.Second},
		{"ignored without accept", false, false, 90 * time.Second, 0, 60 * time.Second},
		{"follow: shorter than trip shortens", false, true, 2 * time.Second, 0, 2 * time.Second},
		{"follow: longer than trip lengthens", true, true, 90 * time.Second, 0, 90 * time.Second},
		{"follow: capped", false, true, 86400 * time.Second, 5 * time.Minute, 5 * time.Minute},
		{"follow: no Retry-After uses trip", false, true, 0, 0, 60 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, _ := newTest(Settings{Failures: 1, Trip: 60 * time.Second, AcceptRetryAfter: tc.accept, FollowRetryAfter: tc.follow, MaxRetryAfter: tc.max})
			call(t, b, Outcome{Result: Failure, RetryAfter: tc.ra})
			s := b.Snapshot()
			if got := s.Until.Sub(clk.Now()); s.State != Open || got != tc.want {
				t.Fatalf("state %v, open for %v, want %v", s.State, got, tc.want)
			}
		})
	}
}

func TestHalfOpenProbe(t *testing.T) {
	tests := []struct {
		name      string
		probe     Outcome
		wantState State
		wantTrans []string
	}{
		{"success closes", okOut, Closed, []string{"closed>open", "open>half_open", "half_open>closed"}},
		{"failure reopens", fail, Open, []string{"closed>open", "open>half_open", "half_open>open"}},
		{"ignore releases probe", Outcome{Result: Ignore}, HalfOpen, []string{"closed>open", "open>half_open"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute})
			call(t, b, fail)
			clk.Advance(59 * time.Second)
			if _, ok := b.Allow(); ok {
				t.Fatal("let through before trip ended")
			}
			clk.Advance(time.Second)
			if !b.Snapshot().Ready(clk.Now()) {
				t.Fatal("not ready when trip ended")
			}
			done, ok := b.Allow()
			if !ok {
				t.Fatal("probe refused")
			}
			if _, ok := b.Allow(); ok {
				t.Fatal("second call let through while probing")
			}
			if b.Snapshot().Ready(clk.Now()) {
				t.Fatal("ready while probe in flight")
			}
			done(tc.probe)
			s := b.Snapshot()
			if s.State != tc.wantState {
				t.Fatalf("state = %v, want %v", s.State, tc.wantState)
			}
			if tc.wantState == Open && !s.Until.Equal(clk.Now().Add(time.Minute)) {
				t.Fatalf("reopened until %v", s.Until)
			}
			if tc.wantState == HalfOpen {
				if _, ok := b.Allow(); !ok {
					t.Fatal("no new probe after an ignored one")
				}
			}
			got := rec.states()
			if len(got) != len(tc.wantTrans) {
				t.Fatalf("transitions = %v, want %v", got, tc.wantTrans)
			}
			for i := range got {
				if got[i] != tc.wantTrans[i] {
					t.Fatalf("transitions = %v, want %v", got, tc.wantTrans)
				}
			}
		})
	}
}

func TestHalfOpenLetsExactlyOneThroughUnderConcurrency(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 1, Trip: time.Second})
	call(t, b, fail)
	clk.Advance(time.Second)

	const n = 64
	var allowed atomic.Int32
	var dones = make(chan Done, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if d, ok := b.Allow(); ok {
				allowed.Add(1)
				dones <- d
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := allowed.Load(); got != 1 {
		t.Fatalf("%d calls let through half-open, want 1", got)
	}
	(<-dones)(okOut)
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("state = %v after probe succeeded", s.State)
	}
}

func TestStaleOutcomesIgnored(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 2, Trip: time.Minute})
	// Three calls start while closed; two fail and open the breaker.
	d1, _ := b.Allow()
	d2, _ := b.Allow()
	d3, _ := b.Allow()
	d1(fail)
	d2(fail)
	if b.Snapshot().State != Open {
		t.Fatal("not open")
	}
	clk.Advance(time.Minute)
	probe, ok := b.Allow()
	if !ok {
		t.Fatal("probe refused")
	}
	// The third call from the closed period finishes during the probe: its
	// failure must not decide the probe.
	d3(fail)
	if s := b.Snapshot(); s.State != HalfOpen || !s.Probing {
		t.Fatalf("stale failure changed state: %+v", s)
	}
	probe(okOut)
	if b.Snapshot().State != Closed {
		t.Fatal("probe success did not close")
	}
}

func TestDoneTwiceCountsOnce(t *testing.T) {
	b, _, _ := newTest(Settings{Failures: 2})
	done, _ := b.Allow()
	done(fail)
	done(fail)
	if s := b.Snapshot(); s.State != Closed || s.Failures != 1 {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestForce(t *testing.T) {
	b, clk, rec := newTest(Settings{Trip: time.Minute})
	b.Force(Open, time.Time{}, KindManual, "manual")
	s := b.Snapshot()
	if s.State != Open || !s.Until.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("forced open: %+v", s)
	}
	b.Force(Closed, time.Time{}, KindManual, "manual")
	if b.Snapshot().State != Closed {
		t.Fatal("forced closed failed")
	}
	if got := rec.states(); len(got) != 2 || got[1] != "open>closed" {
		t.Fatalf("transitions %v", got)
	}
}

func TestClosedAfterProbeStartsFreshWindow(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 3, Trip: time.Second})
	for i := 0; i < 3; i++ {
		call(t, b, fail)
	}
	clk.Advance(time.Second)
	call(t, b, okOut) // probe closes
	call(t, b, fail)
	call(t, b, fail)
	if s := b.Snapshot(); s.State != Closed || s.Failures != 2 {
		t.Fatalf("old failures carried over: %+v", s)
	}
}

func TestTransitionCallbackMayUseBreaker(t *testing.T) {
	// The callback runs outside the lock: calling back into the breaker
	// must not deadlock (gobreaker issue #37).
	clk := fakeclock.New()
	var b *Breaker
	var seen State
	b = New("b", Settings{Failures: 1, Clock: clk, OnTransition: func(Transition) {
		seen = b.Snapshot().State
	}})
	call(t, b, fail)
	if seen != Open {
		t.Fatalf("callback saw %v", seen)
	}
}

func TestSnapshotReadyAt(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name  string
		s     Snapshot
		ready bool
		at    time.Time
	}{
		{"closed", Snapshot{State: Closed}, true, now},
		{"open", Snapshot{State: Open, Until: now.Add(time.Second)}, false, now.Add(time.Second)},
		{"open elapsed", Snapshot{State: Open, Until: now.Add(-time.Second)}, true, now},
		{"half-open probing", Snapshot{State: HalfOpen, Probing: true}, false, now},
		{"half-open idle", Snapshot{State: HalfOpen}, true, now},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Ready(now); got != tc.ready {
				t.Errorf("Ready = %v", got)
			}
			if got := tc.s.ReadyAt(now); !got.Equal(tc.at) {
				t.Errorf("ReadyAt = %v, want %v", got, tc.at)
			}
		})
	}
}

func BenchmarkAllowSuccess(b *testing.B) {
	br := New("b", Settings{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done, ok := br.Allow()
			if ok {
				done(Outcome{})
			}
		}
	})
}

func TestFollowRetryAfterClosesWithoutProbe(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute, FollowRetryAfter: true})
	call(t, b, Outcome{Result: Failure, RetryAfter: 3 * time.Second, Cause: "429"})
	if s := b.Snapshot(); s.State != Open || s.Until.Sub(clk.Now()) != 3*time.Second {
		t.Fatalf("snapshot %+v", s)
	}
	clk.Advance(3 * time.Second)
	// Quota is back: every caller may go, not one probe.
	d1, ok1 := b.Allow()
	d2, ok2 := b.Allow()
	if !ok1 || !ok2 {
		t.Fatal("calls refused after the Retry-After elapsed")
	}
	d1(okOut)
	d2(okOut)
	if got := rec.states(); len(got) != 2 || got[1] != "open>closed" {
		t.Fatalf("transitions %v", got)
	}
	// A failure without a Retry-After still trips for Trip and probes.
	call(t, b, Outcome{Result: Failure, Cause: "503"})
	clk.Advance(time.Minute)
	if _, ok := b.Allow(); !ok {
		t.Fatal("probe refused")
	}
	if _, ok := b.Allow(); ok {
		t.Fatal("second call let through while probing after a 503 trip")
	}
}

func TestHoldOpensAtOnce(t *testing.T) {
	b, clk, _ := newTest(Settings{Failures: 5, Trip: time.Minute, MaxRetryAfter: 10 * time.Minute})
	call(t, b, Outcome{Result: Failure, Hold: time.Hour, Cause: "insufficient_quota"})
	s := b.Snapshot()
	if s.State != Open || s.Until.Sub(clk.Now()) != 10*time.Minute {
		t.Fatalf("held: %+v, want open for the 10m cap", s)
	}
	// A short hold still opens for at least the trip.
	b2, clk2, _ := newTest(Settings{Failures: 5, Trip: time.Minute})
	call(t, b2, Outcome{Result: Failure, Hold: time.Second})
	if s := b2.Snapshot(); s.State != Open || s.Until.Sub(clk2.Now()) != time.Minute {
		t.Fatalf("short hold: %+v", s)
	}
}

// last returns the last transition recorded.
func (r *recorder) last(t *testing.T) Transition {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.evs) == 0 {
		t.Fatal("no transition")
	}
	return r.evs[len(r.evs)-1]
}

func (r *recorder) all() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Transition(nil), r.evs...)
}

func wantStates(t *testing.T, rec *recorder, want ...string) {
	t.Helper()
	got := rec.states()
	if len(got) != len(want) {
		t.Fatalf("transitions = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("transitions = %v, want %v", got, want)
		}
	}
}

func allow(t *testing.T, b *Breaker) Done {
	t.Helper()
	done, ok := b.Allow()
	if !ok {
		t.Fatalf("Allow refused: %+v", b.Snapshot())
	}
	return done
}

func TestTransitionsAreNumbered(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b, fail)                               // closed > open
	clk.Advance(time.Minute)                       // open > half_open, by the timer
	call(t, b, fail)                               // half_open > open
	b.Force(Open, time.Time{}, KindManual, "op")   // open > open
	b.Force(Closed, time.Time{}, KindManual, "op") // open > closed
	b.Force(Closed, time.Time{}, KindManual, "op") // no change, no number
	evs := rec.all()
	if len(evs) != 5 {
		t.Fatalf("transitions %v", rec.states())
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("transition %d (%v>%v) has Seq %d, want %d", i, e.From, e.To, e.Seq, i+1)
		}
	}
	if s := b.Snapshot(); s.Seq != 5 {
		t.Fatalf("Snapshot.Seq = %d, want 5", s.Seq)
	}

	// A breaker restored from this one numbers on from above it.
	nb, _, nrec := newTest(Settings{Failures: 1})
	nb.Restore(b.Snapshot())
	if s := nb.Snapshot(); s.Seq != 6 {
		t.Fatalf("restored Seq = %d, want 6", s.Seq)
	}
	call(t, nb, fail)
	if e := nrec.last(t); e.Seq != 7 {
		t.Fatalf("first transition after Restore has Seq %d, want 7", e.Seq)
	}
}

func TestTransitionSeqFollowsTheOrderOfStatesUnderConcurrency(t *testing.T) {
	// Transitions may be delivered out of order, but ordered by Seq they
	// are the breaker's history: each starts where the one before ended.
	b, _, rec := newTest(Settings{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if (i+j)%2 == 0 {
					b.Force(Open, time.Time{}, KindManual, "op")
				} else {
					b.Force(Closed, time.Time{}, KindManual, "op")
				}
			}
		}()
	}
	wg.Wait()
	evs := rec.all()
	bySeq := map[uint64]Transition{}
	for _, e := range evs {
		if _, dup := bySeq[e.Seq]; dup {
			t.Fatalf("Seq %d given twice", e.Seq)
		}
		bySeq[e.Seq] = e
	}
	prev := Closed
	for s := uint64(1); s <= uint64(len(evs)); s++ {
		e, ok := bySeq[s]
		if !ok {
			t.Fatalf("no transition with Seq %d among %d", s, len(evs))
		}
		if e.From != prev {
			t.Fatalf("Seq %d goes from %v, but the one before ended in %v", s, e.From, prev)
		}
		prev = e.To
	}
	if got := b.Snapshot().State; got != prev {
		t.Fatalf("state %v, last transition by Seq ends in %v", got, prev)
	}
}

// TestIdleBreakerDoesNotStayOpenPastItsTrip is the regression test for
// "open (0s left)" shown for 10+ minutes in an idle pool, and no failback
// notification: the trip ended only when a call came.
func TestIdleBreakerDoesNotStayOpenPastItsTrip(t *testing.T) {
	tests := []struct {
		name     string
		settings Settings
		open     func(b *Breaker, now time.Time)
		trip     time.Duration
		want     State
		cause    string
	}{
		{"opened by count", Settings{Failures: 2, Trip: time.Minute},
			func(b *Breaker, _ time.Time) {
				for range 2 {
					d, _ := b.Allow()
					d(fail)
				}
			}, time.Minute, HalfOpen, "trip ended"},
		{"forced open", Settings{},
			func(b *Breaker, now time.Time) { b.Force(Open, now.Add(10*time.Minute), KindManual, "manual") },
			10 * time.Minute, HalfOpen, "trip ended"},
		{"held open", Settings{Trip: time.Minute},
			func(b *Breaker, _ time.Time) {
				d, _ := b.Allow()
				d(Outcome{Result: Failure, Hold: 2 * time.Minute})
			}, 2 * time.Minute, HalfOpen, "trip ended"},
		{"restored open", Settings{},
			func(b *Breaker, now time.Time) {
				b.Restore(Snapshot{State: Open, Until: now.Add(3 * time.Minute), Seq: 9})
			},
			3 * time.Minute, HalfOpen, "trip ended"},
		{"followed Retry-After closes", Settings{FollowRetryAfter: true},
			func(b *Breaker, _ time.Time) {
				d, _ := b.Allow()
				d(Outcome{Result: Failure, Throttled: true, RetryAfter: 20 * time.Second, Cause: "429"})
			}, 20 * time.Second, Closed, "retry-after elapsed"},
		{"restored followed Retry-After closes", Settings{FollowRetryAfter: true},
			func(b *Breaker, now time.Time) {
				b.Restore(Snapshot{State: Open, Until: now.Add(time.Minute), RetryAt: now.Add(time.Minute), Throttled: true})
			}, time.Minute, Closed, "retry-after elapsed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, rec := newTest(tc.settings)
			start := clk.Now()
			tc.open(b, start)
			if s := b.Snapshot(); s.State != Open {
				t.Fatalf("not open: %+v", s)
			}
			clk.Advance(tc.trip - time.Millisecond)
			if s := b.Snapshot(); s.State != Open {
				t.Fatalf("trip ended early: %+v", s)
			}
			clk.Advance(10 * time.Minute) // no call at all
			s := b.Snapshot()
			if s.State != tc.want || s.Probing || !s.Until.IsZero() {
				t.Fatalf("idle after the trip: %+v, want %v with no probe", s, tc.want)
			}
			e := rec.last(t)
			if e.From != Open || e.To != tc.want || e.Cause != tc.cause || !e.At.Equal(start.Add(tc.trip)) {
				t.Fatalf("transition %+v, want open>%v %q at the trip's end", e, tc.want, tc.cause)
			}
			if tc.want == HalfOpen {
				if _, ok := b.Allow(); !ok {
					t.Fatal("no probe let through after the trip")
				}
			}
		})
	}
}

func TestOtherTransitionsStopTheTripTimer(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b, fail)
	b.Force(Closed, time.Time{}, KindManual, "manual")
	b.Force(Open, clk.Now().Add(5*time.Minute), KindManual, "manual")
	clk.Advance(time.Minute) // the first trip's end: nothing happens
	if s := b.Snapshot(); s.State != Open {
		t.Fatalf("the replaced trip's timer fired: %+v", s)
	}
	clk.Advance(4 * time.Minute)
	wantStates(t, rec, "closed>open", "open>closed", "closed>open", "open>half_open")
	// The lazy path in Allow and the timer do not both end a trip.
	b2, clk2, rec2 := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b2, fail)
	b2.Force(Open, clk2.Now(), KindManual, "ends now") // due, not yet run
	allow(t, b2)
	clk2.Advance(time.Second)
	wantStates(t, rec2, "closed>open", "open>open", "open>half_open")
}

func TestThrottledFailure(t *testing.T) {
	tests := []struct {
		name      string
		settings  Settings
		outcome   Outcome
		wantOpen  bool
		wantFor   time.Duration
		wantState State // after wantFor
	}{
		{"followed: opens at once for its Retry-After", Settings{Failures: 5, Trip: time.Minute, FollowRetryAfter: true},
			Outcome{Result: Failure, Throttled: true, RetryAfter: 20 * time.Second, Cause: "429"}, true, 20 * time.Second, Closed},
		{"followed: longer than Trip", Settings{Failures: 5, Trip: time.Minute, FollowRetryAfter: true},
			Outcome{Result: Failure, Throttled: true, RetryAfter: 3 * time.Minute, Cause: "429"}, true, 3 * time.Minute, Closed},
		{"followed: capped", Settings{Failures: 5, FollowRetryAfter: true, MaxRetryAfter: 2 * time.Minute},
			Outcome{Result: Failure, Throttled: true, RetryAfter: time.Hour, Cause: "429"}, true, 2 * time.Minute, Closed},
		{"followed: no Retry-After is counted", Settings{Failures: 5, FollowRetryAfter: true},
			Outcome{Result: Failure, Throttled: true, Cause: "429"}, false, 0, Closed},
		{"not followed: counted (API Management)", Settings{Failures: 5, AcceptRetryAfter: true},
			Outcome{Result: Failure, Throttled: true, RetryAfter: 20 * time.Second, Cause: "429"}, false, 0, Closed},
		{"not throttled: counted", Settings{Failures: 5, FollowRetryAfter: true},
			Outcome{Result: Failure, RetryAfter: 20 * time.Second, Cause: "503"}, false, 0, Closed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, rec := newTest(tc.settings)
			call(t, b, tc.outcome)
			s := b.Snapshot()
			if !tc.wantOpen {
				if s.State != Closed || s.Failures != 1 {
					t.Fatalf("%+v, want closed with the failure counted", s)
				}
				return
			}
			until := clk.Now().Add(tc.wantFor)
			if s.State != Open || !s.Until.Equal(until) || !s.RetryAt.Equal(until) || !s.Throttled {
				t.Fatalf("%+v, want open and throttled until %v", s, until)
			}
			if c := rec.last(t).Cause; c != "throttled for "+tc.wantFor.String()+": 429" {
				t.Fatalf("cause %q", c)
			}
			clk.Advance(tc.wantFor)
			if s := b.Snapshot(); s.State != tc.wantState || s.Throttled {
				t.Fatalf("after the Retry-After: %+v, want %v", s, tc.wantState)
			}
			// Closed without a probe: every caller goes.
			allow(t, b)
			allow(t, b)
		})
	}
}

// TestLongStreamProbeIsDecidedAtItsFirstByte is the regression test for a
// multi-minute stream chosen as the probe keeping the backend half-open
// while 5 of 5 requests went to the fallback.
func TestLongStreamProbeIsDecidedAtItsFirstByte(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 2, Trip: time.Minute})
	stream := Outcome{Class: "stream"}
	for range 2 {
		call(t, b, Outcome{Result: Failure, Class: "stream", Cause: "first_byte_timeout"})
	}
	clk.Advance(time.Minute)
	probe := allow(t, b)
	clk.Advance(800 * time.Millisecond)
	first := stream
	first.Partial = true
	probe(first) // the stream's first event
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("first byte of the probe did not close the breaker: %+v", s)
	}
	wantStates(t, rec, "closed>open", "open>half_open", "half_open>closed")
	for i := range 5 {
		if _, ok := b.Allow(); !ok {
			t.Fatalf("request %d of 5 refused while the probe's stream runs", i+1)
		}
	}
	probe(first) // later events change nothing
	// Three minutes on, the stream breaks: a failure of the closed
	// breaker, not a stale verdict.
	clk.Advance(3 * time.Minute)
	end := stream
	end.Result, end.Cause = Failure, "stream error"
	probe(end)
	if s := b.Snapshot(); s.State != Closed || s.Failures != 1 {
		t.Fatalf("the stream's failure at its end: %+v, want closed with 1 failure", s)
	}
	probe(end) // used up
	if s := b.Snapshot(); s.Failures != 1 {
		t.Fatalf("Done counted twice: %+v", s)
	}
}

func TestPartialOutcomes(t *testing.T) {
	part := func(r Result) Outcome { return Outcome{Result: r, Partial: true} }
	tests := []struct {
		name      string
		halfOpen  bool // the call is the half-open probe, else a closed call
		outcomes  []Outcome
		wantState State
		wantFails int
		probing   bool
	}{
		{"probe: partial failure reopens", true, []Outcome{part(Failure)}, Open, 0, false},
		{"probe: partial failure stands for the final", true, []Outcome{part(Failure), okOut}, Open, 0, false},
		{"probe: only the first partial counts", true, []Outcome{part(Ignore), part(Success)}, HalfOpen, 0, true},
		{"probe: partial ignore keeps the probe", true, []Outcome{part(Ignore)}, HalfOpen, 0, true},
		{"probe: final after a partial ignore decides", true, []Outcome{part(Ignore), okOut}, Closed, 0, false},
		{"probe: partial success then final success", true, []Outcome{part(Success), okOut}, Closed, 0, false},
		{"closed: partial success does nothing", false, []Outcome{part(Success)}, Closed, 0, false},
		{"closed: partial does not use up the Done", false, []Outcome{part(Success), fail}, Closed, 1, false},
		{"closed: partial failure counts once", false, []Outcome{part(Failure), fail, part(Failure)}, Closed, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, _ := newTest(Settings{Failures: 3, Trip: time.Minute})
			if tc.halfOpen {
				b.Force(Open, clk.Now(), KindManual, "test")
				clk.Advance(0)
			}
			d := allow(t, b)
			for _, o := range tc.outcomes {
				d(o)
			}
			s := b.Snapshot()
			if s.State != tc.wantState || s.Failures != tc.wantFails || s.Probing != tc.probing {
				t.Fatalf("%+v, want %v with %d failures, probing %v", s, tc.wantState, tc.wantFails, tc.probing)
			}
		})
	}
}

func TestProbeLease(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute, ProbeLease: 20 * time.Second})
	call(t, b, fail)
	clk.Advance(time.Minute)
	stuck := allow(t, b)
	clk.Advance(19 * time.Second)
	if _, ok := b.Allow(); ok {
		t.Fatal("a second probe before the lease ended")
	}
	clk.Advance(time.Second)
	if s := b.Snapshot(); s.State != HalfOpen || s.Probing || !s.Ready(clk.Now()) {
		t.Fatalf("after the lease: %+v, want half-open with no probe", s)
	}
	next := allow(t, b)
	stuck(okOut) // lost its lease: stale
	if s := b.Snapshot(); s.State != HalfOpen || !s.Probing {
		t.Fatalf("the stuck probe's late success decided: %+v", s)
	}
	next(Outcome{Result: Success, Partial: true})
	clk.Advance(time.Hour) // the decided probe's lease timer does nothing
	wantStates(t, rec, "closed>open", "open>half_open", "half_open>closed")
	if got := clk.Pending(); got != 0 {
		t.Fatalf("%d timers left armed on a closed breaker", got)
	}
	if d := New("x", Settings{}).Settings().ProbeLease; d != 30*time.Second {
		t.Fatalf("default ProbeLease %v", d)
	}
}

// TestPlainSuccessMustNotCloseTheBreakerOfABackendWhoseStreamsAreStalling:
// the breaker opened on stalling streams; a plain request that succeeds
// says nothing about them.
func TestPlainSuccessMustNotCloseTheBreakerOfABackendWhoseStreamsAreStalling(t *testing.T) {
	stall := Outcome{Result: Failure, Class: "stream", Cause: "stream error"}
	tests := []struct {
		name      string
		probes    []Outcome
		wantState State
	}{
		{"plain success releases the probe", []Outcome{okOut}, HalfOpen},
		{"plain partial success releases the probe", []Outcome{{Result: Success, Partial: true}}, HalfOpen},
		{"stream success closes", []Outcome{okOut, {Result: Success, Class: "stream"}}, Closed},
		{"stream first byte closes", []Outcome{okOut, {Result: Success, Class: "stream", Partial: true}}, Closed},
		{"plain failure reopens", []Outcome{{Result: Failure, Cause: "503"}}, Open},
		{"stream failure reopens", []Outcome{okOut, stall}, Open},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, _ := newTest(Settings{Failures: 3, Trip: time.Minute})
			for range 3 {
				call(t, b, stall)
			}
			clk.Advance(time.Minute)
			for _, o := range tc.probes {
				d := allow(t, b)
				d(o)
				if o.Class == "" && o.Result == Success {
					if s := b.Snapshot(); s.State != HalfOpen || s.Probing {
						t.Fatalf("after a plain success: %+v, want half-open with the probe released", s)
					}
					d(okOut) // a released probe has no say any more
				}
			}
			if s := b.Snapshot(); s.State != tc.wantState {
				t.Fatalf("state %v, want %v", s.State, tc.wantState)
			}
		})
	}
	// Opened by a plain failure, any success closes; a forced open too.
	b, clk, _ := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b, fail)
	clk.Advance(time.Minute)
	call(t, b, Outcome{Result: Success, Class: "stream"})
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("opened by a plain failure, a stream's success left it %v", s.State)
	}
}

func TestRetryAtAndThrottledInSnapshot(t *testing.T) {
	tests := []struct {
		name      string
		settings  Settings
		outcome   Outcome
		force     bool
		retryAt   time.Duration // 0: none
		until     time.Duration
		throttled bool
	}{
		{"Retry-After shorter than Trip, not followed", Settings{Failures: 1, Trip: time.Minute},
			Outcome{Result: Failure, RetryAfter: 10 * time.Second, Cause: "503"}, false, 10 * time.Second, time.Minute, false},
		{"throttled, counted", Settings{Failures: 1, Trip: time.Minute, AcceptRetryAfter: true},
			Outcome{Result: Failure, Throttled: true, RetryAfter: 10 * time.Second}, false, 10 * time.Second, time.Minute, true},
		{"accepted and capped", Settings{Failures: 1, Trip: time.Minute, AcceptRetryAfter: true, MaxRetryAfter: 2 * time.Minute},
			Outcome{Result: Failure, RetryAfter: time.Hour}, false, 2 * time.Minute, 2 * time.Minute, false},
		{"no Retry-After", Settings{Failures: 1, Trip: time.Minute},
			Outcome{Result: Failure}, false, 0, time.Minute, false},
		{"held: no early try", Settings{Failures: 1, Trip: time.Minute, MaxRetryAfter: time.Hour},
			Outcome{Result: Failure, Hold: time.Hour, RetryAfter: 10 * time.Second}, false, 0, time.Hour, false},
		{"forced", Settings{Trip: time.Minute}, Outcome{}, true, 0, time.Minute, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, _ := newTest(tc.settings)
			now := clk.Now()
			if tc.force {
				b.Force(Open, time.Time{}, KindManual, "manual")
			} else {
				call(t, b, tc.outcome)
			}
			s := b.Snapshot()
			var want time.Time
			if tc.retryAt > 0 {
				want = now.Add(tc.retryAt)
			}
			if s.State != Open || !s.RetryAt.Equal(want) || !s.Until.Equal(now.Add(tc.until)) || s.Throttled != tc.throttled {
				t.Fatalf("%+v, want RetryAt %v, Until +%v, Throttled %v", s, want, tc.until, tc.throttled)
			}
			clk.Advance(tc.until)
			if s := b.Snapshot(); !s.RetryAt.IsZero() || s.Throttled {
				t.Fatalf("not open any more, yet %+v", s)
			}
		})
	}
}

func TestAllowEarly(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute})
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly on a closed breaker")
	}
	call(t, b, Outcome{Result: Failure, RetryAfter: 10 * time.Second, Cause: "429"})
	clk.Advance(9 * time.Second)
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly before the backend's Retry-After")
	}
	clk.Advance(time.Second)
	if _, ok := b.Allow(); ok {
		t.Fatal("Allow let a call through before Until")
	}
	probe, ok := b.AllowEarly()
	if !ok {
		t.Fatal("AllowEarly refused once the Retry-After passed")
	}
	if s := b.Snapshot(); s.State != HalfOpen || !s.Probing {
		t.Fatalf("after AllowEarly: %+v, want half-open probing", s)
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("a second early probe while the first is in flight")
	}
	if _, ok := b.Allow(); ok {
		t.Fatal("Allow while the early probe is in flight")
	}
	probe(okOut)
	wantStates(t, rec, "closed>open", "open>half_open", "half_open>closed")
	if e := rec.all()[1]; e.Cause != "backend's retry-after elapsed, early probe" {
		t.Fatalf("cause %q", e.Cause)
	}
	if _, ok := b.AllowEarly(); ok {
		t.Fatal("AllowEarly on the closed breaker")
	}

	// No Retry-After: no early try, however long it has been open.
	b2, clk2, _ := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b2, fail)
	clk2.Advance(59 * time.Second)
	if _, ok := b2.AllowEarly(); ok {
		t.Fatal("AllowEarly without a RetryAt")
	}
	// A failed early probe reopens for the full trip.
	b3, clk3, _ := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b3, Outcome{Result: Failure, RetryAfter: time.Second})
	clk3.Advance(time.Second)
	d, ok := b3.AllowEarly()
	if !ok {
		t.Fatal("AllowEarly refused")
	}
	d(Outcome{Result: Failure})
	if s := b3.Snapshot(); s.State != Open || !s.Until.Equal(clk3.Now().Add(time.Minute)) || !s.RetryAt.IsZero() {
		t.Fatalf("after a failed early probe: %+v", s)
	}
}

func TestRestoreCarriesTheOpenState(t *testing.T) {
	old, clk, _ := newTest(Settings{Failures: 1, Trip: time.Minute, AcceptRetryAfter: true})
	call(t, old, Outcome{Result: Failure, Throttled: true, RetryAfter: 10 * time.Second})
	snap := old.Snapshot()
	nb := New("b", Settings{Failures: 1, Trip: time.Minute, Clock: clk})
	nb.Restore(snap)
	s := nb.Snapshot()
	if s.State != Open || !s.Until.Equal(snap.Until) || !s.RetryAt.Equal(snap.RetryAt) || !s.Throttled || s.Seq != snap.Seq+1 {
		t.Fatalf("restored %+v from %+v", s, snap)
	}
}

func TestRetireStopsTimersAndEvents(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b, fail)
	d := func() Done { clk.Advance(time.Minute); return allow(t, b) }()
	b.Retire()
	if got := clk.Pending(); got != 0 {
		t.Fatalf("%d timers armed after Retire", got)
	}
	d(fail) // an outcome still in flight: recorded, not emitted
	clk.Advance(time.Hour)
	wantStates(t, rec, "closed>open", "open>half_open")
	if s := b.Snapshot(); s.State != Open {
		t.Fatalf("state %v", s.State)
	}
}

// TestSnapshotNamesTheOpeningClass: the class of the failure that opened
// the breaker is in its snapshot while open and half-open, so a recovery
// probe can be of that class; a forced open has none.
func TestSnapshotNamesTheOpeningClass(t *testing.T) {
	clk := fakeclock.New()
	b := New("weu", Settings{Failures: 1, Trip: time.Minute, Clock: clk})
	done, _ := b.Allow()
	done(Outcome{Result: Failure, Class: "stream"})
	if s := b.Snapshot(); s.State != Open || s.Class != "stream" {
		t.Fatalf("open: %+v", s)
	}
	clk.Advance(time.Minute)
	if s := b.Snapshot(); s.State != HalfOpen || s.Class != "stream" {
		t.Fatalf("half-open: %+v", s)
	}
	b.Force(Open, time.Time{}, KindManual, "operator")
	if s := b.Snapshot(); s.State != Open || s.Class != "" {
		t.Fatalf("forced: %+v", s)
	}
	b.Force(Closed, time.Time{}, KindManual, "operator")
	if s := b.Snapshot(); s.Class != "" {
		t.Fatalf("closed: %+v", s)
	}
}

// TestAdoptTakesAnotherReplicasDecision: an open state adopted from
// elsewhere benches the backend until its Until with a transition marked
// Adopted, never shortens a longer trip, and a followed Retry-After trip
// closes without a probe; adopting Closed closes.
func TestAdoptTakesAnotherReplicasDecision(t *testing.T) {
	clk := fakeclock.New()
	var trs []Transition
	b := New("weu", Settings{Clock: clk, FollowRetryAfter: true, OnTransition: func(tr Transition) { trs = append(trs, tr) }})
	now := clk.Now()
	b.Adopt(Snapshot{State: Open, Until: now.Add(10 * time.Second), RetryAt: now.Add(10 * time.Second), Throttled: true}, KindUnknown, "fleet: 429")
	if s := b.Snapshot(); s.State != Open || !s.Until.Equal(now.Add(10*time.Second)) || !s.Throttled {
		t.Fatalf("adopted %+v", s)
	}
	if len(trs) != 1 || !trs[0].Adopted || trs[0].To != Open {
		t.Fatalf("transitions %+v", trs)
	}
	b.Adopt(Snapshot{State: Open, Until: now.Add(5 * time.Second)}, KindUnknown, "shorter")
	if s := b.Snapshot(); !s.Until.Equal(now.Add(10*time.Second)) || len(trs) != 1 {
		t.Fatalf("a shorter trip was adopted: %+v", s)
	}
	clk.Advance(10 * time.Second)
	if s := b.Snapshot(); s.State != Closed {
		t.Fatalf("after the followed retry-after: %+v, want closed without a probe", s)
	}
	b.Adopt(Snapshot{State: Open, Until: clk.Now().Add(time.Minute)}, KindUnknown, "fleet: 5 failures")
	b.Adopt(Snapshot{State: Closed}, KindUnknown, "fleet: probe succeeded")
	if s := b.Snapshot(); s.State != Closed || !trs[len(trs)-1].Adopted {
		t.Fatalf("closed: %+v %+v", s, trs[len(trs)-1])
	}
}

// TestOnFailureSeesEachFailureOnce: every call's failure reaches
// OnFailure once, a Partial failure not again at the call's end;
// successes and ignored outcomes do not.
func TestOnFailureSeesEachFailureOnce(t *testing.T) {
	var got []string
	b := New("weu", Settings{Clock: fakeclock.New(), Failures: 10, OnFailure: func(o Outcome, _ time.Time) { got = append(got, o.Cause) }})
	for _, o := range []Outcome{{Result: Failure, Cause: "503"}, {Result: Success}, {Result: Ignore}} {
		done, _ := b.Allow()
		done(o)
	}
	done, _ := b.Allow()
	done(Outcome{Result: Failure, Cause: "stream", Partial: true})
	done(Outcome{Result: Failure, Cause: "stream end"})
	if len(got) != 2 || got[0] != "503" || got[1] != "stream" {
		t.Fatalf("failures seen %q", got)
	}
}
