package route

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
)

// minCheckInterval is the least time between two health checks of one
// backend that slow calls start: a burst of slow calls costs one check.
const minCheckInterval = 5 * time.Second

// errUnresponsive cancels the attempts still waiting for their first byte
// from a backend that a health check found unresponsive: they fail over
// at once instead of waiting out their timeouts.
var errUnresponsive = errors.New("switchover: backend unresponsive (health check failed); attempt abandoned")

// errCheckTimeout ends a health check that got no answer in time.
var errCheckTimeout = errors.New("switchover: health check timed out")

// checkWallBound bounds a health check on the wall clock, whatever the
// pool's clock does: maxCheckTimeout (a variable for tests).
var checkWallBound = maxCheckTimeout

// checker is a backend's liveness checking: the attempts waiting for a
// first byte, and whether a check is running. It is safe for concurrent
// use.
type checker struct {
	mu      sync.Mutex
	running bool
	last    time.Time // when the last check began
	judged  time.Time // when the waiting calls were last judged together (pileUp)
	heard   time.Time // when the backend last answered a call (heardFrom)
	// heardStream is when a stream of it last had its first event: what
	// a streamed check (CheckKind) counts as an answer.
	heardStream time.Time
	waiting     map[*waiter]struct{}
	// again judges the waiting calls once more when the next of them has
	// waited long (pileUp), should no new call come to have them judged.
	again clock.Timer
	// active mirrors running, for selection to read without the lock.
	active atomic.Bool
}

// waiter is an attempt waiting for its first byte: how to abandon it, when
// it began and whether it is a stream.
type waiter struct {
	cancel context.CancelCauseFunc
	began  time.Time
	stream bool
}

// wait registers an attempt waiting for its first byte, until unwait.
func (c *checker) wait(w *waiter) {
	c.mu.Lock()
	if c.waiting == nil {
		c.waiting = map[*waiter]struct{}{}
	}
	c.waiting[w] = struct{}{}
	c.mu.Unlock()
}

// unwait unregisters an attempt registered by wait.
func (c *checker) unwait(w *waiter) {
	c.mu.Lock()
	delete(c.waiting, w)
	c.mu.Unlock()
}

// abortWaiting cancels every attempt waiting for a first byte, and
// returns how many there were.
func (c *checker) abortWaiting(cause error) int {
	c.mu.Lock()
	ws := make([]*waiter, 0, len(c.waiting))
	for w := range c.waiting {
		ws = append(ws, w)
	}
	c.waiting = nil
	c.mu.Unlock()
	for _, w := range ws {
		w.cancel(cause)
	}
	return len(ws)
}

// heardFrom notes that the backend answered a call at now (a status
// below 500, or a stream's first event: stream): while a check runs,
// that is a sign of life no silence can outweigh (see silence.go). A
// streamed check counts only a stream's event: a backend whose streams
// hang may still answer plain calls.
func (c *checker) heardFrom(now time.Time, stream bool) {
	c.mu.Lock()
	if now.After(c.heard) {
		c.heard = now
	}
	if stream && now.After(c.heardStream) {
		c.heardStream = now
	}
	c.mu.Unlock()
}

// heardSince reports whether the backend answered a call at since or
// later (heardFrom); for a streamed check (stream), a stream's event.
func (c *checker) heardSince(since time.Time, stream bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heardSinceLocked(since, stream)
}

func (c *checker) heardSinceLocked(since time.Time, stream bool) bool {
	h := c.heard
	if stream {
		h = c.heardStream
	}
	return !h.IsZero() && !h.Before(since)
}

// begin reports whether a check may start at now (none running, none
// started within minCheckInterval), and marks one running if so.
func (c *checker) begin(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running || (!c.last.IsZero() && now.Sub(c.last) < minCheckInterval) {
		return false
	}
	c.running, c.last = true, now
	c.active.Store(true)
	return true
}

func (c *checker) end() {
	c.mu.Lock()
	c.running = false
	c.active.Store(false)
	c.mu.Unlock()
}

