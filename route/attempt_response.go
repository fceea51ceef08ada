package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
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

// Bounds of a plain (non-streamed) answer that is read whole before any of
// it reaches the client, so that a body cut short can still fail over:
// maxBufferedBody for one passed on as it is, maxTranslatedBody for one
// that must be translated. A larger answer passed on as it is goes out as
// it arrives, past the point of failover.
const maxBufferedBody = 4 << 20

// maxRetryAfter bounds any Retry-After read from a backend.
const maxRetryAfter = 24 * time.Hour

// answered handles the backend's answer to the attempt, resp: the
// backend's quota learns from its headers, a failing status is
// classified from its error body, a stream is passed on once its first
// event is in, and a plain answer is read whole first. It returns what
// try returns.
func (at *attempt) answered(a *Attempt, resp *http.Response) (*http.Response, Attempt, error) {
	b, r := at.b, at.r
	if q := b.Quota; q != nil {
		status := resp.StatusCode
		if status == http.StatusTooManyRequests && r.neverFits(resp.Header) > 0 {
			status = 0 // the request alone is over the limit: the backend still takes others
		}
		q.Observe(at.clk.Now(), at.began, status, resp.Header)
	}
	// The backend has counted the call: its figures, now recorded, replace
	// the reservation. Not before: a call admitted in between would find
	// the reservation gone and the window's old figures, and be sent into
	// a window the answer says is spent.
	at.releaseQuota()
	if resp.StatusCode < 500 && (resp.StatusCode >= 300 || !IsEventStream(resp.Header)) {
		// Alive, for a health check under way (silence.go). A stream's
		// headers are not: a backend whose streams send headers and then
		// nothing, or keep-alive comments, is heard from at its first
		// event (sawFirstEvent, streamAnswer).
		b.check.heardFrom(at.clk.Now(), false)
	}
	a.Status = resp.StatusCode
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return at.p.switched(resp, a, at)
	}
	native, client := wireFormat(b.Provider, at.o.Op), r.format()
	if resp.StatusCode >= 300 {
		// The first-byte bound still runs while the error body is read: a
		// 503 (or a 400) whose body never comes fails over like an answer
		// that never came, and is never passed on empty.
		errBody, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil {
			resp.Body.Close()
			_, fa, ferr := at.failed(a, rerr)
			fa.Status = resp.StatusCode
			return nil, fa, ferr
		}
		return at.failedStatus(resp, errBody, a, native, client)
	}
	a.Reason = ReasonOK
	switch {
	case IsEventStream(resp.Header):
		return at.streamAnswer(a, resp, native, client)
	case at.o.Op.passesBody() && native == client:
		// Audio made as it is sent: passed on as it arrives, past the
		// point of failover once its headers are in; the breaker learns
		// how it ended.
		a.Duration = at.gotFirstByte()
		b.lat.observe(false, a.Duration)
		at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
		resp.Body = at.passOn(resp.Body, resp.Body)
		return resp, *a, nil
	}
	return at.plainAnswer(a, resp, native, client)
}

// streamAnswer passes on a stream once its first content is in (see
// commit.go; for an operation whose events it cannot tell apart, its first
// event). A stream's first byte is its first content, not the headers, a
// keep-alive comment nor an event that commits nothing (Azure's
// prompt_filter_results, a role-only delta): it is waited for under the
// first-byte timeout, so a backend that sends those and then nothing can
// still be failed over. Once passed on, a stream that falls silent after
// a steady event ends by the stall rule (see stall.go).
func (at *attempt) streamAnswer(a *Attempt, resp *http.Response, native, client translate.Format) (*http.Response, Attempt, error) {
	p, b, o := at.p, at.b, &at.o
	events := answersInEvents(o.Op)
	var rest io.Reader
	var perr error
	if events {
		rest, perr = readToContent(resp.Body, native, at.sawFirstEvent)
	} else {
		rest, perr = readToFirstEvent(resp.Body)
	}
	if perr != nil {
		resp.Body.Close()
		if perr == io.EOF {
			perr = io.ErrUnexpectedEOF
		}
		return at.failed(a, perr)
	}
	b.check.heardFrom(at.clk.Now(), true)
	a.Duration = at.gotFirstByte()
	b.lat.observe(true, a.Duration)
	// The first content decides a half-open probe: a long stream does not
	// hold the backend half-open for minutes.
	at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
	wrapped := at.passOn(resp.Body, rest)
	if native == client && events {
		wrapped.end = &streamEnd{format: native}
	}
	if events && b.IdleTimeout > 0 {
		wrapped.stall = newStallWatch(native)
	}
	if p.checkModel(b) {
		wrapped.modelOf = func(prefix []byte) string { return translate.ModelOf(errorFormat(native), prefix) }
		wrapped.onModel = func(model string) { p.noteModel(b, model) }
	}
	resp.Body = wrapped
	at.streamReaders(resp, wrapped, native, client)
	return resp, *a, nil
}

