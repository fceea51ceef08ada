package route_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// slowUntilCancelled is a step that says when its call arrived and when
// the caller cancelled it, and never answers.
func slowUntilCancelled(arrived, cancelled chan<- struct{}) step {
	return func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	}
}

// answerWhenReleased is a step that says when its call arrived and
// answers once release is closed.
func answerWhenReleased(name string, arrived chan<- struct{}, release <-chan struct{}) step {
	return func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		answer(name)(w, r)
	}
}

// answerAfter is a step that moves the clock by d, then answers: the call
// took d to its first byte, as the engine's clock sees it.
func answerAfter(c *fakeclock.Clock, name string, d time.Duration) step {
	return func(w http.ResponseWriter, r *http.Request) {
		c.Advance(d)
		answer(name)(w, r)
	}
}

// within bounds a wait for something the engine does at once, so that a
// regression fails instead of hanging the suite.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// hedgedPool is a pool of a slow-prone first region and a second, hedged
// after delay, every request if need be (Share 1).
func hedgedPool(t *testing.T, delay time.Duration, first, second []step) *env {
	e := newEnv(t, memberSpec{name: "uks", priority: 1, script: first}, memberSpec{name: "swc", priority: 2, script: second})
	e.pool.Hedge = &route.Hedge{Delay: delay, Share: 1}
	return e
}

// unharmed fails the test if backend name's breaker counted anything.
func unharmed(t *testing.T, e *env, name string) {
	t.Helper()
	if s := e.backends[name].Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
		t.Errorf("%s's breaker counted the cancelled attempt: %+v", name, s)
	}
}