// checking reports whether a check of the backend is running: selection
// passes the backend over while another member can take the call.
func (c *checker) checking() bool { return c.active.Load() }

// waits appends to plain and stream how long, at now, each call waiting
// for its first byte has waited, by kind, and reports whether it did: only
// when minPileUp calls or more wait, no check is running, and the calls
// were not judged within pileUpEvery.
func (c *checker) waits(now time.Time, plain, stream []time.Duration) ([]time.Duration, []time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) < minPileUp || c.running || (!c.judged.IsZero() && now.Sub(c.judged) < pileUpEvery) {
		return plain, stream, false
	}
	c.judged = now
	for w := range c.waiting {
		if w.stream {
			stream = append(stream, now.Sub(w.began))
		} else {
			plain = append(plain, now.Sub(w.began))
		}
	}
	return plain, stream, true
}

// judgeAgain arms the backend's one re-judging timer to run f once clk
// reads at, in place of any armed before: the latest judgement knows the
// calls waiting best.
func (c *checker) judgeAgain(clk clock.Clock, at time.Time, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.again != nil {
		c.again.Stop()
	}
	c.again = clock.At(clk, at, f)
}

// spans appends to plain and stream the part of each wait for a first
// byte on the backend that falls between since and now, by kind, and
// reports instead that the backend answered a call since since (heard).
// For a streamed check (streamCheck) only streams count: their waits, and
// their first events as answers.
func (c *checker) spans(since, now time.Time, plain, stream []waitSpan, streamCheck bool) ([]waitSpan, []waitSpan, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.heardSinceLocked(since, streamCheck) {
		return plain, stream, true
	}
	for w := range c.waiting {
		sp := waitSpan{from: max(since.Sub(w.began), 0), to: now.Sub(w.began)}
		if w.stream {
			stream = append(stream, sp)
		} else if !streamCheck {
			plain = append(plain, sp)
		}
	}
	return plain, stream, false
}

// slowCall is called when an attempt on b, a stream or not, has waited
// past the backend's slow threshold (waited) without a first byte: b is
// checked (startCheck).
func (p *Pool) slowCall(b *Backend, model string, waited time.Duration, stream bool) {
	p.startCheck(b, model, "a call waited "+waited.Round(time.Millisecond).String()+" with no first byte", stream)
}

