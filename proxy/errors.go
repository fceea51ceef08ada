package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

// errorObject is the OpenAI error body's member:
// {"error":{"message","type","param","code"}}.
type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// apiError is how a stage ends its request with a failure: what the
// caller is answered (the status, the error object's type, code and
// message, more headers) and what the log line records. fail alone writes
// it. Build one with requestError, serverError, gatewayBusy, keyRefusal,
// clientGone or streamBroken, and add to it with its methods.
type apiError struct {
	status         int
	typ, code, msg string // msg never holds a secret
	// header holds the answer's headers besides Content-Type and
	// Content-Length (Retry-After, Allow, Connection …); nil is none.
	header http.Header
	// cause is the error the log line records; nil is none.
	cause error
	// atLimit marks a refusal at one of the gateway's own limits,
	// counted with Refusals.Refused(code).
	atLimit bool
	// gone marks a client that went away: nothing is answered, and the
	// log line says 499 with the cause.
	gone bool
	// ended marks an answer that has ended as it should after its
	// header went out (a stream ended by the backend's own error event):
	// nothing is added to it.
	ended bool
	// refusal is the key's or team's limit that refused the request
	// (keyRefusal): the body says which, the log line names its code,
	// and Refusals counts it with KeyRefused.
	refusal *tenant.Refusal
}

func (e *apiError) Error() string {
	if e.msg == "" && e.cause != nil {
		return e.cause.Error()
	}
	return e.msg
}

// requestError is an invalid_request_error: the caller's request is at
// fault, or names what is not there.
func requestError(status int, code, msg string) *apiError {
	return &apiError{status: status, typ: "invalid_request_error", code: code, msg: msg}
}

// serverError is a server_error: the gateway cannot answer.
func serverError(status int, code, msg string) *apiError {
	return &apiError{status: status, typ: "server_error", code: code, msg: msg}
}

// gatewayBusy is 503 with Retry-After: 1 for a request refused because
// the gateway is at one of its limits, counted with Refusals.
func gatewayBusy(code, msg string) *apiError {
	e := serverError(http.StatusServiceUnavailable, code, msg).with("Retry-After", "1")
	e.atLimit = true
	return e
}

// clientGone is the end of a request whose client went away (err says
// how): there is no one to answer.
func clientGone(err error) *apiError { return &apiError{gone: true, cause: err} }

// because sets the cause the log line records.
func (e *apiError) because(err error) *apiError {
	e.cause = err
	return e
}

// streamBroken is the end of a stream that failed after its header went
// out: an error event with code and msg, then the end of the response.
func streamBroken(code, msg string, cause error) *apiError {
	return &apiError{typ: "server_error", code: code, msg: msg, cause: cause}
}

// with sets the answer's header key to value.
func (e *apiError) with(key, value string) *apiError {
	e.headers().Set(key, value)
	return e
}

// headers returns the answer's headers, for setting.
func (e *apiError) headers() http.Header {
	if e.header == nil {
		e.header = http.Header{}
	}
	return e.header
}

// fail answers err, the error x's pipeline stopped at, in the caller's
// format (OpenAI's error body, Anthropic's for /v1/messages, Google's for
// Gemini's API), and
// records it in the log line and the refusal counts: the one place a
// request's failure is written. After the answer's header it cuts the
// response short instead (cutShort). A nil err, or errAnswered, writes
// nothing. An error that is not an *apiError is a stage's bug: it is
// answered 500.
func (x *exchange) fail(err error) {
	if err == nil || errors.Is(err, errAnswered) {
		return
	}
	var e *apiError
	if !errors.As(err, &e) {
		e = serverError(http.StatusInternalServerError, "internal_error", "switchover: internal error").because(err)
	}
	if x.sent {
		x.lg.err = e.cause
		x.cutShort(e)
		return
	}
	x.lg.status, x.lg.err = e.status, e.cause
	if e.gone {
		return
	}
	h := x.w.Header()
	for k, v := range e.header {
		h[k] = v
	}
	if x.bodyUnread() {
		// net/http would read (up to 256 KiB of) the body before sending
		// the answer, holding the connection for as long as a slow client
		// takes. The connection closes instead, the rest unread (end).
		h.Set("Connection", "close")
	}
	if e.atLimit {
		x.h.refused(e.code)
	}
	if e.refusal != nil {
		x.lg.refused = e.code
		if x.h.Refusals != nil {
			limit := e.refusal.Limit
			if e.refusal.Subject == "end_user" {
				limit = "end user " + limit // apart from the key's own on dashboards
			}
			x.h.Refusals.KeyRefused(x.lg.key, e.code, limit)
		}
	}
	body := e.body()
	switch x.format {
	case translate.Anthropic:
		body = translate.ErrorToAnthropicID(translate.OpenAI, e.status, body, x.lg.id)
	case translate.Gemini:
		body = geminiError(e.status, translate.ErrorToGemini(translate.OpenAI, e.status, body), h)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(e.status)
	x.w.Write(body)
}

// cutShort ends with e a response whose header has gone out, which can
// no longer be answered with an error: a stream with an SSE error event
// in the caller's format that its SDKs surface (streamErrorEvent), or
// with nothing more when it has ended already (e.ended); any other
// response is aborted (http.ErrAbortHandler), so that the client sees the
// failure instead of a short body that looks whole. For a client that
// went away there is nothing to do but record it.
func (x *exchange) cutShort(e *apiError) {
	switch {
	case e.gone:
		x.lg.clientGone = true
	case x.eventStream && e.ended:
	case x.eventStream && e.msg != "":
		x.w.Write(streamErrorEvent(x.format, e.msg, e.code))
		http.NewResponseController(x.w).Flush()
	default:
		panic(http.ErrAbortHandler)
	}
}

// body is e's answer as OpenAI's error body; a key's refusal adds its
// limit (switchover_limit).
func (e *apiError) body() []byte {
	var b struct {
		Error struct {
			errorObject
			Limit *limitObject `json:"switchover_limit,omitempty"`
		} `json:"error"`
	}
	b.Error.errorObject = errorObject{Message: e.msg, Type: e.typ, Code: e.code}
	if e.refusal != nil {
		b.Error.Limit = newLimitObject(e.refusal)
	}
	body, _ := json.Marshal(b)
	return body
}

// Codes of the 503 answered when the gateway is at one of its limits.
const (
	codeBodyMemoryFull  = "request_body_memory_full"
	codeTooManyRequests = "too_many_concurrent_requests"
)

// streamErrorEvent is the SSE event sent when a stream breaks after its
// first bytes reached the client, in the client's format. OpenAI's SDKs
// turn a data event with an "error" member into an error for the caller;
// Anthropic's SDKs an "error" event.
func streamErrorEvent(f translate.Format, msg, code string) []byte {
	if f == translate.Responses {
		b, _ := json.Marshal(map[string]any{"type": "error", "code": code, "message": msg, "param": nil})
		return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
	}
	if f == translate.Anthropic {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": msg}})
		return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
	}
	if f == translate.Gemini {
		// Google's SDKs raise an error for a chunk with an "error" member.
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": http.StatusInternalServerError, "message": msg, "status": "INTERNAL"}})
		return append(append([]byte("data: "), b...), "\n\n"...)
	}
	b, _ := json.Marshal(struct {
		Error errorObject `json:"error"`
	}{errorObject{Message: msg, Type: "server_error", Code: code}})
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