// streamReaders layers over a passed-on stream what the client's copy
// needs: translation into the client's format, redaction of a
// passed-through stream, the backend's name in the answer's IDs, and the
// usage read as it passes (the chunk taken out when the gateway, not the
// caller, asked for it).
func (at *attempt) streamReaders(resp *http.Response, wrapped *body, native, client translate.Format) {
	b, r, o := at.b, at.r, &at.o
	if native != client {
		conv := streamConverter(native, client, o.Model, r)
		resp.Body = &translatedBody{ReadCloser: translate.NewReader(wrapped, conv), raw: wrapped}
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Header.Set("Content-Type", "text/event-stream")
	}
	// An error event the backend sends may quote the credential it was
	// sent, passed through or translated.
	// Redaction, ids and usage read the stream's lines through one line
	// reader (chain).
	lines := &lineBody{lineReader: b.redactingReader(resp.Body), c: resp.Body}
	resp.Body = lines
	if r.tagsAnswer(native, client) {
		lines.chain(r.Tagger.taggingReader(nil, b.Name))
	}
	if at.countsTokens() {
		strip := o.AskedUsage || native != client && client == translate.OpenAI && !r.includeUsage
		guessed := native != client && client == translate.Anthropic
		if at.p.Tokens == nil {
			lines.chain(usageReader(nil, client, &at.use, strip, guessed, nil))
			return
		}
		eb := &estimatingBody{at: at, client: client}
		lines.chain(usageReader(nil, client, &at.use, strip, guessed, &eb.said))
		lines.onEnd = eb.end
	}
}

// plainAnswer handles a plain answer: its headers are its first byte. It
// is read whole (each wait bounded by the idle timeout) before any of it
// reaches the client, so that an answer cut short fails over instead of
// reaching the client as an empty or short reply.
func (at *attempt) plainAnswer(a *Attempt, resp *http.Response, native, client translate.Format) (*http.Response, Attempt, error) {
	a.Duration = at.gotFirstByte()
	bound := int64(maxBufferedBody)
	if native != client {
		bound = maxTranslatedBody
	}
	rd := at.initBody(&at.rd, resp.Body, resp.Body)
	rd.plain = at // its idle bound on the attempt's timer
	raw, rerr := readLimited(rd, bound+1, resp.ContentLength)
	if rerr == nil && resp.ContentLength >= 0 && int64(len(raw)) < resp.ContentLength {
		rerr = io.ErrUnexpectedEOF
	}
	if rerr != nil {
		resp.Body.Close()
		var be *BodyError
		if errors.As(rerr, &be) {
			rerr = be.Err
		}
		_, fa, ferr := at.failed(a, rerr)
		fa.Status = resp.StatusCode
		if fa.Reason != ReasonCanceled {
			fa.Message = "the answer was cut short before any of it reached the client: " + fa.Message
		}
		return nil, fa, ferr
	}
	at.b.lat.observe(false, a.Duration)
	if int64(len(raw)) > bound {
		return at.tooLarge(a, resp, raw, bound, native != client)
	}
	resp.Body.Close()
	at.release()
	return at.plainBody(a, resp, raw, native, client)
}

