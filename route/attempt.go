package route

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/translate"
)

// maxErrorBody bounds how much of an error body is read to classify it
// and to translate it; maxTranslatedBody bounds a non-streaming body that
// must be read whole to be translated.
const (
	maxErrorBody      = 64 << 10
	maxTranslatedBody = 8 << 20
)

// insufficientQuotaHold is how long a backend that says its billing quota
// is exhausted (OpenAI's insufficient_quota) is benched: that does not
// clear in a minute. The breaker caps it at its MaxRetryAfter.
const insufficientQuotaHold = time.Hour

// prepare builds the attempt's request for member m: the body in the
// backend's format with the backend's model. A *translate.UnsupportedError
// means the backend cannot honour the request and is skipped.
func prepare(r *Request, m *Member) (*Outgoing, error) {
	o := new(Outgoing)
	if err := prepareInto(r, m, o); err != nil {
		return nil, err
	}
	return o, nil
}

// prepareInto is prepare into o, which the caller allocated (the pool's
// attempt holds it).
func prepareInto(r *Request, m *Member, o *Outgoing) error {
	prov := m.Backend.Provider
	model := m.Deployment
	if model == "" {
		model = r.Model
	}
	target, from := prov.Format(), r.format()
	*o = Outgoing{Op: r.Op, Model: model, Stream: r.Stream, Header: forwardHeaders(target, r.Header),
		ContentType: r.ContentType, Method: r.Method, Path: r.Path, RawQuery: r.RawQuery}
	if r.Op == Realtime {
		return prepareRealtime(r, m, model, o)
	}
	if wireFormat(prov, r.Op) == from && serves(prov, r.Op) {
		if ib, ok := prov.(interface{ ignoresBodyModel(Operation) bool }); ok && ib.ignoresBodyModel(r.Op) {
			o.Body = r.Body
		} else {
			o.Body = r.BodyFor(model)
		}
		if su, ok := prov.(asksStreamUsage); ok && su.streamUsage() && r.Stream && from == translate.OpenAI &&
			(r.Op == ChatCompletions || r.Op == Completions) && !asksUsage(r.Body) {
			// Ask for the usage chunk, to count the stream's tokens; the
			// caller does not get it.
			o.Body, o.AskedUsage = withUsageAsked(o.Body)
		}
		return nil
	}
	if !r.Op.Translatable() || r.Path != "" {
		return &translate.UnsupportedError{Target: target, Feature: string(r.Op)}
	}
	canon, err := r.canonical()
	if err != nil {
		return badBody(err)
	}
	switch target {
	case translate.OpenAI:
		o.Op = ChatCompletions
		if from != translate.OpenAI {
			// Made by translation: drop or refuse what only some
			// OpenAI-format servers take.
			if canon, err = translate.ForOpenAI(canon, translate.OpenAIOptions{Reasoning: reasoningModel(model)}); err != nil {
				return badBody(err)
			}
		}
		ms := span{}
		if _, s, _, err := peek(canon); err == nil {
			ms = s
		}
		o.Body = withModel(canon, ms, model)
	case translate.Anthropic:
		o.Op = Messages
		o.Body, err = translate.OpenAIRequestToAnthropic(canon, model, translate.AnthropicOptions{MaxTokens: m.MaxTokens})
	case translate.Gemini:
		o.Op = ChatCompletions
		o.Body, err = translate.OpenAIRequestToGemini(canon, translate.GeminiOptions{})
	default:
		err = fmt.Errorf("switchover: backend %s: unknown format %q", m.Backend.Name, target)
	}
	if err != nil {
		return badBody(err)
	}
	o.ContentType = ""
	return nil
}

// reasoningModel reports whether an OpenAI-format model or deployment
// name is of a family that takes reasoning_effort: the o-series, gpt-5
// and gpt-oss, and DeepSeek's reasoner.
func reasoningModel(model string) bool {
	m := strings.ToLower(model)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-oss", "deepseek-r"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// badBody marks a translation failure other than an unsupported feature
// as the caller's malformed request.
func badBody(err error) error {
	var ue *translate.UnsupportedError
	if errors.As(err, &ue) || errors.Is(err, ErrBadBody) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrBadBody, err)
}