// startCheck checks in the background that b still answers at all (a
// one-token call for model, streamed when the calls that called for it
// are streams: see CheckKind; bounded by the backend's learned check
// timeout), unless a check is running or one began within
// minCheckInterval; why says what called for it (a slow call, calls
// piling up). While the check runs, selection passes b over for any other
// member that can take a call. When b does not answer, its breaker is
// opened and every attempt still waiting on b is abandoned, so that they
// fail over now rather than when their first-byte timeouts end, and the
// caller's patience never decides whether a hung region is noticed. The
// check fails before its timeout when the backend is silent (see
// silenceWatch): neither the check nor the calls waiting on it answered
// for longer than the backend, answering as it did, plausibly would.
func (p *Pool) startCheck(b *Backend, model, why string, stream bool) {
	clk := clock.Or(p.Clock)
	began := clk.Now()
	if !b.check.begin(began) {
		return
	}
	if p.Short(began) {
		// b was the last member that would take calls: its benched peers
		// are wanted back.
		p.tellShort(began)
	}
	timeout := p.CheckTimeout(b)
	go func() {
		defer b.check.end()
		// The clock bounds the check; the wall-clock bound only makes sure
		// no check outlives maxCheckTimeout whatever the clock does. It is
		// the check's timeout too: with the pool's clock the wall's, and a
		// timeout of maxCheckTimeout (a backend whose calls take 2.5 s or
		// more), it ends the check first.
		wctx, wcancel := context.WithTimeoutCause(context.Background(), checkWallBound, errCheckTimeout)
		defer wcancel()
		ctx, cancel := context.WithCancelCause(wctx)
		// The silence rule first: once the timeout's timer is armed, so
		// is the rule's (tests wait on the timeout's).
		kind := CheckKind(b.HealthCheck, stream)
		// Both are armed from began, not from when this goroutine runs: a
		// check begun by a timer (a slow call, calls judged again) may start
		// here after the clock moved on.
		s := p.watchSilence(b, clk, began, timeout, cancel, kind == ProbeStream)
		t := clock.At(clk, began.Add(timeout), func() { cancel(errCheckTimeout) })
		err := b.Probe(ctx, kind, model)
		t.Stop()
		s.stop()
		p.observe(Event{Kind: EventProbe, Backend: b, Err: err})
		ended := context.Cause(ctx)
		timedOut := ended == errCheckTimeout || ended == errCheckSilence
		cancel(context.Canceled)
		if answered(err) {
			return // an answer, even one that came as the check was ended
		}
		if timedOut && b.check.heardSince(began, kind == ProbeStream) {
			// A call had its answer while the check waited: the backend is
			// slower than the check's bound (learned from faster pool peers,
			// before it has answered eight), not hung.
			return
		}
		result := "timeout"
		var pe *ProbeError
		switch {
		case ended == errCheckSilence:
			result = s.verdict()
		case !timedOut && errors.As(err, &pe):
			result = pe.Result
		}
		cause := fmt.Sprintf("unresponsive: %s and a health check failed (%s)", why, result)
		if br := b.Breaker; br != nil && br.Snapshot().State != breaker.Open {
			br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, cause)
		}
		n := b.check.abortWaiting(errUnresponsive)
		p.observe(Event{Kind: EventUnresponsive, Backend: b, Reason: ReasonUnresponsive, Err: fmt.Errorf("%s; %d waiting attempts failed over", cause, n)})
	}()
}

// CheckKind is how a health check of a backend whose probe kind is kind
// asks, when what is in question is its streams (stream: the calls that
// called for the check were streams, or the trip being probed was for
// streams) or not: a stream is checked with a stream (ProbeStream, which
// passes at its first event), since a backend whose streams send headers
// and then nothing, or only keep-alive comments, may answer a plain call
// at once; a backend checked by listing its models still is.
func CheckKind(kind ProbeKind, stream bool) ProbeKind {
	if stream && kind != ProbeModels {
		return ProbeStream
	}
	return kind
}

// The pile-up rule (pileUp).
const (
	// pileUpEvery is the least time between two judgements of the calls
	// waiting on one backend.
	pileUpEvery = 250 * time.Millisecond
	// pileUpQuiet is how long after a call to a backend began its waiting
	// calls may be judged again with no new call (pileUp): while calls
	// keep coming, each judges them as it begins, and a check begun then
	// has that call's wait too for the silence rule to weigh.
	pileUpQuiet = time.Second
	// pileUpQuantile is the percentile of the backend's times to first
	// byte past which a waiting call counts as long.
	pileUpQuantile = 90
	// minPileUpWait is the least wait that counts as long, whatever the
	// percentile: a backend that answers in 100 ms is not checked because
	// three calls waited 300 ms.
	minPileUpWait = time.Second
	// minPileUp is the fewest long waits that get the backend checked.
	minPileUp = 3
	// pileUpAlpha is how unlikely so many long waits must be, were the
	// backend answering as it did, for the backend to be checked.
	pileUpAlpha = 1e-4
)

// pileUp judges the calls waiting on b for their first byte together,
// when a call to b begins at now (at most every pileUpEvery), and again
// when the next of them has waited long, should no call begin for
// pileUpQuiet (a burst of calls, then none): a backend that stopped
// answering leaves every call it gets waiting, long before any one of
// them is slow enough to be suspect alone, when the backend's calls
// usually take seconds. A wait counts as long past the 90th percentile of
// the backend's times to first byte (its peers' with its own, before it
// has answered eight; at least minPileUpWait). Healthy, the calls waiting
// that long at once are few: a Poisson count whose mean is the number of
// calls waiting less than that (the arrivals) times the share of a call's
// time spent past the percentile, both read off the same samples. When
// the calls waiting that long are so many that a healthy backend would
// leave as many with a probability below pileUpAlpha (and at least
// minPileUp), b is checked (startCheck). Nothing is judged before there
// are eight samples.
func (p *Pool) pileUp(b *Backend, model string, now time.Time) {
	p.judgePileUp(b, model, now, now)
}

