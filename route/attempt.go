package route

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/translate"
)

// maxErrorBody bounds how much of an error body is read to classify it
// and to translate it; maxTranslatedBody bounds a non-streaming body that
// must be read whole to be translated.
const (
	maxErrorBody      = 64 << 10
	maxTranslatedBody = 64 << 20
)

// insufficientQuotaHold is how long a backend that says its billing quota
// is exhausted (OpenAI's insufficient_quota) is benched: that does not
// clear in a minute. The breaker caps it at its MaxRetryAfter.
const insufficientQuotaHold = time.Hour

// prepare builds the attempt's request for member m: the body in the
// backend's format with the backend's model. A *translate.UnsupportedError
// means the backend cannot honour the request and is skipped.
func prepare(r *Request, m *Member) (*Outgoing, error) {
	prov := m.Backend.Provider
	model := m.Model
	if model == "" {
		model = r.Model
	}
	o := &Outgoing{Op: r.Op, Model: model, Stream: r.Stream, Header: r.Header}
	target, from := prov.Format(), r.format()
	if target == from {
		if ib, ok := prov.(interface{ ignoresBodyModel() bool }); ok && ib.ignoresBodyModel() {
			o.Body = r.Body
		} else {
			o.Body = r.BodyFor(model)
		}
		return o, nil
	}
	if !r.Op.IsChat() {
		return nil, &translate.UnsupportedError{Target: target, Feature: string(r.Op)}
	}
	canon, err := r.canonical()
	if err != nil {
		return nil, badBody(err)
	}
	switch target {
	case translate.OpenAI:
		o.Op = ChatCompletions
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
		return nil, badBody(err)
	}
	return o, nil
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

// try makes one attempt on member m with the prepared request o; m's
// breaker has let it through with done. It returns the response to pass
// on, in the client's format (its body wrapped so that the breaker learns
// how the body ended), or for a retryable failure the response with its
// body already closed (nil for transport errors). err is non-nil only when
// the client went away or the request could not be built.
func (p *Pool) try(ctx context.Context, r *Request, m *Member, o *Outgoing, done breaker.Done) (*http.Response, Attempt, error) {
	b := m.Backend
	began := time.Now()
	a := Attempt{Backend: b.Name, Region: b.Region, Priority: m.priority(), Start: p.now()}

	actx, cancel := context.WithCancelCause(ctx)
	var timeout, firstByte *time.Timer
	if b.Timeout > 0 {
		timeout = time.AfterFunc(b.Timeout, func() { cancel(errAttemptTimeout) })
	}
	if d := b.firstByteTimeout(r.Stream); d > 0 {
		firstByte = time.AfterFunc(d, func() { cancel(errFirstByteTimeout) })
	}
	release := func() {
		if firstByte != nil {
			firstByte.Stop()
		}
		if timeout != nil {
			timeout.Stop()
		}
		cancel(context.Canceled)
	}

	req, err := b.Provider.NewRequest(actx, o)
	if err != nil {
		release()
		a.Duration = time.Since(began)
		if errors.Is(err, ErrAuth) && ctx.Err() == nil {
			// No token for this backend: another backend may still serve.
			done(breaker.Outcome{Result: breaker.Failure, Cause: string(ReasonAuth)})
			a.Reason, a.Retryable, a.Message = ReasonAuth, true, err.Error()
			return nil, a, nil
		}
		done(breaker.Outcome{Result: breaker.Ignore})
		if ctx.Err() != nil {
			a.Reason = ReasonCanceled
			return nil, a, context.Cause(ctx)
		}
		a.Reason, a.Message = ReasonConnect, err.Error()
		return nil, a, fmt.Errorf("switchover: backend %s: building request: %w", b.Name, err)
	}
	resp, err := b.transport().RoundTrip(req)
	var rd io.Reader
	if err == nil {
		rd = resp.Body
		if resp.StatusCode == http.StatusOK && IsEventStream(resp.Header) {
			// A stream's first byte is the first event, not the headers:
			// wait for it under the first-byte timeout, so a backend that
			// sends headers and then nothing can still be failed over.
			br := bufio.NewReader(resp.Body)
			if _, perr := br.Peek(1); perr != nil {
				resp.Body.Close()
				resp, err = nil, perr
				if perr == io.EOF {
					err = io.ErrUnexpectedEOF
				}
			}
			rd = br
		}
	}
	if firstByte != nil {
		firstByte.Stop()
	}
	a.Duration = time.Since(began)

	if err != nil {
		reason := errReason(ctx, actx, err)
		release()
		if reason == ReasonCanceled {
			done(breaker.Outcome{Result: breaker.Ignore})
			a.Reason = ReasonCanceled
			return nil, a, context.Cause(ctx)
		}
		a.Reason, a.Retryable, a.Message = reason, true, err.Error()
		done(breaker.Outcome{Result: breaker.Failure, Cause: string(reason)})
		return nil, a, nil
	}

	a.Status = resp.StatusCode
	native, client := b.Provider.Format(), r.format()
	if resp.StatusCode >= 300 {
		return p.failedStatus(r, b, resp, &a, native, client, done, release)
	}

	// A success. Translate it when the client speaks another format.
	a.Reason = ReasonOK
	if native != client && !r.Stream {
		return p.translateWhole(r, b, o, resp, a, native, client, done, release)
	}
	wrapped := (&body{
		rc:      resp.Body,
		r:       rd,
		done:    done,
		release: release,
		cctx:    ctx,
		actx:    actx,
		idle:    b.IdleTimeout,
		cancel:  cancel,
		onError: func(err error) { p.observe(Event{Kind: EventBodyError, Backend: b, Err: err}) },
		backend: b.Name,
	})
	if p.checkModel(b) {
		wrapped.onModel = func(prefix []byte) { p.noteModel(b, translate.ModelOf(native, prefix)) }
	}
	wrapped.start()
	resp.Body = wrapped
	if native != client {
		conv := streamConverter(native, client, o.Model, r.includeUsage)
		resp.Body = &translatedBody{ReadCloser: translate.NewReader(wrapped, conv), raw: wrapped}
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Header.Set("Content-Type", "text/event-stream")
	}
	return resp, a, nil
}

// failedStatus handles a non-2xx response: classify it by the backend's
// own error (Retry-After in the body, codes that mean longer outages),
// record it with the breaker, and either close it for a retry or pass it
// on in the client's format.
func (p *Pool) failedStatus(r *Request, b *Backend, resp *http.Response, a *Attempt, native, client translate.Format, done breaker.Done, release func()) (*http.Response, Attempt, error) {
	status := resp.StatusCode
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	retry, counts := p.retries(status), b.counts(status)
	a.RetryAfter = RetryAfter(resp.Header, a.Start)
	if a.RetryAfter == 0 {
		a.RetryAfter = translate.RetryDelay(native, errBody)
	}
	code := translate.ErrorCode(native, errBody)
	o := breaker.Outcome{Result: breaker.Success}
	if counts {
		o = breaker.Outcome{Result: breaker.Failure, RetryAfter: a.RetryAfter, Cause: strconv.Itoa(status)}
		if code == "insufficient_quota" {
			// The account is out of credit: no use asking again soon.
			o.Hold, o.Cause = insufficientQuotaHold, "insufficient_quota"
		}
	}
	done(o)
	if retry || counts {
		a.Reason = statusReason(status)
		a.Message = errorMessage(errBody)
	}
	if retry {
		a.Retryable = true
		resp.Body.Close()
		release()
		return resp, *a, nil
	}
	// Passed on to the client (its own error, or a counted status that is
	// not retried).
	if native == client {
		resp.Body = (&body{rc: resp.Body, r: io.MultiReader(bytes.NewReader(errBody), resp.Body), release: release, cctx: context.Background(), actx: context.Background(), backend: b.Name}).start()
		return resp, *a, nil
	}
	rest, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	release()
	setBody(resp, convertError(native, client, status, append(errBody, rest...)), "application/json")
	return resp, *a, nil
}

// translateWhole reads a non-streaming success whole and translates it
// into the client's format. A body that does not translate is the
// backend's failure.
func (p *Pool) translateWhole(r *Request, b *Backend, o *Outgoing, resp *http.Response, a Attempt, native, client translate.Format, done breaker.Done, release func()) (*http.Response, Attempt, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxTranslatedBody))
	resp.Body.Close()
	release()
	var out []byte
	if err == nil {
		out, err = convertResponse(native, client, raw, o.Model)
	}
	if err != nil {
		done(breaker.Outcome{Result: breaker.Failure, Cause: "invalid response"})
		a.Reason, a.Retryable, a.Message = ReasonInvalidResponse, true, err.Error()
		return resp, a, nil
	}
	done(breaker.Outcome{Result: breaker.Success})
	if p.checkModel(b) {
		p.noteModel(b, translate.ModelOf(native, raw))
	}
	setBody(resp, out, "application/json")
	return resp, a, nil
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
// backend's format to the client's, through the OpenAI format.
func convertResponse(native, client translate.Format, body []byte, model string) ([]byte, error) {
	var err error
	switch native {
	case translate.Anthropic:
		if client == translate.Anthropic {
			return body, nil
		}
		body, err = translate.AnthropicResponseToOpenAI(body)
	case translate.Gemini:
		body, err = translate.GeminiResponseToOpenAI(body, model)
	}
	if err != nil || client != translate.Anthropic {
		return body, err
	}
	return translate.OpenAIResponseToAnthropic(body)
}

