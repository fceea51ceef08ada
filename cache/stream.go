package cache

import "bytes"

// StreamComplete reports whether body, an event stream the caller got
// for an op in format, ended as a whole answer ends: OpenAI's
// "data: [DONE]", Anthropic's message_stop, the Responses API's
// response.completed, Gemini's finishReason in its last event. A stream
// cut short, or ended by an error event, is never stored.
func StreamComplete(op, format string, body []byte) bool {
	b := bytes.TrimRight(body, "\r\n ")
	if bytes.Contains(b, []byte("event: error")) || bytes.Contains(b, []byte(`"type":"error"`)) {
		return false
	}
	switch {
	case format == "gemini":
		last := b
		if i := bytes.LastIndex(b, []byte("data:")); i >= 0 {
			last = b[i:]
		}
		return bytes.Contains(last, []byte(`"finishReason"`))
	case op == "messages":
		return bytes.Contains(b, []byte("event: message_stop"))
	case op == "responses":
		return bytes.Contains(b, []byte("event: response.completed"))
	default:
		return bytes.HasSuffix(b, []byte("data: [DONE]"))
	}
}
