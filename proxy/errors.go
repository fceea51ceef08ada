package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/switchover-gw/switchover/translate"
)

// apiError is the OpenAI error body: {"error":{"message","type","param","code"}}.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// writeError answers with an OpenAI-style error. The message must never
// contain a secret.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeErrorAs(w, translate.OpenAI, status, typ, code, msg)
}

// writeErrorAs answers with an error in the client's format: OpenAI's, or
// Anthropic's for /v1/messages.
func writeErrorAs(w http.ResponseWriter, f translate.Format, status int, typ, code, msg string) {
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: typ, Code: code}})
	if f == translate.Anthropic {
		body = translate.ErrorToAnthropic(translate.OpenAI, status, body)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// Codes of the 503 answered when the gateway is at one of its limits.
const (
	codeBodyMemoryFull  = "request_body_memory_full"
	codeTooManyRequests = "too_many_concurrent_requests"
)

// writeBusy answers 503 with Retry-After: 1 in the client's format, for a
// request refused because the gateway is at a limit, without reading its
// body.
func writeBusy(w http.ResponseWriter, f translate.Format, code, msg string) {
	w.Header().Set("Retry-After", "1")
	writeErrorAs(w, f, http.StatusServiceUnavailable, "server_error", code, msg)
}

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
	b, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: "server_error", Code: code}})
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