// tooLarge handles a plain answer over bound, of which raw has been read:
// one to translate fails, one passed on as it is goes out as it arrives,
// past the point of failover, and the breaker learns how it ended.
func (at *attempt) tooLarge(a *Attempt, resp *http.Response, raw []byte, bound int64, translated bool) (*http.Response, Attempt, error) {
	if translated {
		resp.Body.Close()
		at.release()
		at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindInvalidResponse, Cause: "invalid response"})
		a.Reason, a.Retryable, a.Message = ReasonInvalidResponse, true, fmt.Sprintf("the answer is over %d bytes, too large to translate", bound)
		return resp, *a, nil
	}
	// Too large to hold: pass it on as it arrives, past the point of
	// failover; the breaker learns how it ended.
	at.record(breaker.Outcome{Result: breaker.Success, Partial: true})
	resp.Body = at.passOn(resp.Body, io.MultiReader(bytes.NewReader(raw), resp.Body))
	return resp, *a, nil
}

// plainBody ends a plain answer read whole, raw: translated into the
// client's format (an answer that cannot be is a failure), its model
// version and usage noted, its IDs tagged, and set as the response's body.
func (at *attempt) plainBody(a *Attempt, resp *http.Response, raw []byte, native, client translate.Format) (*http.Response, Attempt, error) {
	p, b, r := at.p, at.b, at.r
	out := raw
	if native != client {
		var cerr error
		if out, cerr = convertResponse(native, client, raw, at.o.Model, r.Body); cerr != nil {
			at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindInvalidResponse, Cause: "invalid response"})
			a.Reason, a.Retryable, a.Message = ReasonInvalidResponse, true, b.redact(cerr.Error())
			return resp, *a, nil
		}
	}
	at.record(breaker.Outcome{Result: breaker.Success})
	if p.checkModel(b) {
		p.noteModel(b, translate.ModelOf(errorFormat(native), raw))
	}
	known := ""
	if m := b.model.Load(); m != nil {
		known = *m
	}
	at.use = answerUsageKnown(client, out, known)
	if native != client && (client == translate.Anthropic || client == translate.Gemini) && !reportsUsage(native, raw) {
		at.use = Usage{} // the translation's zeros are not a count
	}
	if !at.use.Known && at.p.Tokens != nil && resp.StatusCode/100 == 2 && at.countsTokens() {
		var s said
		s.add(out)
		at.estimateUse(client, &s)
	}
	if r.tagsAnswer(native, client) && isJSON(resp.Header) {
		out = r.Tagger.answer(at.ctx, out, b.Name, resp.StatusCode)
	}
	if native != client || len(out) != len(raw) {
		setBody(resp, out, "application/json")
	} else {
		at.answer.Reset(out)
		resp.Body = &at.answer
		resp.ContentLength = int64(len(out))
		setContentLength(resp.Header, len(out))
	}
	return resp, *a, nil
}

// initBody sets w, and returns it, to read the upstream body rc through r
// (rc itself, or what was read of rc already followed by the rest), each
// wait bounded by the backend's idle timeout, under the attempt's
// contexts. As set, w neither records an outcome nor ends the attempt: a
// plain answer is read so before try decides; see passOn for a body that
// goes to the client.
func (at *attempt) initBody(w *body, rc io.ReadCloser, r io.Reader) *body {
	*w = body{rc: rc, r: r, release: noRelease, cctx: at.ctx, actx: at.actx, idle: at.b.IdleTimeout, clock: at.clk, cancel: at.cancel, backend: at.b.Name}
	return w
}

func noRelease() {}

// passOn returns the wrapper of an upstream body passed on to the client
// as it arrives (see initBody): it tells the breaker how the body ended,
// tells the observer when it failed (EventBodyError), and ends the
// attempt when it is closed.
func (at *attempt) passOn(rc io.ReadCloser, r io.Reader) *body {
	w := at.initBody(new(body), rc, r)
	w.done, w.release, w.onError = at.record, at.release, at.bodyError
	return w
}

// bodyError tells the observer that a passed-on body failed.
func (at *attempt) bodyError(err error) {
	at.p.observe(Event{Kind: EventBodyError, Backend: at.b, Err: err})
}

// misconfiguredHold is how long a backend that answers 401, 403 or 404 is
// benched: a revoked key or a deleted deployment does not heal itself. The
// breaker caps it at its MaxRetryAfter; health probes end it as soon as the
// backend answers again.
const misconfiguredHold = time.Hour

