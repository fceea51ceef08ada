package route_test

// Regression tests for issue 22's late detection of a dead region: a
// backend whose calls usually take seconds was found unresponsive only
// after 16 s (the slow threshold is three times its own 95th percentile),
// and a member with no history of its own after 15 s (the flat default).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/route"
)

// learnThenHang is a backend that answers every call after taking d of
// the clock while learning is set, and afterwards hangs every call; each
// arrival and each health check is signalled.
type learnThenHang struct {
	clk              *fakeclock.Clock
	d                time.Duration
	learning         atomic.Bool
	arrived, checked chan struct{}
}

func newLearnThenHang(clk *fakeclock.Clock, d time.Duration) *learnThenHang {
	l := &learnThenHang{clk: clk, d: d, arrived: make(chan struct{}, 64), checked: make(chan struct{}, 64)}
	l.learning.Store(true)
	return l
}

func (l *learnThenHang) step(w http.ResponseWriter, r *http.Request) {
	switch {
	case l.learning.Load():
		l.clk.Advance(l.d)
		answer("weu")(w, r)
	case isHealthCheck(r):
		l.checked <- struct{}{}
		hang(w, r)
	default:
		l.arrived <- struct{}{}
		hang(w, r)
	}
}

// learnThenHangPool is a pool of weu (priority 1), a learnThenHang of 3 s
// calls with a minute's first-byte timeout, and sec (priority 2), which
// answers.
func learnThenHangPool(t *testing.T, clk *fakeclock.Clock) (*env, *learnThenHang) {
	t.Helper()
	weuUp := newLearnThenHang(clk, 3*time.Second)
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{weuUp.step}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	return e, weuUp
}

// TestPileUpOfWaitingCallsGetsASlowBackendChecked: a backend whose calls
// take 3 s has a slow threshold of 9 s, but when it stops answering, the
// calls that pile up waiting past its usual time get it checked as soon as
// there are too many of them for a healthy backend, long before any one
// call is slow enough alone; while the check runs, new calls go to the
// other member; when it fails, the waiting calls fail over.
func TestPileUpOfWaitingCallsGetsASlowBackendChecked(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	e, weuUp := learnThenHangPool(t, clk)
	weu := e.backends["weu"]
	for i := range 10 {
		if resp, _, _ := e.do(t, chatBody); resp.Header.Get(route.HeaderBackend) != "weu" {
			t.Fatalf("learning call %d answered by %q", i, resp.Header.Get(route.HeaderBackend))
		}
	}
	slow := e.pool.SlowAfter(weu, false)
	if slow != 9*time.Second {
		t.Fatalf("slow threshold %v, want 9s (three times a 3s 95th percentile)", slow)
	}
	weuUp.learning.Store(false)

	const n = 4
	var calls []<-chan result
	for range n {
		calls = append(calls, e.goDo(ctx, chatBody))
	}
	for i := range n {
		select {
		case <-weuUp.arrived:
		case <-ctx.Done():
			t.Fatalf("%d of %d calls reached weu", i, n)
		}
	}
	// 3 s on: every call has waited as long as weu's calls take, which a
	// healthy weu would not leave four calls doing at once. No call
	// begins: they are judged again when the first of them passes weu's
	// usual time (a burst of calls, then none, got weu checked only at
	// its 9 s slow threshold).
	clk.Advance(3 * time.Second)
	select {
	case <-weuUp.checked:
	case <-ctx.Done():
		t.Fatal("no health check of weu with four calls waiting past its usual time")
	}
	// While weu is being checked, a new call goes to sec at once.
	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" || len(rep.Attempts) != 1 {
		t.Fatalf("a call during weu's check: %d from %q after %d attempts, want sec first", resp.StatusCode, resp.Header.Get(route.HeaderBackend), len(rep.Attempts))
	}
	check := e.pool.CheckTimeout(weu)
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	for i, ch := range calls {
		res := await(t, ctx, ch)
		if res.err != nil {
			t.Fatalf("request %d: %v", i, res.err)
		}
		if res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" || res.rep.Attempts[0].Reason != route.ReasonUnresponsive {
			t.Fatalf("request %d: %d from %q, attempts %+v", i, res.resp.StatusCode, res.resp.Header.Get(route.HeaderBackend), res.rep.Attempts)
		}
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("weu's breaker %v after its check failed", s.State)
	}
	// The check was a call to weu that no request made: observers are told
	// (a game day takes such calls off the calls per request).
	if ps := e.events.kinds(route.EventProbe); len(ps) != 1 || ps[0].Backend != weu || ps[0].Err == nil || ps[0].Pool != "chat-prod" {
		t.Fatalf("probe events %+v, want one failed check of weu", ps)
	}
}

