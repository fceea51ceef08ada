package route

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// MaxFallbackDepth bounds a chain of fallbacks: a request that fell back
// follows its fallback pool's own fallbacks up to this many pools past the
// one it was sent to.
const MaxFallbackDepth = 3

// FallbackCause says why a request left a pool for another.
type FallbackCause string

// Fallback causes.
const (
	// FallbackExhausted: the pool could not answer (Pool.Fallback).
	FallbackExhausted FallbackCause = "exhausted"
	// FallbackContextWindow: a member refused the request for exceeding
	// its context window (Pool.ContextFallback).
	FallbackContextWindow FallbackCause = "context_window"
)

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
	return p.doPatient(ctx, r, p.doFallbacks)
}

// doFallbacks is Do without the waiting: the pool, then its fallbacks.
func (p *Pool) doFallbacks(ctx context.Context, r *Request) (*http.Response, *Report, error) {
	resp, rep, err := p.do(ctx, r)
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
		resp, rep, err = next.do(ctx, r)
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

// fallbackFor returns the pool that a request answered by p with resp,
// rep and err goes to next, and why; nil when it stays with this answer.
func (p *Pool) fallbackFor(r *Request, resp *http.Response, rep *Report, err error) (*Pool, FallbackCause) {
	if err != nil || resp == nil || r.Owner != "" {
		// The client went away, the request cannot be sent, or its state
		// lives on one backend of this pool.
		return nil, ""
	}
	if rep.Served == nil {
		// The pool's own answer: no member answered (every attempt
		// failed, the retry budget refused a retry, or every member was
		// benched, drained or skipped).
		if p.Fallback != nil {
			return p.Fallback, FallbackExhausted
		}
		return nil, ""
	}
	if p.ContextFallback != nil && resp.StatusCode == http.StatusBadRequest && contextWindowRefusal(peekBody(resp, maxErrorBody+4<<10)) {
		return p.ContextFallback, FallbackContextWindow
	}
	return nil, ""
}

func contains(pools []*Pool, p *Pool) bool {
	for _, q := range pools {
		if q == p {
			return true
		}
	}
	return false
}

// peekBody returns up to limit bytes of resp's body, and leaves the body
// to be read whole as before.
func peekBody(resp *http.Response, limit int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return b
}

// contextWindowRefusal reports whether a 400 error body (in the client's
// format: OpenAI's or Anthropic's, translated from the backend's when they
// differ) refuses the request for exceeding the model's context window:
// OpenAI's and Azure's code context_length_exceeded, or, where the
// provider gives no code of its own (Anthropic's invalid_request_error,
// Gemini's INVALID_ARGUMENT) or translation dropped it, the message each
// provider sends ("prompt is too long: 208310 tokens > 200000 maximum",
// "The input token count (1200293) exceeds the maximum number of tokens
// allowed (1048576).", "This model's maximum context length is 8192
// tokens..."). A content-filter refusal (Azure's content_filter,
// innererror ResponsibleAIPolicyViolation) never is one: another pool
// would launder the request through another region.
func contextWindowRefusal(body []byte) bool {
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		// Gemini's streaming errors come in a list.
		var list []json.RawMessage
		if json.Unmarshal(t, &list) != nil || len(list) == 0 {
			return false
		}
		body = list[0]
	}
	var e struct {
		Error struct {
			Message    string          `json:"message"`
			Type       json.RawMessage `json:"type"`
			Code       json.RawMessage `json:"code"`
			InnerError struct {
				Code string `json:"code"`
			} `json:"innererror"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	code := scalar(e.Error.Code)
	if code == "content_filter" || scalar(e.Error.Type) == "content_filter" ||
		e.Error.InnerError.Code == "ResponsibleAIPolicyViolation" {
		return false
	}
	if code == "context_length_exceeded" {
		return true
	}
	msg := strings.ToLower(e.Error.Message)
	switch {
	case strings.Contains(msg, "prompt is too long"), // Anthropic
		strings.Contains(msg, "exceed context limit"),                                                               // Anthropic: input length and max_tokens
		strings.Contains(msg, "maximum context length"),                                                             // OpenAI, Azure, vLLM
		strings.Contains(msg, "exceeds the context window"),                                                         // OpenAI Responses
		strings.Contains(msg, "input token count") && strings.Contains(msg, "exceeds the maximum number of tokens"): // Gemini
		return true
	}
	return false
}

// scalar is a JSON string's value; "" for anything else.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
