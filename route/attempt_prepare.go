package route

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/translate"
)

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
	*o = Outgoing{Op: r.Op, Model: model, Stream: r.Stream,
		ContentType: r.ContentType, Method: r.Method, Path: r.Path, RawQuery: r.RawQuery}
	if ownProvider(prov) {
		o.fwd, o.fwdFormat = r.Header, target // newUpstream copies what goes, once
	} else {
		o.Header = forwardHeaders(target, r.Header)
	}
	if r.Op == Realtime {
		return prepareRealtime(r, m, model, o)
	}
	if wireFormat(prov, r.Op) == from && serves(prov, r.Op) {
		prepareNative(r, prov, model, from, o)
		return rewrite(prov, o)
	}
	if !r.Op.Translatable() || r.Path != "" {
		return &translate.UnsupportedError{Target: target, Feature: string(r.Op)}
	}
	if err := prepareTranslated(r, m, model, target, from, o); err != nil {
		return err
	}
	return rewrite(prov, o)
}

// ownProvider reports whether prov is one of this package's providers,
// which take the caller's forwarded headers from Outgoing.fwd.
func ownProvider(prov Provider) bool {
	switch prov.(type) {
	case *OpenAI, *Azure, *Anthropic, *Gemini, *Vertex, *Foundry, *Bedrock:
		return true
	}
	return false
}

// prepareNative sets o's body for a backend that takes r in the client's
// own format (from): r's body with the backend's model, or as it is where the
// provider ignores the body's model (an Azure deployment path), and with
// the stream's usage chunk asked for where the provider takes it.
func prepareNative(r *Request, prov Provider, model string, from translate.Format, o *Outgoing) {
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
}

// prepareTranslated sets o's operation and body for a backend of another
// format than the client's: r translated, through the OpenAI format, into
// the backend's (target), with its model.
func prepareTranslated(r *Request, m *Member, model string, target, from translate.Format, o *Outgoing) error {
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
			if canon, err = translate.ForOpenAI(canon, translate.OpenAIOptions{Reasoning: reasoningModel(model), Model: model}); err != nil {
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

// begin readies at for its call on m, which m's breaker let through with
// done: the attempt's state, its context (unless the caller made one, see
// attempt.actx) and its timers. The attempt counts as in flight on the
// backend until release. deadline, if not zero, is the request's budget,
// which the first byte must beat. It returns the attempt's report so far.
func (at *attempt) begin(ctx context.Context, p *Pool, r *Request, m *Member, done breaker.Done, deadline time.Time) Attempt {
	b := m.Backend
	clk := p.clock()
	began := clk.Now()
	a := Attempt{Backend: b.Name, Region: b.Region, Priority: m.priority(), Start: began}
	at.p, at.b, at.r, at.clk, at.began, at.done, at.model = p, b, r, clk, began, done, at.o.Model
	b.beginAttempt() // until release
	if r.Stream {
		at.class = ClassStream
	}
	at.ctx = ctx
	if at.actx == nil {
		at.actx, at.cancel = context.WithCancelCause(ctx)
	}
	at.armTimers(deadline)
	return a
}

// armTimers starts the attempt's timers, all on one callback (timeUp):
// the whole attempt's bound (Backend.Timeout), the first byte's (the
// backend's first-byte timeout, or what is left of deadline when that is
// sooner) and the slow call's check; and registers the attempt with the
// backend's checker until its first byte, where the calls waiting are
// judged together (pileUp).
func (at *attempt) armTimers(deadline time.Time) {
	b, stream := at.b, at.r.Stream
	timeUp := at.timeUp
	if b.Timeout > 0 {
		at.tm.whole = at.arm(dueWhole, b.Timeout, timeUp)
	}
	limit := b.firstByteTimeout(stream)
	fb, fbCause := limit, errFirstByteTimeout
	if !deadline.IsZero() {
		if left := deadline.Sub(at.began); fb <= 0 || left < fb {
			fb, fbCause = max(left, time.Millisecond), errBudget
		}
	}
	if fb > 0 {
		at.fbCause = fbCause
		at.tm.firstByte = at.arm(dueFirstByte, fb, timeUp)
	}
	at.w.cancel, at.w.began, at.w.stream = at.cancel, at.began, stream
	b.check.wait(&at.w)
	at.p.pileUp(b, at.model, at.began)
	// A call still waiting at its slow threshold gets the backend checked;
	// when the threshold is not below the first-byte bound, that bound
	// decides alone. A stream is checked at its first events' threshold
	// until its first event, then at its content's (see sawFirstEvent).
	slow := at.p.slowAfter(b, stream, limit)
	first := slow
	if stream && answersInEvents(at.o.Op) {
		first = min(slow, b.events.slowAfter(true, limit))
	}
	if limit <= 0 || first < limit {
		at.slowAfter = first
		if first < slow && (limit <= 0 || slow < limit) {
			at.slowLater = slow
		}
		at.tm.slow = at.arm(dueSlow, first, timeUp)
	}
}

// unbuilt ends an attempt whose upstream request could not be built
// (Provider.NewRequest failed with err): cancelled meanwhile (a timer, or
// the hedge's race), no credential for the backend (ErrAuth: another
// backend may still serve), the client gone, or a request that cannot be
// made at all, which is the error.
func (at *attempt) unbuilt(a *Attempt, err error) (*http.Response, Attempt, error) {
	ctx, b := at.ctx, at.b
	if at.actx.Err() != nil && ctx.Err() == nil {
		return at.failed(a, err) // cancelled: a timer, or the hedge's race
	}
	if errors.Is(err, ErrAuth) && ctx.Err() == nil {
		// No token for this backend: another backend may still serve.
		a.Duration = at.clk.Now().Sub(at.began)
		at.release()
		at.record(breaker.Outcome{Result: breaker.Failure, Kind: ReasonAuth.kind(), Cause: string(ReasonAuth)})
		a.Reason, a.Retryable, a.Message = ReasonAuth, true, b.redact(err.Error())
		return nil, *a, nil
	}
	at.release()
	at.record(breaker.Outcome{Result: breaker.Ignore})
	if ctx.Err() != nil {
		a.Reason = ReasonCanceled
		return nil, *a, context.Cause(ctx)
	}
	a.Reason, a.Message = ReasonConnect, b.redact(err.Error())
	return nil, *a, &redactedError{msg: fmt.Sprintf("switchover: backend %s: building request: %s", b.Name, a.Message), err: err}
}