// TestPileUpJudgedAgainWithNoNewCall: six calls come to a 3 s backend
// half a second apart as it goes dark, and no more. The waiting calls are
// judged again each time one of them passes weu's usual 3 s, so weu is
// checked when the third does, 4 s after the first call, not at the first
// call's 9 s slow threshold. (By hand, the README's config in front of a
// 3 s region blackholed after such a burst benched it only after 15.7 s.)
func TestPileUpJudgedAgainWithNoNewCall(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	e, weuUp := learnThenHangPool(t, clk)
	weu := e.backends["weu"]
	for range 10 {
		e.do(t, chatBody)
	}
	weuUp.learning.Store(false)
	first := clk.Now()
	var calls []<-chan result
	for i := range 6 {
		if i > 0 {
			clk.Advance(500 * time.Millisecond)
		}
		calls = append(calls, e.goDo(ctx, chatBody))
		select {
		case <-weuUp.arrived:
		case <-ctx.Done():
			t.Fatalf("call %d did not reach weu", i)
		}
	}
	for !route.Checking(weu) && clk.Now().Sub(first) < 10*time.Second {
		clk.Advance(100 * time.Millisecond)
	}
	if !route.Checking(weu) {
		t.Fatal("weu not checked 10 s after the first of six calls it left waiting")
	}
	if got := route.CheckBegan(weu).Sub(first); got != 4*time.Second {
		t.Fatalf("weu checked %v after the first call, want 4s (when the third call passed its usual 3 s)", got)
	}
	if err := clk.BlockUntilTimerAt(ctx, route.CheckBegan(weu).Add(e.pool.CheckTimeout(weu))); err != nil {
		t.Fatal(err)
	}
	clk.Advance(e.pool.CheckTimeout(weu))
	for i, ch := range calls {
		if res := await(t, ctx, ch); res.err != nil || res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
			t.Fatalf("request %d: %v, %+v", i, res.err, res.resp)
		}
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("weu's breaker %v after its check failed", s.State)
	}
}

// TestNewMemberJudgedFromPeersLatency: a member that has never answered
// (a fallback, or any member of a fleet just started) is judged by what
// its pool peers take, not by the flat 15 s threshold and 5 s check: a
// hung fallback is checked after 3 s and benched 2 s later, as its peer
// would be.
func TestNewMemberJudgedFromPeersLatency(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	probed, arrived := make(chan struct{}, 8), make(chan struct{}, 8)
	hung := hangTelling(probed, arrived)
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
		memberSpec{name: "sec", priority: 2, script: []step{hung}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "uks", priority: 3, script: []step{answer("uks")}},
	)
	weu, sec := e.backends["weu"], e.backends["sec"]
	if got, want := e.pool.SlowAfter(sec, false), 15*time.Second; got != want {
		t.Fatalf("slow threshold %v with no history anywhere, want the default %v", got, want)
	}
	for range 8 {
		e.do(t, chatBody) // weu answers at once: its peers' history
	}
	slow, check := e.pool.SlowAfter(sec, false), e.pool.CheckTimeout(sec)
	if slow != 3*time.Second || check != 2*time.Second {
		t.Fatalf("sec, never tried: slow threshold %v and check timeout %v, want its peer's 3s and 2s", slow, check)
	}
	if sec.SlowAfter(false) != 15*time.Second || sec.CheckTimeout() != 5*time.Second {
		t.Fatalf("sec alone: %v and %v, want the defaults", sec.SlowAfter(false), sec.CheckTimeout())
	}
	weu.Breaker.Force(breaker.Open, time.Time{}, breaker.KindManual, "test: weu out")
	call := e.goDo(ctx, chatBody)
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the call did not reach sec")
	}
	clk.Advance(slow)
	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("no health check of sec after its peers' slow threshold")
	}
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	res := await(t, ctx, call)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.resp.Header.Get(route.HeaderBackend) != "uks" || res.rep.Attempts[0].Reason != route.ReasonUnresponsive {
		t.Fatalf("%d from %q, attempts %+v: want sec unresponsive after 5s, then uks", res.resp.StatusCode, res.resp.Header.Get(route.HeaderBackend), res.rep.Attempts)
	}
}