// TestHedgeAnswersWhenFirstIsSlow: a first attempt that has no first byte
// when the hedge delay is up gets a hedge on the next member; the hedge's
// answer is passed on, the slow attempt is cancelled at once, and its
// backend's breaker is not told.
func TestHedgeAnswersWhenFirstIsSlow(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	e := hedgedPool(t, time.Second, []step{slowUntilCancelled(arrived, cancelled)}, []step{answer("swc")})
	res := e.goDo(t.Context(), chatBody)
	within(t, arrived, "the first call")
	if err := e.clock.BlockUntilTimer(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	r := await(t, t.Context(), res)
	within(t, cancelled, "the slow call's cancellation")
	if r.err != nil || r.resp.StatusCode != 200 || r.resp.Header.Get(route.HeaderBackend) != "swc" {
		t.Fatalf("got %v %+v", r.err, r.resp)
	}
	if h := r.resp.Header.Get(route.HeaderHedge); h != "hedge" {
		t.Errorf("%s: %q, want hedge", route.HeaderHedge, h)
	}
	if r.rep.Hedge != route.HedgeWon || len(r.rep.Attempts) != 2 {
		t.Fatalf("report %+v", r.rep)
	}
	first, hedge := r.rep.Attempts[0], r.rep.Attempts[1]
	if first.Backend != "uks" || first.Reason != route.ReasonOutpaced || !first.Abandoned || first.Hedge {
		t.Errorf("first attempt %+v", first)
	}
	if hedge.Backend != "swc" || hedge.Reason != route.ReasonOK || !hedge.Hedge {
		t.Errorf("hedge %+v", hedge)
	}
	if !r.rep.Failover || r.rep.FailoverReason != route.ReasonOutpaced {
		t.Errorf("failover %v %q: answered by another region than the first choice", r.rep.Failover, r.rep.FailoverReason)
	}
	unharmed(t, e, "uks")
	if ev := e.events.kinds(route.EventHedge); len(ev) != 1 || ev[0].Hedge != route.HedgeWon || ev[0].Backend.Name != "swc" || ev[0].From != "uks" {
		t.Errorf("hedge events %+v", ev)
	}
}

// TestHedgeIsCancelledWhenFirstAnswers: when the first attempt answers
// after its hedge was sent, the first is passed on and the hedge is
// cancelled, not counted against its backend.
func TestHedgeIsCancelledWhenFirstAnswers(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	hedgeArrived, hedgeCancelled := make(chan struct{}), make(chan struct{})
	e := hedgedPool(t, time.Second, []step{answerWhenReleased("uks", arrived, release)}, []step{slowUntilCancelled(hedgeArrived, hedgeCancelled)})
	res := e.goDo(t.Context(), chatBody)
	within(t, arrived, "the first call")
	if err := e.clock.BlockUntilTimer(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	within(t, hedgeArrived, "the hedge")
	close(release)
	r := await(t, t.Context(), res)
	within(t, hedgeCancelled, "the hedge's cancellation")
	if r.err != nil || r.resp.Header.Get(route.HeaderBackend) != "uks" || r.resp.Header.Get(route.HeaderHedge) != "primary" {
		t.Fatalf("got %v %v", r.err, r.resp.Header)
	}
	if r.body == "" || r.rep.Failover {
		t.Errorf("body %q failover %v: the first choice answered", r.body, r.rep.Failover)
	}
	if len(r.rep.Attempts) != 2 || r.rep.Attempts[1].Reason != route.ReasonOutpaced || !r.rep.Attempts[1].Hedge {
		t.Fatalf("attempts %+v", r.rep.Attempts)
	}
	unharmed(t, e, "swc")
}

// TestHedgedStreamPassesTheWinnersEvents: a stream is hedged on its first
// event; the winner's stream reaches the client whole.
func TestHedgedStreamPassesTheWinnersEvents(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	e := hedgedPool(t, time.Second, []step{slowUntilCancelled(arrived, cancelled)}, []step{sse("swc", 3, -1)})
	res := e.goDo(t.Context(), streamBody)
	within(t, arrived, "the first call")
	if err := e.clock.BlockUntilTimer(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	r := await(t, t.Context(), res)
	within(t, cancelled, "the slow stream's cancellation")
	if r.err != nil || r.resp.Header.Get(route.HeaderHedge) != "hedge" {
		t.Fatalf("got %v %+v", r.err, r.resp)
	}
	for _, want := range []string{"swc-0", "swc-1", "swc-2", "[DONE]"} {
		if !strings.Contains(r.body, want) {
			t.Fatalf("stream %q lacks %q", r.body, want)
		}
	}
	unharmed(t, e, "uks")
}

// TestNoHedgeWhenTheFirstByteComesInTime: an attempt that answers within
// the delay sends no hedge, and its timer does not fire later.
func TestNoHedgeWhenTheFirstByteComesInTime(t *testing.T) {
	e := hedgedPool(t, time.Second, nil, []step{answer("swc")})
	e.ups["uks"].SetScript(answerAfter(e.clock, "uks", 900*time.Millisecond))
	resp, rep, _ := e.do(t, chatBody)
	e.clock.Advance(time.Minute)
	if resp.Header.Get(route.HeaderHedge) != "" || rep.Hedge != "" || len(rep.Attempts) != 1 || e.ups["swc"].Calls() != 0 {
		t.Fatalf("hedge %q/%q, %d attempts, %d hedge calls", resp.Header.Get(route.HeaderHedge), rep.Hedge, len(rep.Attempts), e.ups["swc"].Calls())
	}
}

// answerAfterHedge is a step that waits until the hedge's timer (the
// pools here hedge after hedgeDelay) is armed, moves the clock by d (past
// the hedge delay), waits until the engine has acted on it (decided
// receives once the hedge was sent or refused), then answers. Advancing
// before the timer is armed would pass its instant unseen on a busy
// machine, and the step would wait for a decision that never comes.
func answerAfterHedge(c *fakeclock.Clock, name string, d time.Duration, decided <-chan struct{}) step {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.BlockUntilTimer(r.Context(), hedgeDelay) != nil {
			return
		}
		c.Advance(d)
		select {
		case <-decided:
		case <-r.Context().Done():
			return
		}
		answer(name)(w, r)
	}
}

// hedgeDelay is the fixed hedge delay of the pools answerAfterHedge
// serves.
const hedgeDelay = time.Second

// signalling is a step that sends on ch when its call arrives, then
// answers.
func signalling(name string, ch chan<- struct{}) step {
	return func(w http.ResponseWriter, r *http.Request) {
		ch <- struct{}{}
		answer(name)(w, r)
	}
}

// TestHedgeOnlyWithoutSideEffects: a Responses call (which stores what it
// makes) is never hedged, however slow; a chat call as slow is.
func TestHedgeOnlyWithoutSideEffects(t *testing.T) {
	for _, tc := range []struct {
		op     route.Operation
		body   string
		hedged bool
	}{
		{route.ChatCompletions, chatBody, true},
		{route.Responses, `{"model":"chat-prod","input":"hi"}`, false},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			sent := make(chan struct{}, 1)
			e := hedgedPool(t, time.Second, nil, []step{signalling("swc", sent)})
			if tc.hedged {
				e.ups["uks"].SetScript(answerAfterHedge(e.clock, "uks", 2*time.Second, sent))
			} else {
				e.ups["uks"].SetScript(answerAfter(e.clock, "uks", 2*time.Second))
			}
			r, err := route.NewRequest(tc.op, []byte(tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, rep, err := e.pool.Do(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := rep.Hedge != ""; got != tc.hedged {
				t.Fatalf("hedged %v (%q), want %v", got, rep.Hedge, tc.hedged)
			}
			if !tc.hedged && e.ups["swc"].Calls() != 0 {
				t.Fatalf("%d calls to the second region", e.ups["swc"].Calls())
			}
		})
	}
}

// TestHedgeBudgetBoundsHedges: hedges are at most Share of the pool's
// requests: with 0.1, the 11th request (1.1 hedges deposited) is hedged,
// the 12th (0.2 left) is not, and the refusal is reported.
func TestHedgeBudgetBoundsHedges(t *testing.T) {
	e := hedgedPool(t, time.Second, nil, nil)
	e.pool.Hedge.Share = 0.1
	decided := make(chan struct{}, 2)
	e.pool.Observer = route.ObserverFunc(func(ev route.Event) {
		e.events.Observe(ev)
		if ev.Kind == route.EventHedge && ev.Hedge == route.HedgeRefused {
			decided <- struct{}{}
		}
	})
	var script []step
	for range 10 {
		script = append(script, answer("uks"))
	}
	script = append(script, answerAfterHedge(e.clock, "uks", 2*time.Second, decided), answerAfterHedge(e.clock, "uks", 2*time.Second, decided))
	e.ups["uks"].SetScript(script...)
	e.ups["swc"].SetScript(signalling("swc", decided))
	hedges := 0
	for i := range 12 {
		_, rep, _ := e.do(t, chatBody)
		for _, a := range rep.Attempts {
			if a.Hedge {
				hedges++
			}
		}
		if got := rep.Hedge != ""; got != (i == 10) {
			t.Fatalf("request %d: hedge %q", i+1, rep.Hedge)
		}
	}
	if hedges != 1 {
		t.Fatalf("%d hedges, want 1", hedges)
	}
	refused := 0
	for _, ev := range e.events.kinds(route.EventHedge) {
		if ev.Hedge == route.HedgeRefused {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d refusals reported, want 1", refused)
	}
}

// TestHedgeDelayIsLearned: with no fixed delay, a backend is hedged at the
// quantile of its own recent times to first byte (here the 90th), and not
// at all before it has answered enough calls (8) to know it.
func TestHedgeDelayIsLearned(t *testing.T) {
	e := newEnv(t, memberSpec{name: "uks", priority: 1}, memberSpec{name: "swc", priority: 2, script: []step{answer("swc")}})
	e.pool.Hedge = &route.Hedge{Share: 1, Quantile: 0.9}
	var script []step
	for i := range 8 {
		script = append(script, answerAfter(e.clock, "uks", time.Duration(i+1)*100*time.Millisecond))
	}
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	script = append(script, slowUntilCancelled(arrived, cancelled))
	e.ups["uks"].SetScript(script...)
	for i := range 8 {
		if _, rep, _ := e.do(t, chatBody); rep.Hedge != "" || e.ups["swc"].Calls() != 0 {
			t.Fatalf("request %d hedged (%q) while the delay is learned", i+1, rep.Hedge)
		}
	}
	res := e.goDo(t.Context(), chatBody)
	within(t, arrived, "the slow call")
	// 100 ms to 800 ms: the nearest-rank 90th percentile of eight is the
	// 8th (ceil(7.2)).
	if err := e.clock.BlockUntilTimer(t.Context(), 800*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(800 * time.Millisecond)
	r := await(t, t.Context(), res)
	if r.err != nil || r.rep.Hedge != route.HedgeWon {
		t.Fatalf("got %v %+v", r.err, r.rep)
	}
}

// TestHedgedRequestWhoseClientLeaves: when the client goes away during a
// hedged request, both attempts are cancelled and neither backend is
// blamed.
func TestHedgedRequestWhoseClientLeaves(t *testing.T) {
	a1, c1 := make(chan struct{}), make(chan struct{})
	a2, c2 := make(chan struct{}), make(chan struct{})
	e := hedgedPool(t, time.Second, []step{slowUntilCancelled(a1, c1)}, []step{slowUntilCancelled(a2, c2)})
	ctx, cancel := context.WithCancel(t.Context())
	res := e.goDo(ctx, chatBody)
	within(t, a1, "the first call")
	if err := e.clock.BlockUntilTimer(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	within(t, a2, "the hedge")
	cancel()
	r := await(t, t.Context(), res)
	within(t, c1, "the first call's cancellation")
	within(t, c2, "the hedge's cancellation")
	if r.err == nil {
		t.Fatalf("answered %+v after the client left", r.resp)
	}
	unharmed(t, e, "uks")
	unharmed(t, e, "swc")
}

// TestHedgeThenBothFailFallsBackToRetries: when both the first attempt
// and its hedge fail, the request goes on to the pool's next member as
// any retry would.
func TestHedgeThenBothFailGoesOnToTheNextMember(t *testing.T) {
	arrived, release, hedgeFailed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	e := newEnv(t,
		memberSpec{name: "uks", priority: 1, script: []step{func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-release
			status(503)(w, r)
		}}},
		memberSpec{name: "swc", priority: 2, script: []step{func(w http.ResponseWriter, r *http.Request) {
			status(503)(w, r)
			close(hedgeFailed)
		}}},
		memberSpec{name: "weu", priority: 3, script: []step{answer("weu")}},
	)
	e.pool.Hedge = &route.Hedge{Delay: time.Second, Share: 1}
	res := e.goDo(t.Context(), chatBody)
	within(t, arrived, "the first call")
	if err := e.clock.BlockUntilTimer(t.Context(), time.Second); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	// The hedge fails at once; the first is still waiting, then fails.
	within(t, hedgeFailed, "the hedge's failure")
	close(release)
	r := await(t, t.Context(), res)
	if r.err != nil || r.resp.Header.Get(route.HeaderBackend) != "weu" || r.rep.Hedge != route.HedgeNeither || len(r.rep.Attempts) != 3 {
		t.Fatalf("got %v %+v", r.err, r.rep)
	}
}

// firingOnStop is a fake clock whose timers of duration d fire as they
// are stopped, as a real timer may: its callback already under way in its
// own goroutine when Stop is called.
type firingOnStop struct {
	*fakeclock.Clock
	d time.Duration
}

func (c firingOnStop) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.Clock.AfterFunc(d, f)
	if d != c.d {
		return t
	}
	return &firesOnStop{Timer: t, f: f}
}

type firesOnStop struct {
	clock.Timer
	f func()
}

// Stop fires the timer if it was still pending: it was too late to stop.
func (t *firesOnStop) Stop() bool {
	if t.Timer.Stop() {
		t.f()
	}
	return false
}

// TestHedgeTimerFiringAsItIsStoppedIsHarmless: a first attempt whose first
// byte comes just as the hedge delay is up stops the hedge's timer while
// the timer fires. The timer's callback closed the race's channel
// variable, which the race sets to nil before it stops the timer: "close
// of nil channel", a panic in the timer's goroutine that ended the
// process. It now closes the channel it was made for, which no one waits
// on any more; no hedge is sent.
func TestHedgeTimerFiringAsItIsStoppedIsHarmless(t *testing.T) {
	const delay = 1234 * time.Millisecond
	e := hedgedPool(t, delay, []step{answer("uks")}, []step{answer("swc")})
	e.pool.Clock = firingOnStop{Clock: e.clock, d: delay}
	resp, rep, body := e.do(t, chatBody)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "uks") || len(rep.Attempts) != 1 || rep.Hedge != "" {
		t.Fatalf("status %d, %d attempts, hedge %q, body %s", resp.StatusCode, len(rep.Attempts), rep.Hedge, body)
	}
	if n := e.ups["swc"].Calls(); n != 0 {
		t.Fatalf("the hedge's backend got %d calls", n)
	}
}

// TestHedgeDelayFollowsTheShare: with no quantile set, a backend is hedged
// at the quantile its share of hedges allows (1 - Share): with a share of
// 0.25, past the 75th percentile of its recent times to first byte, not
// the 90th, so that the budget buys the earliest hedge it can pay for.
func TestHedgeDelayFollowsTheShare(t *testing.T) {
	for _, tc := range []struct {
		name            string
		share, quantile float64
		want            time.Duration // of first bytes 0, 0, 100 ms to 800 ms, nearest rank of ten
	}{
		{"share 0.25: p75", 0.25, 0, 600 * time.Millisecond},
		{"default share 0.1: p90", 0, 0, 700 * time.Millisecond},
		{"share 0.25, after p50: the quantile set", 0.25, 0.5, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hedged := make(chan struct{}, 1)
			e := newEnv(t, memberSpec{name: "uks", priority: 1}, memberSpec{name: "swc", priority: 2, script: []step{signalling("swc", hedged)}})
			e.pool.Hedge = &route.Hedge{Share: tc.share, Quantile: tc.quantile}
			var script []step
			for i := range 8 {
				script = append(script, answerAfter(e.clock, "uks", time.Duration(i+1)*100*time.Millisecond))
			}
			// Two at once (the delay known, before it is up), so that the
			// budget has a hedge at the default share: 10 requests.
			script = append(script, answer("uks"), answer("uks"))
			arrived, cancelled := make(chan struct{}), make(chan struct{})
			script = append(script, slowUntilCancelled(arrived, cancelled))
			e.ups["uks"].SetScript(script...)
			for range 10 {
				e.do(t, chatBody)
			}
			res := e.goDo(t.Context(), chatBody)
			within(t, arrived, "the slow call")
			if err := e.clock.BlockUntilTimer(t.Context(), tc.want); err != nil {
				t.Fatal(err)
			}
			// Not a hair before the delay; at it.
			e.clock.Advance(tc.want - time.Millisecond)
			if n := e.ups["swc"].Calls(); n != 0 {
				t.Fatalf("hedged before %v", tc.want)
			}
			e.clock.Advance(time.Millisecond)
			within(t, hedged, "the hedge")
			r := await(t, t.Context(), res)
			if r.err != nil || r.rep.Hedge != route.HedgeWon {
				t.Fatalf("got %v %+v", r.err, r.rep)
			}
		})
	}
}

// TestHedgeBudgetAtALowRateKeepsWholeHedges is the regression test for a
// hedge budget left unspent at a low request rate (7% of requests hedged
// of 10% allowed, at 4 requests a second): counted over 10 seconds, the
// budget held a few hedges at most, and two slow requests close together
// were refused one. Counted over the last 500 requests, two slow requests
// a second apart after 28 quick ones at one a second are both hedged (3
// allowed), and the share still holds: a fourth slow one is refused.
func TestHedgeBudgetAtALowRateKeepsWholeHedges(t *testing.T) {
	e := hedgedPool(t, time.Second, nil, nil)
	e.pool.Hedge.Share = 0.1
	decided := make(chan struct{}, 4)
	e.pool.Observer = route.ObserverFunc(func(ev route.Event) {
		e.events.Observe(ev)
		if ev.Kind == route.EventHedge && ev.Hedge == route.HedgeRefused {
			decided <- struct{}{}
		}
	})
	var script []step
	for range 28 {
		script = append(script, answer("uks"))
	}
	for range 4 {
		script = append(script, answerAfterHedge(e.clock, "uks", 2*time.Second, decided))
	}
	e.ups["uks"].SetScript(script...)
	e.ups["swc"].SetScript(signalling("swc", decided))
	var got []string
	for i := range 32 {
		_, rep, _ := e.do(t, chatBody)
		if i >= 28 {
			got = append(got, map[bool]string{true: "hedged", false: "refused"}[rep.Hedge != ""])
		}
		e.clock.Advance(time.Second)
	}
	// 30 requests allow 3 hedges, 32 allow 3.2: the last is refused.
	if want := "[hedged hedged hedged refused]"; fmt.Sprint(got) != want {
		t.Fatalf("slow requests 29 to 32: %v, want %s", got, want)
	}
}
