package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
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
	body, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: typ, Code: code}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// streamErrorEvent is the SSE event sent when a stream breaks after its
// first bytes reached the client. OpenAI's SDKs turn a data event with an
// "error" member into an error for the caller.
func streamErrorEvent(msg, code string) []byte {
	b, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: "server_error", Code: code}})
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