// ClassStream is the breaker.Outcome Class of a streamed call; plain
// calls have the empty class. A breaker that streams opened is closed only
// by a stream that gets through.
const ClassStream = "stream"

// Bounds of a plain (non-streamed) answer that is read whole before any of
// it reaches the client, so that a body cut short can still fail over:
// maxBufferedBody for one passed on as it is, maxTranslatedBody for one
// that must be translated. A larger answer passed on as it is goes out as
// it arrives, past the point of failover.
const maxBufferedBody = 4 << 20

// maxRetryAfter bounds any Retry-After read from a backend.
const maxRetryAfter = 24 * time.Hour

// attemptTimers are an attempt's timers, on the pool's clock.
type attemptTimers struct {
	whole, firstByte, slow clock.Timer
}

func stop(t clock.Timer) {
	if t != nil {
		t.Stop()
	}
}

// attempt is the state of one try, allocated once per attempt: its
// methods are what were closures over try's locals (recording the
// outcome, ending the wait for the first byte, releasing the attempt, the
// timers' callbacks), and it holds the attempt's waiter and the reader of
// a plain answer, which would otherwise be allocations of their own.
type attempt struct {
	o      Outgoing // the request, prepared for the backend
	p      *Pool
	b      *Backend
	clk    clock.Clock
	began  time.Time
	class  string       // the outcome's class: ClassStream or ""
	done   breaker.Done // the breaker's, for record
	cancel context.CancelCauseFunc
	// fbCause is the first-byte timer's cancel cause; model and
	// slowAfter are the slow-call timer's check.
	fbCause   error
	model     string
	slowAfter time.Duration
	tm        attemptTimers
	// The timers' deadlines, and which of them are still to be acted on
	// (the due* bits): all three timers call timeUp, one func value
	// instead of one each.
	wholeAt, firstByteAt, slowAt time.Time
	armed                        atomic.Uint32
	w                            waiter      // registered with the backend's checker until the first byte
	unwaited                     atomic.Bool // w is unregistered
	rd                           body        // the reader of a plain answer
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
	at.armed.And(^uint32(dueSlow | dueFirstByte))
	stop(at.tm.slow)
	stop(at.tm.firstByte)
	return at.clk.Now().Sub(at.began)
}

// release ends the attempt.
func (at *attempt) release() {
	if at.ended.CompareAndSwap(false, true) {
		at.b.endAttempt()
	}
	at.releaseQuota()
	at.gotFirstByte()
	at.armed.And(^uint32(dueWhole))
	stop(at.tm.whole)
	at.cancel(context.Canceled)
}