// misconfigured reports whether an upstream status can mean the backend's
// own configuration is broken. The caller's credentials never go upstream,
// and the gateway chose the deployment, so a 401, 403 or 404 from a
// backend is about that backend (its key, its deployment name), not the
// caller; statusScope decides whether it is (operation.go).
func misconfigured(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNotFound
}

// failedStatus handles a non-2xx response whose error body (up to
// maxErrorBody) has been read: classify it by the backend's
// own error (Retry-After in the body, codes that mean longer outages),
// record it with the breaker, and either close it for a retry or pass it
// on in the client's format.
func (at *attempt) failedStatus(resp *http.Response, errBody []byte, a *Attempt, native, client translate.Format) (*http.Response, Attempt, error) {
	p, b, r := at.p, at.b, at.r
	status := resp.StatusCode
	a.Duration = at.gotFirstByte()
	native = bodyErrorFormat(b.Provider, errorFormat(native), errBody)
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
	scope := at.statusScope(status, code)
	switch {
	case status == http.StatusTooManyRequests && r.neverFits(resp.Header) > 0:
		// The request alone is over the backend's whole limit: no wait
		// helps, and the backend is fine for everyone else. Another backend
		// may have a larger limit.
		at.record(breaker.Outcome{Result: breaker.Ignore})
		a.Reason, a.Retryable, a.RetryAfter = ReasonTooLarge, true, 0
		a.Message = fmt.Sprintf("the request needs about %d tokens, more than this backend's whole limit of %d tokens per minute", r.Tokens(), r.neverFits(resp.Header))
		resp.Body.Close()
		at.release()
		return resp, *a, nil
	case scope == scopeOperation:
		return at.unsupportedOperation(resp, errBody, a)
	case scope == scopeBackend:
		at.record(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindMisconfigured, Hold: misconfiguredHold, Cause: fmt.Sprintf("misconfigured: %d", status)})
		a.Reason, a.Retryable, a.Message = ReasonMisconfigured, true, b.redact(errorMessage(errBody))
		seen := *a // a copy, so that a itself can stay on try's stack
		p.observe(Event{Kind: EventMisconfigured, Backend: b, Attempt: &seen, Reason: ReasonMisconfigured})
		resp.Body.Close()
		at.release()
		return resp, *a, nil
	}
	at.record(statusOutcome(status, counts, code, a.RetryAfter))
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
	passError(resp, b, errBody, native, client, r.id())
	return resp, *a, nil
}

// statusOutcome is the breaker's outcome of a failing status: a success
// for one the backend does not count (Backend.counts), else a failure of
// its kind, throttled for a 429 that says when to come back, and held
// for long when the account is out of credit (insufficient_quota).
func statusOutcome(status int, counts bool, code string, retryAfter time.Duration) breaker.Outcome {
	o := breaker.Outcome{Result: breaker.Success}
	if counts {
		o = breaker.Outcome{Result: breaker.Failure, Kind: statusReason(status).kind(), RetryAfter: retryAfter, Cause: strconv.Itoa(status),
			Throttled: status == http.StatusTooManyRequests && retryAfter > 0}
		if code == "insufficient_quota" {
			// The account is out of credit: no use asking again soon.
			o.Hold, o.Kind, o.Cause, o.Throttled = insufficientQuotaHold, breaker.KindQuotaExhausted, "insufficient_quota", false
		}
	}
	return o
}

// passError sets resp's body to the backend's error body, in the
// client's format, with any credential it quotes redacted. native is the
// backend's error format; id is the request's id, the request_id of an
// Anthropic error body made from another format's.
func passError(resp *http.Response, b *Backend, errBody []byte, native, client translate.Format, id string) {
	// The backend's own error body may quote the credential it was sent.
	full := errBody
	if red := b.redact(string(errBody)); red != string(errBody) {
		full = []byte(red)
	}
	if native == client {
		resp.Body = newBytesBody(full)
		resp.ContentLength = int64(len(full))
		resp.Header.Set("Content-Length", strconv.Itoa(len(full)))
		return
	}
	setBody(resp, convertError(native, client, resp.StatusCode, full, id), "application/json")
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
	resp.Body = newBytesBody(b)
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.Header.Set("Content-Type", contentType)
	resp.Header.Del("Content-Encoding")
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