// TestBackendUnderCheckTakesNoNewCalls: while a health check decides
// whether a backend whose call went unanswered is alive, new calls go to
// another member that can take them; when the check passes, the backend
// takes calls again.
func TestBackendUnderCheckTakesNoNewCalls(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	probed, release := make(chan struct{}, 8), make(chan struct{})
	slowCheck := func(w http.ResponseWriter, r *http.Request) {
		if isHealthCheck(r) {
			probed <- struct{}{}
			<-release
			answer("weu")(w, r)
			return
		}
		hang(w, r)
	}
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{slowCheck}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	weu := e.backends["weu"]
	call := e.goDo(ctx, chatBody)
	if err := clk.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(e.pool.SlowAfter(weu, false))
	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("no health check after the slow threshold")
	}
	resp, rep, _ := e.do(t, chatBody)
	if resp.Header.Get(route.HeaderBackend) != "sec" || len(rep.Attempts) != 1 {
		t.Fatalf("a call during weu's check: answered by %q after %d attempts, want sec at once", resp.Header.Get(route.HeaderBackend), len(rep.Attempts))
	}
	e.ups["weu"].SetScript(answer("weu"))
	close(release)
	poll.Until(t, 10*time.Second, func() bool {
		resp, _, _ := e.do(t, chatBody)
		return resp.Header.Get(route.HeaderBackend) == "weu"
	}, func() string { return "after a passing check, calls still go to sec" })
	if s := weu.Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("weu's breaker %v after a passing check", s.State)
	}
	clk.Advance(time.Minute)
	if res := await(t, ctx, call); res.err != nil {
		t.Fatal(res.err)
	}
}

// gated is a backend that answers its learning calls after moving the
// clock by the next of its times, then, once dark, holds every call and
// health check until the test releases it (a release channel is sent on
// arrived or checked) or the call is abandoned.
type gated struct {
	clk              *fakeclock.Clock
	times            []time.Duration
	next             atomic.Int64
	dark             atomic.Bool
	arrived, checked chan chan struct{}
	done             chan struct{} // closed at the end of the test: every held call ends
}

func newGated(clk *fakeclock.Clock, times []time.Duration) *gated {
	return &gated{clk: clk, times: times, arrived: make(chan chan struct{}, 64), checked: make(chan chan struct{}, 64), done: make(chan struct{})}
}

func (g *gated) step(w http.ResponseWriter, r *http.Request) {
	if !g.dark.Load() {
		g.clk.Advance(g.times[int(g.next.Add(1)-1)%len(g.times)])
		answer("weu")(w, r)
		return
	}
	rel := make(chan struct{})
	if isHealthCheck(r) {
		g.checked <- rel
	} else {
		g.arrived <- rel
	}
	select {
	case <-rel:
		answer("weu")(w, r)
	case <-g.done:
	case <-r.Context().Done():
	}
}