// judgePileUp is pileUp at now, the latest call to b having begun at
// lastCall.
func (p *Pool) judgePileUp(b *Backend, model string, now, lastCall time.Time) {
	var pb, sb [64]time.Duration
	plain, stream, ok := b.check.waits(now, pb[:0], sb[:0])
	if !ok {
		return
	}
	why, next := p.pileUpCause(b, plain, false)
	if why != "" {
		p.startCheck(b, model, why, false)
		return
	}
	why, nextStream := p.pileUpCause(b, stream, true)
	if why != "" {
		p.startCheck(b, model, why, true)
		return
	}
	if nextStream > 0 && (next == 0 || nextStream < next) {
		next = nextStream
	}
	if next > 0 {
		clk := clock.Or(p.Clock)
		at := now.Add(max(next, pileUpEvery))
		if quiet := lastCall.Add(pileUpQuiet); at.Before(quiet) {
			at = quiet
		}
		b.check.judgeAgain(clk, at, func() { p.judgePileUp(b, model, clk.Now(), lastCall) })
	}
}

// pileUpCause judges waits, those of the calls of a kind waiting on b
// (see pileUp), and says why b should be checked; "" when it should not,
// with how long until the next of the waits not yet long becomes long (0:
// none, or nothing to judge them by).
func (p *Pool) pileUpCause(b *Backend, waits []time.Duration, stream bool) (why string, next time.Duration) {
	if len(waits) < minPileUp {
		return "", 0
	}
	var buf [peerBuf]time.Duration
	ref, ok := p.reference(buf[:0], b, stream)
	if !ok {
		return "", 0
	}
	q := max(quantileOf(ref, pileUpQuantile), minPileUpWait)
	var past, before time.Duration // of the samples' time, past q and before it
	for _, d := range ref {
		past += max(d-q, 0)
		before += min(d, q)
	}
	long, longest := 0, time.Duration(0)
	for _, w := range waits {
		if w >= q {
			long++
			longest = max(longest, w)
		} else if next == 0 || q-w < next {
			next = q - w
		}
	}
	mean := 0.0
	if before > 0 {
		mean = float64(max(len(waits)-long, 1)) * float64(past) / float64(before)
	}
	if long < pileUpNeed(mean) {
		return "", next
	}
	return fmt.Sprintf("%d calls waited past %s with no first byte (the longest %s)", long, q.Round(time.Millisecond), longest.Round(time.Millisecond)), 0
}

// pileUpNeed is how many long waits get a backend checked when mean of
// them are expected: the least k, at least minPileUp, such that a Poisson
// count of that mean reaches k with a probability below pileUpAlpha.
func pileUpNeed(mean float64) int {
	if mean <= 0 || math.IsNaN(mean) {
		return minPileUp
	}
	below := 0.0 // P(N < k)
	for k := 0; k < 1<<16; k++ {
		if k >= minPileUp && 1-below < pileUpAlpha {
			return k
		}
		lg, _ := math.Lgamma(float64(k + 1))
		below += math.Exp(float64(k)*math.Log(mean) - mean - lg)
	}
	return 1 << 16
}

// answered reports whether a probe result shows the backend answering:
// any HTTP status below 500 (a 429 or a 400 is an answer), as opposed to
// no answer at all or a server error.
func answered(err error) bool {
	if err == nil {
		return true
	}
	var pe *ProbeError
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Result {
	case "2xx", "3xx", "4xx", "429":
		return true
	}
	return false
}
