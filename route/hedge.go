package route

import (
	"context"
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
)

// Defaults of a Hedge's settings.
const (
	// DefaultHedgeQuantile is the quantile of the first backend's recent
	// times to first byte past which a hedge is sent at the default share:
	// 1 - DefaultHedgeShare (an unset Quantile follows the Share).
	DefaultHedgeQuantile = 1 - DefaultHedgeShare
	// DefaultHedgeShare is the share of a pool's requests that may be
	// hedged over the budget's window.
	DefaultHedgeShare = 0.1
	// DefaultMinHedgeDelay is the shortest wait before a hedge when the
	// delay is learned: a backend that answers in 40 ms is not hedged at
	// 45.
	DefaultMinHedgeDelay = 50 * time.Millisecond
)

// HeaderHedge is set on the answer to a request that was hedged: "primary"
// when the first attempt answered first, "hedge" when the hedge did.
const HeaderHedge = "X-Switchover-Hedge"

// errOutpaced is the cancel cause of the attempt that lost the race
// against its hedge (or the hedge that lost to it).
var errOutpaced = errors.New("switchover: another attempt answered first")

// Hedge sends a second attempt (a hedge) to the pool's next choice when a
// request's first attempt is slower to its first byte than its backend
// usually is: the first of the two to answer is passed on, and the other
// is cancelled at once. The cancelled attempt is not counted against its
// backend's breaker (the backend did nothing wrong; the caller simply no
// longer needs the answer), though the backend may still bill the work
// it did before it noticed.
//
// Only requests without side effects are hedged: chat completions,
// completions, embeddings, Anthropic messages, moderations and token
// counts, never a call on stored state (Request.Owner or Path), a
// Responses call (which stores what it makes), media or a Realtime
// session. Only the first attempt is hedged, once, and only when the
// pool allows two attempts (Pool.Attempts): a hedge is an attempt.
//
// The zero value hedges the slowest DefaultHedgeShare of the pool's
// requests: past the 1 - DefaultHedgeShare quantile of the first
// backend's recent times to first byte, at most that share of the pool's
// requests. The settings must not change once the pool is in use.
type Hedge struct {
	// Delay, if positive, is a fixed wait for the first byte before the
	// hedge is sent, whatever the backend's history.
	Delay time.Duration
	// Quantile, when Delay is zero, is the quantile (0.5 to 0.99) of the
	// first attempt's backend's recent times to first byte (streams and
	// plain calls apart) past which the hedge is sent. Zero means 1 -
	// Share: the hedge is sent as early as the budget lets every slow
	// request have one (the 90th percentile at the default share), since
	// the sooner a slow request's hedge goes, the sooner it answers, and
	// a later one leaves budget unspent. A backend that has answered too
	// few calls of the kind to know its quantile is not hedged. Delays
	// learned so are at least DefaultMinHedgeDelay.
	Quantile float64
	// Share bounds the hedges to this share of the pool's requests: at
	// most Share × n of any n consecutive requests that may be hedged, n
	// being hedgeWindow/Share (500 at the default). Zero means
	// DefaultHedgeShare; at most 1. The window is counted in requests, not
	// seconds, so that a pool with few requests a second has whole hedges
	// to spend: over 10 s at 4 requests a second, 10% was 4 hedges, and
	// slow requests that came together were refused while the budget went
	// unspent on average (7% of requests hedged, of 10% allowed).
	Share float64

	budget hedgeBudget
}

// hedgeWindow is how many hedges a Hedge's budget window holds: it spans
// hedgeWindow/Share requests.
const hedgeWindow = 50

// hedgeBudget is a Hedge's count of requests and of the hedges taken
// among the last of them. It is safe for concurrent use.
type hedgeBudget struct {
	mu     sync.Mutex
	seen   uint64   // requests counted
	hedges []uint64 // the count of requests when each hedge in the window was taken, oldest first
}

// request counts a request that may be hedged.
func (b *hedgeBudget) request() {
	b.mu.Lock()
	b.seen++
	b.mu.Unlock()
}

