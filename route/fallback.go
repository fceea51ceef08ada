package route

import (
	"bytes"
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
