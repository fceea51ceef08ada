package route_test

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// budgetOp is one call on a RetryBudget at t0+at: n requests, or n tries
// to retry of which want succeed.
type budgetOp struct {
	at       time.Duration
	requests int
	retries  int
	want     int // retries allowed of retries
	avail    int // Available after the op
}

func TestRetryBudgetArithmetic(t *testing.T) {
	noFloor := -1.0
	tests := []struct {
		name   string
		budget *route.RetryBudget
		ops    []budgetOp
	}{
		{"a fifth of requests, no floor", &route.RetryBudget{Ratio: 0.2, MinPerSecond: noFloor}, []budgetOp{
			{at: 0, avail: 0},
			{at: 0, retries: 1, want: 0},
			{at: 0, requests: 4, avail: 0}, // 0.8 of a retry
			{at: 0, requests: 1, avail: 1},
			{at: time.Second, requests: 5, avail: 2},
			{at: 2 * time.Second, retries: 3, want: 2, avail: 0},
			{at: 2 * time.Second, requests: 4, avail: 0},
			{at: 2 * time.Second, requests: 1, avail: 1},
		}},
		{"a refused retry withdraws nothing", &route.RetryBudget{Ratio: 0.5, MinPerSecond: noFloor}, []budgetOp{
			{at: 0, requests: 3, avail: 1},
			{at: 0, retries: 5, want: 1, avail: 0},
			{at: 0, requests: 1, avail: 1},
		}},
		{"ratio to a thousandth", &route.RetryBudget{Ratio: 0.333, MinPerSecond: noFloor}, []budgetOp{
			{at: 0, requests: 3, avail: 0}, // 0.999
			{at: 0, requests: 1, avail: 1},
		}},
		{"deposits leave the window", &route.RetryBudget{Ratio: 0.2, MinPerSecond: noFloor, Window: 10 * time.Second}, []budgetOp{
			{at: 0, requests: 10, avail: 2},
			{at: 0, retries: 2, want: 2, avail: 0},
			{at: 5 * time.Second, requests: 10, avail: 2},
			{at: 10*time.Second - 1, avail: 2},
			// t0's slot leaves: its 10 requests and its 2 retries
			{at: 10 * time.Second, avail: 2},
			{at: 15*time.Second - 1, avail: 2},
			{at: 15 * time.Second, avail: 0},
		}},
		{"withdrawals leave the window", &route.RetryBudget{Ratio: 1, MinPerSecond: noFloor, Window: 10 * time.Second}, []budgetOp{
			{at: 0, requests: 4, avail: 4},
			{at: 3 * time.Second, requests: 4, avail: 8},
			{at: 3 * time.Second, retries: 8, want: 8, avail: 0},
			// t0's deposits leave, t0+3s's withdrawals stay: in debt
			{at: 10 * time.Second, requests: 2, avail: 0},
			{at: 13 * time.Second, avail: 2},
		}},
		{"a slot is a tenth of the window", &route.RetryBudget{Ratio: 1, MinPerSecond: noFloor, Window: time.Second}, []budgetOp{
			{at: 0, requests: 1, avail: 1},
			{at: 50 * time.Millisecond, requests: 1, avail: 2},
			{at: 99 * time.Millisecond, requests: 1, avail: 3},
			{at: time.Second - 1, avail: 3},
			{at: time.Second, requests: 1, avail: 1},
		}},
		{"a long idle gap forgets everything", &route.RetryBudget{Ratio: 1, MinPerSecond: noFloor}, []budgetOp{
			{at: 0, requests: 7, avail: 7},
			{at: time.Hour, avail: 0},
			{at: time.Hour, requests: 1, avail: 1},
		}},
		{"a clock that steps back counts in the latest slot", &route.RetryBudget{Ratio: 1, MinPerSecond: noFloor}, []budgetOp{
			{at: 5 * time.Second, requests: 1, avail: 1},
			{at: time.Second, requests: 1, avail: 2},
			{at: 15*time.Second - 1, avail: 2},
			{at: 15 * time.Second, avail: 0},
		}},
		{"the floor alone with no traffic", &route.RetryBudget{Ratio: 0.2, MinPerSecond: 3, Window: 10 * time.Second}, []budgetOp{
			{at: 0, avail: 30},
			{at: 0, retries: 31, want: 30, avail: 0},
			{at: 9 * time.Second, retries: 1, want: 0},
			{at: 10 * time.Second, avail: 30},
		}},
		{"the floor and the ratio add", &route.RetryBudget{Ratio: 0.2, MinPerSecond: 1, Window: 5 * time.Second}, []budgetOp{
			{at: 0, requests: 100, avail: 25},
			{at: 0, retries: 30, want: 25},
		}},
		{"zero value is the defaults", &route.RetryBudget{}, []budgetOp{
			{at: 0, avail: 30},
			{at: 0, requests: 100, avail: 50},
			{at: 9 * time.Second, avail: 50},
			{at: 10 * time.Second, avail: 30},
		}},
		{"negative ratio and floor allow nothing", &route.RetryBudget{Ratio: -1, MinPerSecond: -1}, []budgetOp{
			{at: 0, requests: 1000, avail: 0},
			{at: 0, retries: 1, want: 0},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.budget
			for i, op := range tc.ops {
				now := t0.Add(op.at)
				for range op.requests {
					b.Request(now)
				}
				got := 0
				for range op.retries {
					if b.TryRetry(now) {
						got++
					}
				}
				if got != op.want {
					t.Fatalf("op %d (%+v): %d retries allowed, want %d", i, op, got, op.want)
				}
				if a := b.Available(now); a != op.avail {
					t.Fatalf("op %d (%+v): Available %d, want %d", i, op, a, op.avail)
				}
			}
		})
	}
}

