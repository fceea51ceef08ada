package route

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
)

// ClassStream is the breaker.Outcome Class of a streamed call; plain
// calls have the empty class. A breaker that streams opened is closed only
// by a stream that gets through.
const ClassStream = "stream"

// attemptTimers are an attempt's timers, on the pool's clock.
type attemptTimers struct {
	whole, firstByte, slow, contentSlow clock.Timer
}

func stop(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}

// attempt is the state of one try, allocated once per attempt: try's
// steps are its methods (begin, answered and theirs), as are what would
// be closures over try's locals (recording the outcome, ending the wait
// for the first byte, releasing the attempt, the timers' callbacks), and
// it holds the attempt's waiter and the reader of a plain answer, which
// would otherwise be allocations of their own.
type attempt struct {
	o      Outgoing // the request, prepared for the backend
	p      *Pool
	m      *Member // the member tried; nil for a health check
	b      *Backend
	r      *Request        // the client's request
	ctx    context.Context // the client's context
	clk    clock.Clock
	began  time.Time
	class  string       // the outcome's class: ClassStream or ""
	done   breaker.Done // the breaker's, for record
	cancel context.CancelCauseFunc
	// fbCause is the first-byte timer's cancel cause; model and
	// slowAfter are the slow-call timer's check. For a stream whose first
	// event comes sooner than its content (Azure's filter results),
	// slowAfter is learned from first events and slowLater, the content's
	// threshold, takes over once the first event is in (sawFirstEvent):
	// a region gone dark is noticed by the calls that get no event at all,
	// and a stream that has had its first event but waits long for its
	// content is checked too, later.
	fbCause              error
	model                string
	slowAfter, slowLater time.Duration
	tm                   attemptTimers
	// The timers' deadlines, and which of them are still to be acted on
	// (the due* bits): all the timers call timeUp, one func value instead
	// of one each.
	wholeAt, firstByteAt, slowAt, contentSlowAt, idleAt time.Time
	armed                                               atomic.Uint32

	w        waiter      // registered with the backend's checker until the first byte
	unwaited atomic.Bool // w is unregistered
	rd       body        // the reader of a plain answer
	answer   bytesBody   // a plain answer read whole, as the client gets it
	// quotaRelease returns the attempt's reservation of the backend's
	// quota, once the backend has answered (and counted the call itself);
	// nil when the backend's quota is not tracked.
	quotaRelease func()
	ended        atomic.Bool // release has counted the attempt out of the backend's in-flight count
	// use is the usage the answer reports, as the client gets it: read
	// from a plain answer before try returns, from a stream as it passes.
	use Usage
	// actx, if set before try, is the attempt's context, made by the
	// caller with cancel so that it can cancel the attempt from another
	// goroutine (a hedged request's loser); try makes its own otherwise.
	actx context.Context
	// firstByte, if not nil, is closed when the attempt has its first
	// byte or ends (a hedged request's first attempt).
	firstByte chan struct{}
}

// releaseQuota returns the attempt's quota reservation, once.
func (at *attempt) releaseQuota() {
	if at.quotaRelease != nil {
		at.quotaRelease()
		at.quotaRelease = nil
	}
}

// record tells the breaker the attempt's outcome.
func (at *attempt) record(out breaker.Outcome) {
	out.Class = at.class
	at.done(out)
}

// gotFirstByte ends the wait for the first byte, and returns the time
// since the attempt began.
func (at *attempt) gotFirstByte() time.Duration {
	if at.unwaited.CompareAndSwap(false, true) {
		at.b.check.unwait(&at.w)
		if at.firstByte != nil {
			close(at.firstByte)
		}
	}
	at.armed.And(^uint32(dueSlow | dueFirstByte | dueContentSlow))
	stop(at.tm.slow)
	stop(at.tm.contentSlow)
	stop(at.tm.firstByte)
	return at.clk.Now().Sub(at.began)
}

// sawFirstEvent notes a stream's first event, which may carry no content
// (see commit.go): the backend is heard from, its time to it is learned,
// and when the slow-call check was armed at the first events' threshold,
// the content's threshold takes over (slowLater, from the attempt's
// start).
func (at *attempt) sawFirstEvent() {
	now := at.clk.Now()
	at.b.check.heardFrom(now, true) // alive, for a health check under way
	at.b.events.observe(true, now.Sub(at.began))
	if at.slowLater <= 0 || at.armed.And(^dueSlow)&dueSlow == 0 {
		return // no later threshold, or the check has gone already
	}
	stop(at.tm.slow)
	due := at.began.Add(at.slowLater)
	if !due.After(now) {
		at.p.slowCall(at.b, at.model, at.slowLater, at.r.Stream)
		return
	}
	at.contentSlowAt = due
	at.armed.Or(dueContentSlow)
	at.tm.contentSlow = at.clk.AfterFunc(due.Sub(now), at.timeUp)
}

// release ends the attempt.
func (at *attempt) release() {
	if at.ended.CompareAndSwap(false, true) {
		at.b.endAttempt()
	}
	at.releaseQuota()
	at.gotFirstByte()
	at.armed.And(^uint32(dueWhole | dueIdle))
	stop(at.tm.whole)
	at.cancel(context.Canceled)
}

// armIdle bounds the wait of a plain answer's body for its next bytes
// (see body.plain) by wait, on the first-byte timer, which the first
// byte has stopped: one timer fewer an attempt than the body's own was.
func (at *attempt) armIdle(wait time.Duration) {
	at.idleAt = at.clk.Now().Add(wait)
	at.armed.Or(dueIdle)
	if at.tm.firstByte == nil {
		at.tm.firstByte = at.clk.AfterFunc(wait, at.timeUp)
		return
	}
	at.tm.firstByte.Reset(wait)
}