// spend takes a hedge if the window of the last hedgeWindow/share
// requests has one left (share of them, less those taken), and reports
// whether it did; with take false it only reports whether one is left.
func (b *hedgeBudget) spend(share float64, take bool) bool {
	n := uint64(math.Ceil(hedgeWindow / share))
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.hedges) > 0 && b.hedges[0]+n <= b.seen {
		b.hedges = b.hedges[1:]
	}
	// A hair of slack: 0.1 × 11 is 1.1000000000000001 in floating point.
	if float64(len(b.hedges)+1) > share*float64(min(b.seen, n))+1e-9 {
		return false
	}
	if take {
		b.hedges = append(b.hedges, b.seen)
	}
	return true
}

// share is the hedges' share of requests, Share with its default.
func (h *Hedge) share() float64 {
	switch {
	case h.Share <= 0:
		return DefaultHedgeShare
	case h.Share > 1:
		return 1
	}
	return h.Share
}

// delay is how long the first attempt on b waits for its first byte
// before it is hedged, and whether it is hedged at all.
func (h *Hedge) delay(b *Backend, stream bool) (time.Duration, bool) {
	if h.Delay > 0 {
		return h.Delay, true
	}
	// Learned: Quantile's, or, unset, 1 - Share's quantile of the
	// backend's recent times to first byte.
	q := h.Quantile
	if q <= 0 {
		q = 1 - h.share()
	}
	q = min(max(q, 0.5), 0.99)
	d, ok := b.lat.quantile(stream, q)
	if !ok {
		return 0, false
	}
	return max(d, DefaultMinHedgeDelay), true
}

// hedgeable reports whether the request may be hedged: it has no side
// effects a second call would repeat.
func (r *Request) hedgeable() bool {
	if r.Owner != "" || r.Path != "" {
		return false
	}
	switch r.Op {
	case ChatCompletions, Completions, Embeddings, Messages, Moderations, CountTokens:
		return true
	}
	return false
}

// HedgeResult says how a hedged request ended (EventHedge, Report.Hedge).
type HedgeResult string

// Hedge results.
const (
	// HedgePrimary: the first attempt answered first.
	HedgePrimary HedgeResult = "primary"
	// HedgeWon: the hedge answered first.
	HedgeWon HedgeResult = "hedge"
	// HedgeNeither: both attempts failed.
	HedgeNeither HedgeResult = "neither"
	// HedgeRefused: the first attempt was slow enough to hedge, but the
	// hedge budget (Hedge.Share) was spent: no hedge was sent.
	HedgeRefused HedgeResult = "refused"
)

// raced is an attempt of a hedged request, and how it ended.
type raced struct {
	m     *Member
	at    *attempt
	resp  *http.Response
	a     Attempt
	err   error
	hedge bool         // the second attempt
	done  breaker.Done // the hedge's breaker admission, until it starts
}

// startHedge picks and prepares the hedge of a request whose first
// attempt is on first, if the hedge budget and a member allow.
func (p *Pool) startHedge(ctx context.Context, r *Request, first *Member, rep *Report, tried *memberSet, deadline time.Time) (raced, bool) {
	h := p.Hedge
	now := p.now()
	if !h.budget.spend(h.share(), false) {
		p.observeCtx(ctx, Event{Kind: EventHedge, Backend: first.Backend, Hedge: HedgeRefused})
		return raced{}, false
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		return raced{}, false
	}
	// The first attempt's member is this request's whatever happens.
	p.markTried(tried, first.Backend)
	for {
		m, done, release := p.next(r, rep, tried)
		if m == nil {
			return raced{}, false
		}
		at, _ := p.prepareAttempt(r, rep, tried, m, done, release)
		if at == nil {
			continue // m cannot take r, or r cannot be sent to it
		}
		if !h.budget.spend(h.share(), true) {
			done(breaker.Outcome{Result: breaker.Ignore})
			at.releaseQuota()
			return raced{}, false
		}
		return raced{m: m, at: at, hedge: true, done: done}, true
	}
}

// hedgeDelay reports whether the attempt on m is hedged, and how long it
// waits for its first byte before the hedge is sent: only the pool's first
// attempt of a request without side effects (Request.hedgeable), in a pool
// that allows a second attempt, and only once the backend's delay is
// known. Every request that may be hedged counts in the hedge budget.
func (p *Pool) hedgeDelay(r *Request, rep *Report, m *Member) (time.Duration, bool) {
	h := p.Hedge
	if h == nil || len(rep.Attempts) != 0 || p.attempts() <= 1 || !r.hedgeable() {
		return 0, false
	}
	h.budget.request()
	return h.delay(m.Backend, r.Stream)
}