// The deadlines of an attempt's timers, as bits of attempt.armed.
const (
	dueWhole uint32 = 1 << iota
	dueFirstByte
	dueSlow
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
// bound, the first byte's, the slow call's check. A deadline disarmed by
// the first byte or the end of the attempt is not acted on, as a stopped
// timer would not have been.
func (at *attempt) timeUp() {
	now := at.clk.Now()
	if at.claim(dueWhole, at.wholeAt, now) {
		at.cancel(errAttemptTimeout)
	}
	if at.claim(dueFirstByte, at.firstByteAt, now) {
		at.cancel(at.fbCause)
	}
	if at.claim(dueSlow, at.slowAt, now) {
		at.p.slowCall(at.b, at.model, at.slowAfter)
	}
}

// claim disarms deadline bit if it is armed and due at now, and reports
// whether it did.
func (at *attempt) claim(bit uint32, due, now time.Time) bool {
	for {
		armed := at.armed.Load()
		if armed&bit == 0 || now.Before(due) {
			return false
		}
		if at.armed.CompareAndSwap(armed, armed&^bit) {
			return true
		}
	}
}

// failed ends an attempt that got no usable answer because of err; a is
// its report so far. ctx is the request's, actx the attempt's.
func (at *attempt) failed(ctx, actx context.Context, a *Attempt, err error) (*http.Response, Attempt, error) {
	b := at.b
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
func (p *Pool) try(ctx context.Context, r *Request, m *Member, at *attempt, done breaker.Done, deadline time.Time) (*http.Response, Attempt, error) {
	b := m.Backend
	clk := p.clock()
	began := clk.Now()
	a := Attempt{Backend: b.Name, Region: b.Region, Priority: m.priority(), Start: began}
	o := &at.o
	at.p, at.b, at.clk, at.began, at.done, at.model = p, b, clk, began, done, o.Model
	b.beginAttempt() // until release
	if r.Stream {
		at.class = ClassStream
	}

	actx := at.actx
	if actx == nil {
		actx, at.cancel = context.WithCancelCause(ctx)
	}
	cancel := at.cancel
	timeUp := at.timeUp
	if b.Timeout > 0 {
		at.tm.whole = at.arm(dueWhole, b.Timeout, timeUp)
	}
	limit := b.firstByteTimeout(r.Stream)
	fb, fbCause := limit, errFirstByteTimeout
	if !deadline.IsZero() {
		if left := deadline.Sub(began); fb <= 0 || left < fb {
			fb, fbCause = max(left, time.Millisecond), errBudget
		}
	}
	if fb > 0 {
		at.fbCause = fbCause
		at.tm.firstByte = at.arm(dueFirstByte, fb, timeUp)
	}
	at.w.cancel = cancel
	b.check.wait(&at.w)
	// A call still waiting at its slow threshold gets the backend checked;
	// when the threshold is not below the first-byte bound, that bound
	// decides alone.
	if slowAfter := b.lat.slowAfter(r.Stream, limit); limit <= 0 || slowAfter < limit {
		at.slowAfter = slowAfter
		at.tm.slow = at.arm(dueSlow, slowAfter, timeUp)
	}
	failed := func(err error) (*http.Response, Attempt, error) { return at.failed(ctx, actx, &a, err) }

	req, err := b.Provider.NewRequest(actx, o)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			return failed(err) // cancelled: a timer, or the hedge's race
		}
		if errors.Is(err, ErrAuth) && ctx.Err() == nil {
			// No token for this backend: another backend may still serve.
			a.Duration = clk.Now().Sub(began)
			at.release()
			at.record(breaker.Outcome{Result: breaker.Failure, Kind: ReasonAuth.kind(), Cause: string(ReasonAuth)})
			a.Reason, a.Retryable, a.Message = ReasonAuth, true, b.redact(err.Error())
			return nil, a, nil
		}
		at.release()
		at.record(breaker.Outcome{Result: breaker.Ignore})
		if ctx.Err() != nil {
			a.Reason = ReasonCanceled
			return nil, a, context.Cause(ctx)
		}
		a.Reason, a.Message = ReasonConnect, b.redact(err.Error())
		return nil, a, &redactedError{msg: fmt.Sprintf("switchover: backend %s: building request: %s", b.Name, a.Message), err: err}
	}
	resp, err := b.transport().RoundTrip(req)
	// Answered or not, the backend has counted the call (or never got it):
	// the reservation ends, and its own figures replace it.
	at.releaseQuota()
	if err != nil {
		return failed(err)
	}
	if q := b.Quota; q != nil {
		status := resp.StatusCode
		if status == http.StatusTooManyRequests && r.neverFits(resp.Header) > 0 {
			status = 0 // the request alone is over the limit: the backend still takes others
		}
		q.Observe(clk.Now(), began, status, resp.Header)
	}
	a.Status = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return p.switched(resp, &a, at, failed)
	}
	native, client := wireFormat(b.Provider, o.Op), r.format()
	if resp.StatusCode >= 300 {
		// The first-byte bound still runs while the error body is read: a
		// 503 (or a 400) whose body never comes fails over like an answer
		// that never came, and is never passed on empty.
		errBody, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil {
			resp.Body.Close()
			_, fa, ferr := failed(rerr)
			fa.Status = resp.StatusCode
			return nil, fa, ferr
		}
		return p.failedStatus(r, b, resp, errBody, &a, native, client, at)
	}
	a.Reason = ReasonOK

	if IsEventStream(resp.Header) {
		// A stream's first byte is its first event, not the headers nor a
		// keep-alive comment: wait for it under the first-byte timeout, so a
		// backend that sends headers and then nothing can still be failed
		// over.
		rest, perr := readToFirstEvent(resp.Body)
		if perr != nil {
			resp.Body.Close()
			if perr == io.EOF {
				perr = io.ErrUnexpectedEOF
			}
			return failed(perr)
		}
		a.Duration = at.gotFirstByte()
		b.lat.observe(true, a.Duration)
		// The first event decides a half-open probe: a long stream does not
		// hold the backend half-open for minutes.
		at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
		wrapped := &body{
			rc:      resp.Body,
			r:       rest,
			done:    at.record,
			release: at.release,
			cctx:    ctx,
			actx:    actx,
			idle:    b.IdleTimeout,
			clock:   clk,
			cancel:  cancel,
			onError: func(err error) { p.observe(Event{Kind: EventBodyError, Backend: b, Err: err}) },
			backend: b.Name,
		}
		if native == client && (o.Op.IsChat() || o.Op == Completions || o.Op == Responses) {
			wrapped.end = &streamEnd{format: native}
		}
		if p.checkModel(b) {
			wrapped.onModel = func(prefix []byte) { p.noteModel(b, translate.ModelOf(errorFormat(native), prefix)) }
		}
		resp.Body = wrapped
		if native != client {
			conv := streamConverter(native, client, o.Model, r)
			resp.Body = &translatedBody{ReadCloser: translate.NewReader(wrapped, conv), raw: wrapped}
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		if native == client {
			// Passed through: an error event the backend sends may quote
			// the credential it was sent.
			resp.Body = &lineBody{lineReader: b.redactingReader(resp.Body), c: resp.Body}
		}
		if r.tagsIDs() {
			resp.Body = &lineBody{lineReader: taggingReader(resp.Body, b.Name), c: resp.Body}
		}
		if o.Op.IsChat() || o.Op == Completions || o.Op == Responses || r.Op.IsChat() || r.Op == Responses {
			strip := o.AskedUsage || native != client && client == translate.OpenAI && !r.includeUsage
			resp.Body = &lineBody{lineReader: usageReader(resp.Body, client, &at.use, strip), c: resp.Body}
		}
		return resp, a, nil
	}

	if o.Op.passesBody() && native == client {
		// Audio made as it is sent: passed on as it arrives, past the
		// point of failover once its headers are in; the breaker learns
		// how it ended.
		a.Duration = at.gotFirstByte()
		b.lat.observe(false, a.Duration)
		at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
		resp.Body = &body{
			rc: resp.Body, r: resp.Body, done: at.record, release: at.release,
			cctx: ctx, actx: actx, idle: b.IdleTimeout, clock: clk, cancel: cancel, backend: b.Name,
			onError: func(err error) { p.observe(Event{Kind: EventBodyError, Backend: b, Err: err}) },
		}
		return resp, a, nil
	}

	// A plain answer: its headers are its first byte. Read it whole (each
	// wait bounded by the idle timeout) before any of it reaches the
	// client, so that an answer cut short fails over instead of reaching
	// the client as an empty or short reply.
	a.Duration = at.gotFirstByte()
	bound := int64(maxBufferedBody)
	if native != client {
		bound = maxTranslatedBody
	}
	at.rd = body{rc: resp.Body, r: resp.Body, release: func() {}, cctx: ctx, actx: actx, idle: b.IdleTimeout, clock: clk, cancel: cancel, backend: b.Name}
	raw, rerr := readLimited(&at.rd, bound+1, resp.ContentLength)
	if rerr == nil && resp.ContentLength >= 0 && int64(len(raw)) < resp.ContentLength {
		rerr = io.ErrUnexpectedEOF
	}
	if rerr != nil {
		resp.Body.Close()
		var be *BodyError
		if errors.As(rerr, &be) {
			rerr = be.Err
		}
		_, fa, ferr := failed(rerr)
		fa.Status = resp.StatusCode
		if fa.Reason != ReasonCanceled {
			fa.Message = "the answer was cut short before any of it reached the client: " + fa.Message
		}
		return nil, fa, ferr
	}
	b.lat.observe(false, a.Duration)
	if int64(len(raw)) > bound {
		if native != client {
			resp.Body.Close()
			at.release()
			at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindInvalidResponse, Cause: "invalid response"})
			a.Reason, a.Retryable, a.Message = ReasonInvalidResponse, true, fmt.Sprintf("the answer is over %d bytes, too large to translate", bound)
			return resp, a, nil
		}
		// Too large to hold: pass it on as it arrives, past the point of
		// failover; the breaker learns how it ended.
		at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
		resp.Body = &body{
			rc: resp.Body, r: io.MultiReader(bytes.NewReader(raw), resp.Body), done: at.record, release: at.release,
			cctx: ctx, actx: actx, idle: b.IdleTimeout, clock: clk, cancel: cancel, backend: b.Name,
			onError: func(err error) { p.observe(Event{Kind: EventBodyError, Backend: b, Err: err}) },
		}
		return resp, a, nil
	}
	resp.Body.Close()
	at.release()
	out := raw
	if native != client {
		var cerr error
		if out, cerr = convertResponse(native, client, raw, o.Model, r.Body); cerr != nil {
			at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindInvalidResponse, Cause: "invalid response"})
			a.Reason, a.Retryable, a.Message = ReasonInvalidResponse, true, b.redact(cerr.Error())
			return resp, a, nil
		}
	}
	at.record(breaker.Outcome{Result: breaker.Success})
	if p.checkModel(b) {
		p.noteModel(b, translate.ModelOf(errorFormat(native), raw))
	}
	at.use = answerUsage(client, out)
	if r.tagsIDs() && isJSON(resp.Header) {
		out = TagIDs(out, b.Name)
	}
	if native != client || len(out) != len(raw) {
		setBody(resp, out, "application/json")
	} else {
		resp.Body = newBytesBody(out)
		resp.ContentLength = int64(len(out))
		setContentLength(resp.Header, len(out))
	}
	return resp, a, nil
}

