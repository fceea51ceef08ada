package translate

import "fmt"

// Format is a wire format of request and response bodies.
type Format string

// The formats this package converts between. OpenAI Chat Completions is the
// gateway's canonical format: every conversion goes to or from it.
const (
	OpenAI    Format = "openai"
	Anthropic Format = "anthropic"
	Gemini    Format = "gemini"
	Responses Format = "responses" // the OpenAI Responses API wire format
)

// UnsupportedError says a request uses a feature the target format cannot
// honour. The gateway then skips that backend for the request, or answers 400
// with this message if no backend can. The converters never drop a feature
// silently: they return this error instead.
//
// Any other error from a request converter means the body itself is
// malformed (not JSON, a field of the wrong type, a tool result that names no
// earlier tool call, …).
type UnsupportedError struct {
	Target  Format // the format that cannot express the feature
	Feature string // what the request asked for, e.g. "n > 1"
	// Cause is why, when it is not the format itself but the backend's
	// model (a reasoning_effort for a model that does not reason); ""
	// when the format is the reason.
	Cause string
}

func (e *UnsupportedError) Error() string {
	if e.Cause != "" {
		return fmt.Sprintf("%s cannot honour %s: %s", e.Target, e.Feature, e.Cause)
	}
	return fmt.Sprintf("%s cannot honour %s", e.Target, e.Feature)
}

func unsupported(target Format, format string, args ...any) error {
	return &UnsupportedError{Target: target, Feature: fmt.Sprintf(format, args...)}
}

// StreamError is returned by a StreamConverter, and so by the reader of
// NewReader, when the source stream itself carries an error event (Anthropic
// "event: error", an OpenAI or Gemini "data: {"error":…}"). The converted
// error event has already been written to the output; the stream is over and
// End is not called. Code is the provider's own error code as ErrorCode
// reports it ("overloaded_error", "RESOURCE_EXHAUSTED", …) so that the caller
// can classify the failure without reading Message.
type StreamError struct {
	From    Format // format of the source stream
	Code    string // ErrorCode(From, Data); "" when the event names none
	Message string // the provider's message text
	Data    []byte // the source event's data, as received
}

func (e *StreamError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("translate: %s stream error: %s", e.From, e.Message)
	}
	return fmt.Sprintf("translate: %s stream error %s: %s", e.From, e.Code, e.Message)
}

// errBadBody wraps a decoding failure of a body that should have been JSON of
// a known shape.
func errBadBody(what string, err error) error {
	return fmt.Errorf("translate: %s: %w", what, err)
}