func TestRetryBudgetNilIsNoBudget(t *testing.T) {
	var b *route.RetryBudget
	b.Request(t0)
	for i := range 100 {
		if !b.TryRetry(t0) {
			t.Fatalf("retry %d refused by a nil budget", i)
		}
	}
	if a := b.Available(t0); a != math.MaxInt {
		t.Fatalf("Available %d", a)
	}
}

func TestRetryBudgetConcurrent(t *testing.T) {
	b := &route.RetryBudget{Ratio: 0.25, MinPerSecond: 1, Window: 10 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := range 8 {
		wg.Go(func() {
			n := 0
			for i := range 200 {
				now := t0.Add(time.Duration(g*i) * time.Microsecond)
				b.Request(now)
				if b.TryRetry(now) {
					n++
				}
			}
			mu.Lock()
			allowed += n
			mu.Unlock()
		})
	}
	wg.Wait()
	for b.TryRetry(t0) { // what interleaving left
		allowed++
	}
	// 1,600 requests within one slot: 400 retries, plus the floor's 10.
	if allowed != 410 {
		t.Fatalf("%d retries allowed, want 410", allowed)
	}
}

// failingPool is a pool of three members that all answer 503, with
// breakers that never trip, so that every request tries all it may.
func failingPool(t *testing.T) *env {
	t.Helper()
	never := breaker.Settings{Failures: 1000}
	return newEnv(t,
		memberSpec{name: "a", priority: 1, script: []step{status(503)}, settings: never},
		memberSpec{name: "b", priority: 1, script: []step{status(503)}, settings: never},
		memberSpec{name: "c", priority: 1, script: []step{status(503)}, settings: never},
	)
}

func (e *env) calls() int {
	n := 0
	for _, u := range e.ups {
		n += u.Calls()
	}
	return n
}

func TestRetryBudgetBoundsUpstreamCalls(t *testing.T) {
	const requests = 100
	tests := []struct {
		name   string
		budget *route.RetryBudget
		// most is the bound on upstream calls; least what they must reach.
		most, least int
	}{
		{"no budget: every member, every request", nil, 3 * requests, 3 * requests},
		{"a fifth, no floor", &route.RetryBudget{Ratio: 0.2, MinPerSecond: -1}, requests * 12 / 10, requests * 12 / 10},
		{"a fifth and the default floor", &route.RetryBudget{Ratio: 0.2}, requests*12/10 + 30, requests*12/10 + 30},
		{"a tenth, no floor", &route.RetryBudget{Ratio: 0.1, MinPerSecond: -1}, requests * 11 / 10, requests * 11 / 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := failingPool(t)
			e.pool.RetryBudget = tc.budget
			spent := 0
			for i := range requests {
				resp, rep, body := e.do(t, chatBody)
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("request %d: status %d %s", i, resp.StatusCode, body)
				}
				if len(rep.Attempts) == 0 {
					t.Fatalf("request %d made no attempt", i)
				}
				if rep.RetryBudgetSpent {
					spent++
					if len(rep.Attempts) == 3 {
						t.Fatalf("request %d: budget spent after every member was tried", i)
					}
					if !strings.Contains(body, "retry budget is spent") {
						t.Fatalf("request %d: body %s", i, body)
					}
					if resp.Header.Get(route.HeaderAttempts) != strconv.Itoa(len(rep.Attempts)) {
						t.Fatalf("request %d: attempts header %q for %d attempts", i, resp.Header.Get(route.HeaderAttempts), len(rep.Attempts))
					}
				}
				// Time stands still: the whole run is inside one window.
			}
			calls := e.calls()
			if calls > tc.most || calls < tc.least {
				t.Fatalf("%d upstream calls for %d requests, want %d to %d", calls, requests, tc.least, tc.most)
			}
			if ev := e.events.kinds(route.EventRetryBudget); len(ev) != spent {
				t.Fatalf("%d retry budget events for %d requests refused a retry", len(ev), spent)
			} else if tc.budget != nil && (spent == 0 || ev[0].Pool != "chat-prod" || ev[0].Backend == nil) {
				t.Fatalf("spent %d, events %+v", spent, ev)
			}
			if tc.budget == nil && spent != 0 {
				t.Fatalf("%d requests refused a retry without a budget", spent)
			}
		})
	}
}