// startRace starts a hedged request's first attempt, at on m, admitted
// with done, and the hedge's timer, which fires after delay. It returns
// the channel of the attempts' results (room for both), the channel the
// timer closes when it fires, and the timer; at.firstByte is closed at
// the attempt's first byte.
func (p *Pool) startRace(ctx context.Context, r *Request, m *Member, at *attempt, done breaker.Done, delay time.Duration) (chan raced, chan struct{}, clock.Timer) {
	// The estimate is cached on first use; take it here, so that the two
	// attempts' goroutines and next's admission only read it.
	r.Tokens()
	results := make(chan raced, 2)
	at.firstByte = make(chan struct{})
	// The delay runs from before the first attempt starts, so that it
	// bounds the attempt's whole wait. The timer closes its own channel:
	// the race lets go of it when it stops waiting for it, and the timer
	// may fire as it is stopped.
	fired := make(chan struct{})
	timer := p.clock().AfterFunc(delay, func() { close(fired) })
	p.race(ctx, r, raced{m: m, at: at}, done, time.Time{}, results)
	return results, fired, timer
}

// race starts attempt c of a hedged request, admitted with done, with its
// own context, in a goroutine of its own; its result goes to results.
func (p *Pool) race(ctx context.Context, r *Request, c raced, done breaker.Done, deadline time.Time, results chan<- raced) {
	c.at.actx, c.at.cancel = context.WithCancelCause(ctx)
	go func() {
		c.resp, c.a, c.err = p.try(ctx, r, c.m, c.at, done, deadline)
		results <- c
	}()
}

// outpaced records c, an attempt of a hedged request that ended after the
// other had won: its answer, if it had one already, goes unread.
func (p *Pool) outpaced(ctx context.Context, r *Request, rep *Report, c *raced) {
	if c.resp != nil && c.resp.Body != nil {
		c.resp.Body.Close()
	}
	// (One that answered at the same moment was not abandoned: its answer
	// is complete, only unread.)
	c.a.Reason, c.a.Retryable, c.a.Abandoned = ReasonOutpaced, false, c.resp == nil
	if !c.hedge && c.a.Abandoned {
		// Cancelled past the hedge delay, the first attempt's time to
		// first byte was at least this long: counted so, the backend's
		// quantile stays honest instead of learning only the answers that
		// beat their hedge.
		c.m.Backend.lat.observe(r.Stream, c.a.Duration)
	}
	p.noteAttempt(ctx, rep, c.m.Backend, c.a)
}

// reportRace ends the report of a hedged request whose first attempt was
// on first: its attempts in the order they began, as attempts always are,
// and, when a hedge was sent, how the race ended (Report.Hedge,
// EventHedge).
func (p *Pool) reportRace(rep *Report, first *Member, winner, hedge *raced) {
	if n := len(rep.Attempts); n >= 2 && rep.Attempts[n-1].Start.Before(rep.Attempts[n-2].Start) {
		rep.Attempts[n-1], rep.Attempts[n-2] = rep.Attempts[n-2], rep.Attempts[n-1]
	}
	if hedge == nil {
		return
	}
	res := HedgeNeither
	switch {
	case winner != nil && winner.hedge:
		res = HedgeWon
	case winner != nil:
		res = HedgePrimary
	}
	rep.Hedge = res
	p.observe(Event{Kind: EventHedge, Backend: hedge.m.Backend, From: first.Backend.Name, Hedge: res})
}

// drain cancels the attempts still running after the client went away,
// with the client's cause, then waits for them and records them.
func (p *Pool) drain(ctx context.Context, rep *Report, results <-chan raced, running []*attempt) {
	for _, o := range running {
		o.cancel(context.Cause(ctx))
	}
	for range len(running) {
		c := <-results
		if c.resp != nil && c.resp.Body != nil {
			c.resp.Body.Close()
		}
		c.a.Hedge = c.hedge
		p.noteAttempt(ctx, rep, c.m.Backend, c.a)
	}
}

func removeAttempt(s []*attempt, at *attempt) []*attempt {
	for i, x := range s {
		if x == at {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