// darkUntilChecked sends a call every 500 ms of the clock to a pool
// whose weu has just gone dark (g), until weu is under a health check,
// and returns the calls and their releases at weu once the check's
// timers are armed. The check may have begun between two calls, when the
// calls waiting were judged again (see pileUp): the clock may read a
// little past its start (route.CheckBegan).
func darkUntilChecked(t *testing.T, ctx context.Context, e *env, g *gated) ([]<-chan result, []chan struct{}) {
	t.Helper()
	weu := e.backends["weu"]
	timeout := e.pool.CheckTimeout(weu)
	var calls []<-chan result
	var held []chan struct{}
	for range 40 {
		calls = append(calls, e.goDo(ctx, chatBody))
		select {
		case rel := <-g.arrived:
			held = append(held, rel)
		case <-ctx.Done():
			t.Fatalf("call %d did not reach weu", len(calls))
		}
		if !route.Checking(weu) {
			e.clock.Advance(500 * time.Millisecond)
		}
		if route.Checking(weu) {
			if err := e.clock.BlockUntilTimerAt(ctx, route.CheckBegan(weu).Add(timeout)); err != nil {
				t.Fatal(err)
			}
			return calls, held
		}
	}
	t.Fatalf("no health check of weu after %d calls", len(calls))
	return nil, nil
}

// TestSlowMedianBackendGoneDarkBenchedWithinTenSeconds (issue 22): a
// primary whose calls take 3 s at the median (spread 0.3) went dark; its
// piled-up calls got it checked about 5 s later, and the check, whose
// timeout its 3 s answers had taken to the 10 s cap, benched it only
// 15.5 s after it went dark; the same on a fleet just started, with eight
// answers to go by. Now the check fails as soon as neither it nor any of
// the calls waiting on weu has answered for longer than weu answering as
// it did would plausibly leave them all: weu is benched, and its waiting
// calls failed over, within 10 s of going dark.
func TestSlowMedianBackendGoneDarkBenchedWithinTenSeconds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers int
	}{{"64 answers", 64}, {"a fleet just started: 8 answers", 8}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := safety(t)
			clk := fakeclock.New()
			g := newGated(clk, route.LognormalTimes(tc.answers, 3*time.Second, 0.3))
			e := newEnvClock(t, clk,
				memberSpec{name: "weu", priority: 1, script: []step{g.step}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			t.Cleanup(func() { close(g.done) })
			weu := e.backends["weu"]
			for i := range tc.answers {
				if resp, _, _ := e.do(t, chatBody); resp.Header.Get(route.HeaderBackend) != "weu" {
					t.Fatalf("learning call %d answered by %q", i, resp.Header.Get(route.HeaderBackend))
				}
			}
			if got := e.pool.CheckTimeout(weu); got != 10*time.Second {
				t.Fatalf("check timeout %v, want the 10s cap (four times weu's 95th percentile)", got)
			}
			g.dark.Store(true)
			dark := clk.Now()
			calls, _ := darkUntilChecked(t, ctx, e, g)
			checked := clk.Now()
			// The check's own timeout would end it 10 s from now, past
			// dark + 10 s: the clock stops there, and weu must be benched.
			for clk.Now().Before(dark.Add(10 * time.Second)) {
				calls = append(calls, e.goDo(ctx, chatBody)) // to sec while weu is checked
				clk.Advance(min(500*time.Millisecond, dark.Add(10*time.Second).Sub(clk.Now())))
			}
			poll.Until(t, 10*time.Second, func() bool { return weu.Breaker.Snapshot().State == breaker.Open },
				func() string {
					return fmt.Sprintf("weu not benched 10 s after going dark (checked %v after)", checked.Sub(dark))
				})
			for i, ch := range calls {
				res := await(t, ctx, ch)
				if res.err != nil || res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
					t.Fatalf("request %d: %v, %+v", i, res.err, res.resp)
				}
			}
			ev := e.events.kinds(route.EventUnresponsive)
			if len(ev) != 1 || !strings.Contains(ev[0].Err.Error(), "no answer to it nor to any of") {
				t.Fatalf("unresponsive events %+v, want one from the silence rule", ev)
			}
		})
	}
}