func TestRetryBudgetRefillsAsTheWindowSlides(t *testing.T) {
	e := failingPool(t)
	e.pool.RetryBudget = &route.RetryBudget{Ratio: 0.2, MinPerSecond: -1, Window: 10 * time.Second}
	for range 10 {
		e.do(t, chatBody)
	}
	if n := e.calls(); n != 12 {
		t.Fatalf("%d calls for 10 requests, want 12", n)
	}
	// The next window: the deposits and the withdrawals are forgotten.
	e.clock.Advance(10 * time.Second)
	_, rep, _ := e.do(t, chatBody)
	if len(rep.Attempts) != 1 || !rep.RetryBudgetSpent {
		t.Fatalf("first request of a new window: %d attempts, spent %v", len(rep.Attempts), rep.RetryBudgetSpent)
	}
	for range 3 {
		e.do(t, chatBody)
	}
	_, rep, _ = e.do(t, chatBody) // the fifth of the window: a retry is there
	if len(rep.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(rep.Attempts))
	}
}

func TestRetryBudgetNeverRefusesTheFirstAttempt(t *testing.T) {
	tests := []struct {
		name   string
		budget *route.RetryBudget
	}{
		{"a budget that allows no retry", &route.RetryBudget{Ratio: -1, MinPerSecond: -1}},
		{"a spent budget", &route.RetryBudget{Ratio: 0.01, MinPerSecond: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{status(503)}, settings: breaker.Settings{Failures: 1000}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			e.pool.RetryBudget = tc.budget
			for i := range 20 {
				resp, rep, _ := e.do(t, chatBody)
				if len(rep.Attempts) != 1 || rep.Attempts[0].Backend != "weu" || resp.StatusCode != 503 || !rep.RetryBudgetSpent {
					t.Fatalf("request %d: status %d, attempts %+v, spent %v", i, resp.StatusCode, rep.Attempts, rep.RetryBudgetSpent)
				}
			}
			if n := e.ups["weu"].Calls(); n != 20 {
				t.Fatalf("%d first attempts made for 20 requests", n)
			}
			if n := e.ups["sec"].Calls(); n != 0 {
				t.Fatalf("%d retries made past the budget", n)
			}
			// A healthy first member still answers every request.
			e.ups["weu"].SetScript(answer("weu"))
			for i := range 5 {
				resp, rep, _ := e.do(t, chatBody)
				if resp.StatusCode != 200 || rep.RetryBudgetSpent {
					t.Fatalf("request %d: status %d, spent %v", i, resp.StatusCode, rep.RetryBudgetSpent)
				}
			}
		})
	}
}