// disarmIdle ends the wait armIdle bounded.
func (at *attempt) disarmIdle() {
	at.armed.And(^dueIdle)
	stop(at.tm.firstByte)
}

// The deadlines of an attempt's timers, as bits of attempt.armed.
const (
	dueWhole uint32 = 1 << iota
	dueFirstByte
	dueSlow
	dueContentSlow
	dueIdle // a plain answer's body's wait for its next bytes (armIdle)
)

// arm starts the timer of deadline bit, d from the attempt's start.
func (at *attempt) arm(bit uint32, d time.Duration, timeUp func()) clock.Timer {
	due := at.began.Add(d)
	switch bit {
	case dueWhole:
		at.wholeAt = due
	case dueFirstByte:
		at.firstByteAt = due
	case dueSlow:
		at.slowAt = due
	}
	at.armed.Or(bit)
	return at.clk.AfterFunc(d, timeUp)
}

// timeUp is every timer's callback: it acts on each armed deadline that
// has come, as the clock says (a Clock runs a timer only once its time
// has passed), in the order the timers were armed: the whole attempt's
// bound, the first byte's, a plain body's idle bound (armIdle), the slow
// call's check (before a stream's first event, then before its content).
// A deadline disarmed by the first byte or the end of the attempt is not
// acted on, as a stopped timer would not have been.
func (at *attempt) timeUp() {
	now := at.clk.Now()
	if at.claim(dueWhole, &at.wholeAt, now) {
		at.cancel(errAttemptTimeout)
	}
	if at.claim(dueFirstByte, &at.firstByteAt, now) {
		at.cancel(at.fbCause)
	}
	if at.claim(dueIdle, &at.idleAt, now) {
		at.cancel(errIdleTimeout)
	}
	if at.claim(dueSlow, &at.slowAt, now) {
		at.p.slowCall(at.b, at.model, at.slowAfter, at.r.Stream)
	}
	if at.claim(dueContentSlow, &at.contentSlowAt, now) {
		at.p.slowCall(at.b, at.model, at.slowLater, at.r.Stream)
	}
}

// claim disarms deadline bit if it is armed and due at now, and reports
// whether it did. due is read only once the bit is seen armed: a deadline
// is set before its bit (sawFirstEvent sets one while timers may run).
func (at *attempt) claim(bit uint32, due *time.Time, now time.Time) bool {
	for {
		armed := at.armed.Load()
		if armed&bit == 0 || now.Before(*due) {
			return false
		}
		if at.armed.CompareAndSwap(armed, armed&^bit) {
			return true
		}
	}
}

// failed ends an attempt that got no usable answer because of err; a is
// its report so far.
func (at *attempt) failed(a *Attempt, err error) (*http.Response, Attempt, error) {
	ctx, actx, b := at.ctx, at.actx, at.b
	a.Duration = at.clk.Now().Sub(at.began)
	reason := errReason(ctx, actx, err)
	cause := context.Cause(actx)
	at.release()
	switch {
	case reason == ReasonCanceled:
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason = ReasonCanceled
		return nil, *a, context.Cause(ctx)
	case cause == errUnresponsive:
		// The health check that found the backend unresponsive has
		// opened its breaker already.
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Retryable, a.Message, a.Abandoned = ReasonUnresponsive, true, "the backend stopped answering; a health check failed", true
		return nil, *a, nil
	case cause == errOutpaced:
		// The other attempt of a hedged request answered first: the
		// backend did nothing wrong.
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Message, a.Abandoned = ReasonOutpaced, "another attempt answered first", true
		return nil, *a, nil
	case cause == errBudget:
		// The request's budget ran out: say nothing of the backend.
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Retryable, a.Message, a.Abandoned = ReasonTimeout, true, "the request's time budget ran out", true
		return nil, *a, nil
	}
	a.Reason, a.Retryable, a.Message = reason, true, describeTransportError(reason, err, b)
	a.Abandoned = reason == ReasonFirstByteTimeout || reason == ReasonTimeout
	at.record(breaker.Outcome{Result: breaker.Failure, Kind: reason.kind(), Cause: string(reason)})
	return nil, *a, nil
}

// try makes one attempt on member m with the request prepared in at.o; m's
// breaker has let it through with done. It returns the response to pass
// on, in the client's format (its body wrapped so that the breaker learns
// how the body ended), or for a retryable failure the response with its
// body already closed (nil for transport errors). err is non-nil only when
// the client went away or the request could not be built. deadline, if
// not zero, is the request's budget: the attempt's first byte must come
// before it.
//
// It is three steps: the preparation (the attempt's state, context and
// timers, then the upstream request with the backend's credentials; see
// attempt_prepare.go), the call, and the answer (see attempt_response.go).
func (p *Pool) try(ctx context.Context, r *Request, m *Member, at *attempt, done breaker.Done, deadline time.Time) (*http.Response, Attempt, error) {
	a := at.begin(ctx, p, r, m, done, deadline)
	req, err := at.b.Provider.NewRequest(at.actx, &at.o)
	if err != nil {
		return at.unbuilt(&a, err)
	}
	resp, err := at.b.transport().RoundTrip(req)
	if err != nil {
		at.releaseQuota() // no answer, so no figures to replace the reservation
		return at.failed(&a, err)
	}
	return at.answered(&a, adapted(at.b.Provider, &at.o, resp))
}