// convertError translates an error body into the client's format, keeping
// the backend's own message.
func convertError(native, client translate.Format, status int, body []byte) []byte {
	if client == translate.Anthropic {
		if native == translate.Anthropic {
			return body
		}
		return translate.ErrorToAnthropic(translate.OpenAI, status, translate.ErrorToOpenAI(native, status, body))
	}
	return translate.ErrorToOpenAI(native, status, body)
}

// streamConverter returns the converter of a stream from the backend's
// format to the client's, or nil when they are the same.
func streamConverter(native, client translate.Format, model string, includeUsage bool) translate.StreamConverter {
	switch {
	case native == client:
		return nil
	case client == translate.OpenAI && native == translate.Anthropic:
		return translate.NewAnthropicToOpenAIStream(includeUsage)
	case client == translate.OpenAI && native == translate.Gemini:
		return translate.NewGeminiToOpenAIStream(model, includeUsage)
	case client == translate.Anthropic && native == translate.OpenAI:
		return translate.NewOpenAIToAnthropicStream()
	case client == translate.Anthropic && native == translate.Gemini:
		return translate.Chain(translate.NewGeminiToOpenAIStream(model, true), translate.NewOpenAIToAnthropicStream())
	}
	return nil
}

// IsEventStream reports whether a response is a server-sent event stream.
func IsEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
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