// noRetries is a retry budget that allows no retry at all: whatever it
// lets through was not counted against it.
func noRetries() *route.RetryBudget { return &route.RetryBudget{Ratio: -1, MinPerSecond: -1} }

// TestRetryBudgetNeverRefusesFailoverOffABenchedBackend: issue 22's 504s
// with attempts=1 tried="uksouth=unresponsive". Moving a request off a
// backend that is gone (benched by the failure, found unresponsive,
// unreachable) onto a member whose breaker is closed is not a storm: even
// a budget that allows no retry lets it through, and does not count it.
func TestRetryBudgetNeverRefusesFailoverOffABenchedBackend(t *testing.T) {
	t.Run("waiting calls failed over by an unresponsive check", unresponsiveFailoverIsFree)
	tests := []struct {
		name     string
		script   step
		settings breaker.Settings
		closed   bool // close weu's upstream: connection refused
		reason   route.Reason
	}{
		{"the failure benched the backend", status(500), breaker.Settings{Failures: 1}, false, route.ReasonServerError},
		{"connection refused", answer("weu"), breaker.Settings{Failures: 1000}, true, route.ReasonConnect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{tc.script}, settings: tc.settings},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			e.pool.RetryBudget = noRetries()
			if tc.closed {
				e.ups["weu"].Close()
			}
			resp, rep, body := e.do(t, chatBody)
			if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" || rep.RetryBudgetSpent {
				t.Fatalf("status %d from %q, spent %v: %s", resp.StatusCode, resp.Header.Get(route.HeaderBackend), rep.RetryBudgetSpent, body)
			}
			if len(rep.Attempts) != 2 || rep.Attempts[0].Reason != tc.reason {
				t.Fatalf("attempts %+v, want weu %s then sec", rep.Attempts, tc.reason)
			}
			if n := len(e.events.kinds(route.EventRetryBudget)); n != 0 {
				t.Fatalf("%d retry budget refusals", n)
			}
		})
	}
	t.Run("a storm on closed breakers still spends the budget", func(t *testing.T) {
		e := newEnv(t,
			memberSpec{name: "weu", priority: 1, script: []step{status(500)}, settings: breaker.Settings{Failures: 1000}},
			memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
		)
		e.pool.RetryBudget = noRetries()
		resp, rep, _ := e.do(t, chatBody)
		if resp.StatusCode != 500 || !rep.RetryBudgetSpent || len(rep.Attempts) != 1 {
			t.Fatalf("status %d, spent %v, attempts %+v: a 500 from a backend still taking calls is a retry the budget decides", resp.StatusCode, rep.RetryBudgetSpent, rep.Attempts)
		}
	})
}

// unresponsiveFailoverIsFree: calls wait on a hung backend until the
// health check benches it and fails them over; a budget that allows no
// retry lets every one of them through to the healthy member.
func unresponsiveFailoverIsFree(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	probed, arrived := make(chan struct{}, 16), make(chan struct{}, 16)
	hung := hangTelling(probed, arrived)
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{hung}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	e.pool.RetryBudget = noRetries()
	weu := e.backends["weu"]
	slow, check := weu.SlowAfter(false), weu.CheckTimeout()
	const n = 8
	var calls []<-chan result
	for range n {
		calls = append(calls, e.goDo(ctx, chatBody))
	}
	for i := range n {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("%d of %d calls reached the hung backend", i, n)
		}
	}
	clk.Advance(slow)
	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("no health check after the slow threshold")
	}
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	for i, ch := range calls {
		res := await(t, ctx, ch)
		if res.err != nil {
			t.Fatalf("request %d: %v", i, res.err)
		}
		if res.resp.StatusCode != 200 || res.rep.RetryBudgetSpent {
			t.Fatalf("request %d: %d, spent %v, attempts %+v: the budget refused a failover off a benched backend", i, res.resp.StatusCode, res.rep.RetryBudgetSpent, res.rep.Attempts)
		}
	}
}

func BenchmarkRetryBudget(b *testing.B) {
	rb := &route.RetryBudget{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now := t0.Add(time.Duration(i) * time.Millisecond) // slides a slot every 1,000
		rb.Request(now)
		rb.TryRetry(now)
		i++
	}
}