// TestSlowBackendAnsweringDuringCheckIsNotBenched: a 3 s backend whose
// calls piled up got it checked, and the check takes 6 s, but one of the
// calls waiting on it answers half a second into the check: it is alive,
// so the silence of its other calls does not end the check, which passes.
func TestSlowBackendAnsweringDuringCheckIsNotBenched(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	g := newGated(clk, route.LognormalTimes(64, 3*time.Second, 0.3))
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{g.step}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	t.Cleanup(func() { close(g.done) })
	weu := e.backends["weu"]
	for range 64 {
		e.do(t, chatBody)
	}
	g.dark.Store(true)
	calls, held := darkUntilChecked(t, ctx, e, g)
	var check chan struct{}
	select {
	case check = <-g.checked:
	case <-ctx.Done():
		t.Fatal("the health check did not reach weu")
	}
	clk.Advance(500 * time.Millisecond)
	close(held[0])
	if res := await(t, ctx, calls[0]); res.err != nil || res.resp.Header.Get(route.HeaderBackend) != "weu" {
		t.Fatalf("the released call: %v, %+v", res.err, res.resp)
	}
	for range 11 {
		clk.Advance(500 * time.Millisecond)
	}
	close(check)
	poll.Until(t, 10*time.Second, func() bool { return !route.Checking(weu) }, func() string { return "the check did not end" })
	if s := weu.Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("weu %v after a passing check, with a call answered during it", s.State)
	}
	if ev := e.events.kinds(route.EventUnresponsive); len(ev) != 0 {
		t.Fatalf("unresponsive events %+v", ev)
	}
}

// TestWaitingStreamsGetAStreamedCheck: a backend whose plain calls answer
// at once but whose streams send only keep-alive comments is checked with
// a stream when a stream calls for the check, so the check fails, the
// backend is benched and the waiting stream fails over; a stream's headers
// arriving while the check waits are no sign of life (its first event
// would be). (A soak of the README's config lost a hundred streams to such
// a region: each waited out its 10 s first-byte timeout, the plain check
// having passed.)
func TestWaitingStreamsGetAStreamedCheck(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	seen := newBodyRead(t)
	var e *env
	checks := make(chan string, 4)
	checkBegan := make(chan struct{})
	keepalive := func(w http.ResponseWriter, r *http.Request) {
		u := e.ups["weu"]
		body := u.Body(u.Calls() - 1)
		if isHealthCheck(r) {
			checks <- body
			if !strings.Contains(body, `"stream":true`) {
				answer("weu")(w, r) // plain calls are answered
				return
			}
			close(checkBegan)
		} else {
			// The stream's headers come while the check waits.
			select {
			case <-checkBegan:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": keep-alive\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	e = newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{keepalive}, tune: func(b *route.Backend) {
			b.StreamFirstByteTimeout, b.Transport = time.Minute, seen
		}},
		memberSpec{name: "sec", priority: 2, script: []step{sse("sec", 2, -1)}},
	)
	weu := e.backends["weu"]
	call := e.goDo(ctx, streamBody)
	slow := e.pool.SlowAfter(weu, true)
	if err := clk.BlockUntilTimer(ctx, slow); err != nil {
		t.Fatal(err)
	}
	clk.Advance(slow)
	select {
	case body := <-checks:
		if !strings.Contains(body, `"stream":true`) {
			t.Fatalf("a waiting stream's check was not streamed: %s", body)
		}
	case <-ctx.Done():
		t.Fatal("no health check past the slow threshold")
	}
	// The stream and the check both have their headers and a comment, and
	// wait for more.
	for range 2 {
		select {
		case <-seen.waiting:
		case <-ctx.Done():
			t.Fatal("the stream and the check never waited past their comments")
		}
	}
	check := e.pool.CheckTimeout(weu)
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	res := await(t, ctx, call)
	if res.err != nil || res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("the waiting stream: %v, %v, %q", res.err, res.resp, res.body)
	}
	if a := res.rep.Attempts; len(a) != 2 || a[0].Reason != route.ReasonUnresponsive {
		t.Fatalf("attempts %+v, want weu found unresponsive, then sec", a)
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("weu %v after its streamed check failed", s.State)
	}
}