// misconfiguredHold is how long a backend that answers 401, 403 or 404 is
// benched: a revoked key or a deleted deployment does not heal itself. The
// breaker caps it at its MaxRetryAfter; health probes end it as soon as the
// backend answers again.
const misconfiguredHold = time.Hour

// misconfigured reports whether an upstream status means the backend's own
// configuration is broken. The caller's credentials never go upstream, and
// the gateway chose the deployment, so a 401, 403 or 404 from a backend is
// about that backend (its key, its deployment name), not the caller.
func misconfigured(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound
}

// failedStatus handles a non-2xx response whose error body (up to
// maxErrorBody) has been read: classify it by the backend's
// own error (Retry-After in the body, codes that mean longer outages),
// record it with the breaker, and either close it for a retry or pass it
// on in the client's format.
func (p *Pool) failedStatus(r *Request, b *Backend, resp *http.Response, errBody []byte, a *Attempt, native, client translate.Format, at *attempt) (*http.Response, Attempt, error) {
	status := resp.StatusCode
	a.Duration = at.gotFirstByte()
	native = errorFormat(native)
	retry, counts := p.retries(status), b.counts(status)
	a.RetryAfter = RetryAfter(resp.Header, a.Start)
	if a.RetryAfter == 0 {
		a.RetryAfter = translate.RetryDelay(native, errBody)
	}
	// An absurd Retry-After (retry-after-ms: 1e300) must not overflow the
	// time arithmetic; the breaker and the client-facing header cap it
	// further.
	a.RetryAfter = min(a.RetryAfter, maxRetryAfter)
	code := translate.ErrorCode(native, errBody)
	switch {
	case status == http.StatusTooManyRequests && r.neverFits(resp.Header) > 0:
		// The request alone is over the backend's whole limit: no wait
		// helps, and the backend is fine for everyone else. Another backend
		// may have a larger limit.
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Retryable, a.RetryAfter = ReasonTooLarge, true, 0
		a.Message = fmt.Sprintf("the request needs about %d tokens, more than this backend's whole limit of %d tokens per minute", r.estimateTokens(), r.neverFits(resp.Header))
		resp.Body.Close()
		at.release()
		return resp, *a, nil
	case misconfigured(status) && !(status == http.StatusNotFound && r.Path != ""):
		// (A 404 of a call on an object says the object is gone: the
		// caller's answer, not the backend's fault.)
		at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindMisconfigured, Hold: misconfiguredHold, Cause: fmt.Sprintf("misconfigured: %d", status)})
		a.Reason, a.Retryable, a.Message = ReasonMisconfigured, true, b.redact(errorMessage(errBody))
		seen := *a // a copy, so that a itself can stay on try's stack
		p.observe(Event{Kind: EventMisconfigured, Backend: b, Attempt: &seen, Reason: ReasonMisconfigured})
		resp.Body.Close()
		at.release()
		return resp, *a, nil
	}
	o := breaker.Outcome{Result: breaker.Success}
	if counts {
		o = breaker.Outcome{Result: breaker.Failure, Kind: statusReason(status).kind(), RetryAfter: a.RetryAfter, Cause: strconv.Itoa(status),
			Throttled: status == http.StatusTooManyRequests && a.RetryAfter > 0}
		if code == "insufficient_quota" {
			// The account is out of credit: no use asking again soon.
			o.Hold, o.Kind, o.Cause, o.Throttled = insufficientQuotaHold, breaker.KindQuotaExhausted, "insufficient_quota", false
		}
	}
	at.record(o)
	if retry || counts {
		a.Reason = statusReason(status)
		a.Message = b.redact(errorMessage(errBody))
	}
	if retry {
		a.Retryable = true
		resp.Body.Close()
		at.release()
		return resp, *a, nil
	}
	// Passed on to the client (its own error, or a counted status that is
	// not retried), as read: at most maxErrorBody, all of it read under
	// the first-byte bound.
	resp.Body.Close()
	at.release()
	// The backend's own error body may quote the credential it was sent.
	full := errBody
	if red := b.redact(string(errBody)); red != string(errBody) {
		full = []byte(red)
	}
	if native == client {
		resp.Body = io.NopCloser(bytes.NewReader(full))
		resp.ContentLength = int64(len(full))
		resp.Header.Set("Content-Length", strconv.Itoa(len(full)))
		return resp, *a, nil
	}
	setBody(resp, convertError(native, client, status, full), "application/json")
	return resp, *a, nil
}

