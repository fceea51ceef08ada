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
	b.Force(Open, time.Time{}, "manual")
	s := b.Snapshot()
	if s.State != Open || !s.Until.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("forced open: %+v", s)
	}
	b.Force(Closed, time.Time{}, "manual")
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
