package route

import (
	"context"
	"net/http"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// The routing decision, top to bottom. Do walks the fallback chain
// (followFallbacks), which makes each pool's attempts (tryMembers), whose
// first attempt may be hedged (tryHedged); when the answer is that every
// member is out of quota, the request waits in the queue (waitForQuota)
// and walks the chain again. Each stage calls the next by name. The
// helpers a stage needs live with their concern: selection in pool.go and
// select.go, the fallbacks' rules in fallback.go, the queue in queue.go,
// the hedge's budget and bookkeeping in hedge.go, one attempt in
// attempt.go, the pool's own answer in exhausted.go.

// Do sends r to the pool's members until one answers in a way that is
// passed on, or attempts or members run out. It returns the response to
// give the client, with the X-Switchover-* headers set: the upstream's own,
// or, when every attempt failed, an OpenAI-style error listing each attempt
// with a Retry-After of the soonest time a backend will take traffic again.
// The error is non-nil only when ctx ended (the client went away) or r
// cannot be sent at all. The caller must close the response body; a
// half-open breaker's probe is decided when the body ends.
//
// When the pool cannot answer and has a Fallback, or a member refused r
// for its context window and the pool has a ContextFallback, r goes to
// that pool in turn, whose own members, model names, rules and fallbacks
// apply, up to MaxFallbackDepth pools past this one; a pool already
// tried for r is never tried again, so a cycle of fallbacks ends. The
// answer is the last pool's, with X-Switchover-Fallback naming the pool
// it fell back from, and its Report's FallbackFrom, FallbackCause and
// Prior saying the same (Prior is the report of the pool fallen back
// from). An answer that fails in the last pool is that pool's failure.
//
// A request with a MaxWait that every member (and every fallback) refuses
// for quota waits in the pool's queue for the soonest reset and is tried
// again, within its MaxWait.
func (p *Pool) Do(ctx context.Context, r *Request) (*http.Response, *Report, error) {
	resp, rep, err := p.followFallbacks(ctx, r)
	if maxWait := p.maxWait(r); maxWait > 0 && err == nil && outOfQuota(resp, rep) {
		return p.waitForQuota(ctx, r, maxWait, resp, rep)
	}
	return resp, rep, err
}

// waitForQuota is the queue: r, whose answer resp (with rep) says that
// every member is out of quota, may wait up to maxWait (Request.MaxWait,
// else Pool.MaxWait, at most MaxWaitLimit). While the answer stays so, and
// the soonest reset comes within the request's own deadline, the request
// waits in the pool's queue and walks the fallback chain again, first come
// first served. Past its deadline it gets the usual 429 with Retry-After.
func (p *Pool) waitForQuota(ctx context.Context, r *Request, maxWait time.Duration, resp *http.Response, rep *Report) (*http.Response, *Report, error) {
	clk := p.clock()
	began := clk.Now()
	deadline := began.Add(maxWait)
	t, qerr := p.queue.join(p.maxQueue())
	if qerr != nil {
		return resp, rep, nil
	}
	p.observeCtx(ctx, Event{Kind: EventQueued, Queue: p.queue.len()})
	defer func() {
		t.leave()
		p.observeCtx(ctx, Event{Kind: EventDequeued, Queue: p.queue.len(), Waited: clk.Now().Sub(began)})
	}()
	var err error
	for outOfQuota(resp, rep) {
		// The instant the pool named, not a delay to count again from a
		// later reading of the clock, which would wait longer by however
		// far the clock had moved.
		until := rep.retryAt
		if until.IsZero() {
			now := clk.Now()
			until = now.Add(max(RetryAfter(resp.Header, now), time.Millisecond))
		}
		if until.After(deadline) {
			break // the usual 429: quota does not come back in time
		}
		if werr := t.wait(ctx, clk, until, deadline); werr != nil {
			if ctx.Err() != nil {
				resp.Body.Close()
				return nil, rep, ctx.Err()
			}
			break
		}
		resp.Body.Close()
		// Once a member takes it, the next in line tries at once: the
		// queue orders who gets the window's room, it does not wait for
		// each call to finish.
		r.onPick = t.leave
		resp, rep, err = p.followFallbacks(ctx, r)
		r.onPick = nil
		if err != nil {
			return resp, rep, err
		}
	}
	rep.Waited = clk.Now().Sub(began)
	if resp != nil {
		resp.Header.Set(HeaderQueueWait, itoa(int(rep.Waited.Milliseconds())))
	}
	return resp, rep, err
}

// followFallbacks is the fallback chain: the pool's own attempts, then,
// while the answer sends r on (fallbackFor), the next pool's, up to
// MaxFallbackDepth pools past this one and never a pool twice.
func (p *Pool) followFallbacks(ctx context.Context, r *Request) (*http.Response, *Report, error) {
	resp, rep, err := p.tryMembers(ctx, r)
	if p.Fallback == nil && p.ContextFallback == nil {
		return resp, rep, err
	}
	var tried [MaxFallbackDepth + 1]*Pool
	tried[0] = p
	cur := p
	for n := 1; n <= MaxFallbackDepth; n++ {
		next, cause := cur.fallbackFor(r, resp, rep, err)
		if next == nil || contains(tried[:n], next) {
			break
		}
		resp.Body.Close()
		cur.observeCtx(ctx, Event{Kind: EventFallback, From: cur.Name, To: next.Name, Cause: cause})
		prior := rep
		resp, rep, err = next.tryMembers(ctx, r)
		rep.FallbackFrom, rep.FallbackCause, rep.Prior = cur.Name, cause, prior
		if resp != nil {
			if resp.Header == nil {
				resp.Header = http.Header{}
			}
			resp.Header.Set(HeaderFallback, cur.Name)
		}
		tried[n], cur = next, next
	}
	return resp, rep, err
}

// tryMembers is the attempts of one pool, fallbacks aside: each attempt
// selects again among the members not yet tried (next), until one answers
// in a way that is passed on, or the attempts (Pool.Attempts), the time
// (Pool.TryDuration), the retry budget (Pool.RetryBudget) or the members
// run out. A member that cannot take r is skipped; the first attempt may
// be hedged. When no member answered, the answer is the pool's own
// (unanswered).
func (p *Pool) tryMembers(ctx context.Context, r *Request) (*http.Response, *Report, error) {
	rep := &Report{Pool: p.Name}
	if r.Owner != "" && p.Member(r.Owner) == nil {
		return nil, rep, &OwnerUnavailableError{Owner: r.Owner, Pool: p.Name, Why: "it is not a member of the pool " + p.Name}
	}
	var tried memberSet
	var lastHeader http.Header
	var deadline time.Time
	if p.TryDuration > 0 {
		deadline = p.now().Add(p.TryDuration)
	}
	held := false
	for len(rep.Attempts) < p.attempts() {
		if err := ctx.Err(); err != nil {
			return nil, rep, err
		}
		if !deadline.IsZero() && len(rep.Attempts) > 0 && !p.now().Before(deadline) {
			rep.BudgetSpent = true
			break
		}
		m, done, release := p.next(r, rep, &tried)
		if m == nil {
			if r.Owner == "" {
				n := len(rep.Attempts)
				retrying := n > 0 && rep.Attempts[n-1].Retryable
				p.ranOutOfMembers(p.now(), retrying)
				if retrying && !held {
					held = true
					if p.holdForProbes(ctx, &tried, deadline) {
						continue
					}
				}
			}
			break
		}
		if r.onPick != nil {
			r.onPick()
		}
		at, err := p.prepareAttempt(r, rep, &tried, m, done, release)
		if err != nil {
			return nil, rep, err
		}
		if at == nil {
			continue // skipped: m cannot take r
		}
		if !p.retryAllowed(ctx, rep, m, at, done) {
			break
		}
		var resp *http.Response
		var served *Member
		var lh http.Header
		if delay, ok := p.hedgeDelay(r, rep, m); ok {
			resp, served, lh, err = p.tryHedged(ctx, r, m, at, done, deadline, rep, &tried, delay)
		} else {
			resp, served, lh, err = p.tryOnce(ctx, r, m, at, done, deadline, rep, &tried)
		}
		if err != nil {
			return nil, rep, err
		}
		if lh != nil {
			lastHeader = lh
		}
		if served != nil {
			p.served(rep, served, resp)
			return resp, rep, nil
		}
	}
	return p.unanswered(r, rep, lastHeader)
}

// tryOnce makes one attempt, on m, unhedged. It returns what tryMembers'
// loop needs: the response to pass on and its member, or, when served is
// nil, the relayed headers of a failure to retry (nil for a transport
// error), or err when the client went away.
func (p *Pool) tryOnce(ctx context.Context, r *Request, m *Member, at *attempt, done breaker.Done, deadline time.Time, rep *Report, tried *memberSet) (resp *http.Response, served *Member, lastHeader http.Header, err error) {
	// The budget bounds retries: the first attempt always gets its full
	// first-byte timeout.
	var dl time.Time
	if len(rep.Attempts) > 0 {
		dl = deadline
	}
	resp, a, err := p.try(ctx, r, m, at, done, dl)
	p.noteAttempt(ctx, rep, m.Backend, a)
	if err != nil {
		return nil, nil, nil, err
	}
	p.markTried(tried, m.Backend)
	if !a.Retryable {
		rep.Usage = &at.use
		return resp, m, nil, nil
	}
	if resp != nil {
		lastHeader = m.Backend.relayHeader(resp.Header)
	}
	return nil, nil, lastHeader, nil
}

// tryHedged is the hedge: it makes the request's first attempt, on m,
// with a hedge. It waits for the first byte as long as delay, then, if
// the budget and a second member allow (startHedge), starts a second
// attempt, and passes on whichever answers first, cancelling the other.
// It returns what tryMembers' loop needs: the winning response and its
// member (served is nil when neither answered and the loop should go on,
// with lastHeader from the last failure), or err when the client went
// away.
func (p *Pool) tryHedged(ctx context.Context, r *Request, m *Member, at *attempt, done breaker.Done, deadline time.Time, rep *Report, tried *memberSet, delay time.Duration) (resp *http.Response, served *Member, lastHeader http.Header, err error) {
	results, fire, timer := p.startRace(ctx, r, m, at, done, delay)
	defer timer.Stop()
	fb := at.firstByte
	running := []*attempt{at}
	var winner, hedge *raced
	for len(running) > 0 {
		select {
		case <-fb:
			// The first attempt has its first byte: no hedge.
			fb, fire = nil, nil
			timer.Stop()
		case <-fire:
			fire, fb = nil, nil
			if c, ok := p.startHedge(ctx, r, m, rep, tried, deadline); ok {
				hedge = &c
				p.race(ctx, r, c, c.done, deadline, results)
				running = append(running, c.at)
			}
		case c := <-results:
			running = removeAttempt(running, c.at)
			if len(running) == 0 {
				fire, fb = nil, nil
			}
			c.a.Hedge = c.hedge
			if winner != nil {
				p.outpaced(ctx, r, rep, &c)
				continue
			}
			p.noteAttempt(ctx, rep, c.m.Backend, c.a)
			if c.err != nil {
				// The client went away: so is the other attempt's reason.
				p.drain(ctx, rep, results, running)
				return nil, nil, nil, c.err
			}
			p.markTried(tried, c.m.Backend)
			if c.a.Retryable {
				if c.resp != nil {
					lastHeader = c.m.Backend.relayHeader(c.resp.Header)
				}
				continue
			}
			cc := c
			winner = &cc
			for _, o := range running {
				o.cancel(errOutpaced)
			}
		}
	}
	p.reportRace(rep, m, winner, hedge)
	if winner == nil {
		return nil, nil, lastHeader, nil
	}
	rep.Usage = &winner.at.use
	return winner.resp, winner.m, lastHeader, nil
}