// readLimited reads r to its end, or to limit bytes, as
// io.ReadAll(io.LimitReader(r, limit)) does; size, if not negative, is
// the length the body declared, so that a body of that length takes one
// allocation of its size instead of ReadAll's growing buffer.
func readLimited(r io.Reader, limit, size int64) ([]byte, error) {
	lr := io.LimitedReader{R: r, N: limit}
	n := int64(512)
	if size >= 0 && size < limit {
		n = size + 1 // room to read the EOF without growing
	}
	b := make([]byte, 0, min(n, limit))
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// setContentLength sets h's Content-Length to n, leaving it be when it
// says n already in that form (the usual case: the upstream's own).
func setContentLength(h http.Header, n int) {
	var buf [20]byte
	num := strconv.AppendInt(buf[:0], int64(n), 10)
	if cl := h["Content-Length"]; len(cl) == 1 && cl[0] == string(num) {
		return
	}
	h.Set("Content-Length", string(num))
}

// setBody replaces a response's body with b.
func setBody(resp *http.Response, b []byte, contentType string) {
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.Header.Set("Content-Type", contentType)
	resp.Header.Del("Content-Encoding")
}

// convertResponse translates a non-streaming success body from the
// backend's format to the client's, through the OpenAI format. req is the
// client's request body (a Responses answer echoes some of it).
func convertResponse(native, client translate.Format, body []byte, model string, req []byte) ([]byte, error) {
	if native == client {
		return body, nil
	}
	var err error
	switch native {
	case translate.Anthropic:
		body, err = translate.AnthropicResponseToOpenAI(body)
	case translate.Gemini:
		body, err = translate.GeminiResponseToOpenAI(body, model)
	}
	if err != nil {
		return nil, err
	}
	switch client {
	case translate.Anthropic:
		return translate.OpenAIResponseToAnthropic(body)
	case translate.Responses:
		return translate.OpenAIResponseToResponses(body, req)
	}
	return body, nil
}

// errorFormat is the format of f's error bodies: the Responses API's are
// OpenAI's.
func errorFormat(f translate.Format) translate.Format {
	if f == translate.Responses {
		return translate.OpenAI
	}
	return f
}

// convertError translates an error body into the client's format, keeping
// the backend's own message.
func convertError(native, client translate.Format, status int, body []byte) []byte {
	native, client = errorFormat(native), errorFormat(client)
	if client == translate.Anthropic {
		if native == translate.Anthropic {
			return body
		}
		return translate.ErrorToAnthropic(translate.OpenAI, status, translate.ErrorToOpenAI(native, status, body))
	}
	return translate.ErrorToOpenAI(native, status, body)
}

// streamConverter returns the converter of a stream from the backend's
// format to the client's, or nil when they are the same. The Anthropic
// client's message_start carries an estimate of the input tokens, which
// chat streams report only at their end.
func streamConverter(native, client translate.Format, model string, r *Request) translate.StreamConverter {
	if native == client {
		return nil
	}
	var toOpenAI translate.StreamConverter // the backend's stream as chat chunks
	// The usage chunk is always made, to count the stream's tokens; a
	// caller that did not ask for it does not get it (see usageReader).
	switch native {
	case translate.Anthropic:
		toOpenAI = translate.NewAnthropicToOpenAIStream(true)
	case translate.Gemini:
		toOpenAI = translate.NewGeminiToOpenAIStream(model, true)
	}
	var fromOpenAI translate.StreamConverter
	switch client {
	case translate.Anthropic:
		est, _ := translate.EstimateAnthropicTokens(r.Body)
		fromOpenAI = translate.NewOpenAIToAnthropicStreamWith(translate.AnthropicStreamOptions{InputTokens: est})
	case translate.Responses:
		fromOpenAI = translate.NewOpenAIToResponsesStream(r.Body)
	}
	switch {
	case toOpenAI == nil:
		return fromOpenAI
	case fromOpenAI == nil:
		return toOpenAI
	}
	return translate.Chain(toOpenAI, fromOpenAI)
}

// IsEventStream reports whether a response is a server-sent event stream:
// whether mime.ParseMediaType finds the media type text/event-stream in
// its Content-Type. It runs on every response, so the media type is
// compared in place first; only a text/event-stream with parameters,
// which ParseMediaType may still reject, is parsed.
func IsEventStream(h http.Header) bool {
	v := h.Get("Content-Type")
	base, _, params := strings.Cut(v, ";")
	if !asciiLowerIs(strings.TrimSpace(base), "text/event-stream") {
		return false
	}
	if !params {
		return true
	}
	mt, _, _ := mime.ParseMediaType(v)
	return mt == "text/event-stream"
}

// asciiLowerIs reports whether strings.ToLower(s) == lower, for lower in
// lower-case ASCII, without building the lowered string. (No non-ASCII
// rune lowers to an ASCII letter other than k, so s must be ASCII too.)
func asciiLowerIs(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// errorMessage returns an error body's message (error.message, or
// message), or the start of its raw text when it is not that shape.
func errorMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		if e.Error.Message != "" {
			return e.Error.Message
		}
		if e.Message != "" {
			return e.Message
		}
	}
	const max = 300
	if len(b) > max {
		b = b[:max]
	}
	return string(b)
}
