package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/switchover-gw/switchover/internal/eventstream"
)

// ConverseStreamToAnthropic reads a ConverseStream answer (the
// event-stream framing of application/vnd.amazon.eventstream) from r and
// returns it as Anthropic's Messages stream (text/event-stream), with
// the given model and message id. Closing the result closes r.
//
// The events map one to one, except that Anthropic's message_delta
// carries both the stop reason (Converse's messageStop) and the usage
// (Converse's metadata, which follows it): message_delta and
// message_stop are written at the metadata event, or at the end of the
// stream if none came. A text block is opened by its first delta, as
// Converse sends contentBlockStart only for tool use. An exception in the
// stream becomes Anthropic's error event, and the stream ends.
func ConverseStreamToAnthropic(r io.ReadCloser, model, id string) io.ReadCloser {
	return &bedrockStream{dec: eventstream.NewDecoder(r), body: r, conv: &converseEvents{model: model, id: id, open: map[int]bool{}}}
}

// InvokeStreamToAnthropic reads an InvokeModelWithResponseStream answer of
// a Claude model, whose chunks each hold one of Anthropic's stream events
// (base64 JSON), and returns Anthropic's stream. Closing the result
// closes r.
func InvokeStreamToAnthropic(r io.ReadCloser) io.ReadCloser {
	return &bedrockStream{dec: eventstream.NewDecoder(r), body: r, conv: invokeEvents{}}
}

// eventConverter turns one event-stream event into SSE bytes.
type eventConverter interface {
	event(typ string, payload []byte, out *bytes.Buffer) error
	end(out *bytes.Buffer)
}

// bedrockStream is an SSE reader over an event stream. It is not safe
// for concurrent use.
type bedrockStream struct {
	dec  *eventstream.Decoder
	body io.Closer
	conv eventConverter
	buf  bytes.Buffer
	err  error
}

func (s *bedrockStream) Close() error { return s.body.Close() }

func (s *bedrockStream) Read(p []byte) (int, error) {
	for s.buf.Len() == 0 && s.err == nil {
		s.next()
	}
	if s.buf.Len() > 0 {
		return s.buf.Read(p)
	}
	return 0, s.err
}

// next decodes one message into buf, or sets err.
func (s *bedrockStream) next() {
	m, err := s.dec.Decode()
	if errors.Is(err, io.EOF) {
		s.conv.end(&s.buf)
		s.err = io.EOF
		return
	}
	if err != nil {
		s.err = err
		return
	}
	switch m.Get(":message-type") {
	case "exception":
		s.buf.Write(bedrockExceptionEvent(m.Get(":exception-type"), m.Payload))
		s.err = io.EOF
	case "error":
		p, _ := json.Marshal(map[string]string{"message": m.Get(":error-message")})
		s.buf.Write(bedrockExceptionEvent(m.Get(":error-code"), p))
		s.err = io.EOF
	default:
		s.err = s.conv.event(m.Get(":event-type"), m.Payload, &s.buf)
	}
}

// writeEvent writes one SSE event of Anthropic's stream.
func writeEvent(out *bytes.Buffer, typ string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(out, "event: %s\ndata: %s\n\n", typ, b)
}

// converseEvents converts ConverseStream's events.
type converseEvents struct {
	model, id string
	open      map[int]bool // content blocks started and not stopped
	stop      string       // messageStop's reason, until metadata
	stopped   bool
	done      bool
}

// cvEvent holds the members of every ConverseStream event.
type cvEvent struct {
	Role              string   `json:"role"`
	ContentBlockIndex int      `json:"contentBlockIndex"`
	Start             *cvStart `json:"start"`
	Delta             *cvDelta `json:"delta"`
	StopReason        string   `json:"stopReason"`
	Usage             *cvUsage `json:"usage"`
}

type cvStart struct {
	ToolUse *struct {
		ToolUseID string `json:"toolUseId"`
		Name      string `json:"name"`
	} `json:"toolUse"`
}

type cvDelta struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		Input string `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *struct {
		Text            *string `json:"text"`
		Signature       *string `json:"signature"`
		RedactedContent *string `json:"redactedContent"`
	} `json:"reasoningContent"`
}

func (c *converseEvents) event(typ string, payload []byte, out *bytes.Buffer) error {
	var e cvEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		return errBadBody("converse stream: "+typ, err)
	}
	switch typ {
	case "messageStart":
		writeEvent(out, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": c.id, "type": "message", "role": "assistant", "model": c.model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}}})
	case "contentBlockStart":
		if e.Start != nil && e.Start.ToolUse != nil {
			c.open[e.ContentBlockIndex] = true
			writeEvent(out, "content_block_start", map[string]any{"type": "content_block_start", "index": e.ContentBlockIndex,
				"content_block": map[string]any{"type": "tool_use", "id": e.Start.ToolUse.ToolUseID, "name": e.Start.ToolUse.Name, "input": map[string]any{}}})
		}
	case "contentBlockDelta":
		c.delta(&e, out)
	case "contentBlockStop":
		if c.open[e.ContentBlockIndex] {
			delete(c.open, e.ContentBlockIndex)
			writeEvent(out, "content_block_stop", map[string]any{"type": "content_block_stop", "index": e.ContentBlockIndex})
		}
	case "messageStop":
		c.stop, c.stopped = anthropicStop(e.StopReason), true
	case "metadata":
		c.finish(e.Usage, out)
	}
	return nil
}

// delta writes a contentBlockDelta, opening its block first if needed.
func (c *converseEvents) delta(e *cvEvent, out *bytes.Buffer) {
	d, i := e.Delta, e.ContentBlockIndex
	if d == nil {
		return
	}
	start := func(block map[string]any) {
		if !c.open[i] {
			c.open[i] = true
			writeEvent(out, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": block})
		}
	}
	emit := func(delta map[string]any) {
		writeEvent(out, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
	}
	switch {
	case d.Text != nil:
		start(map[string]any{"type": "text", "text": ""})
		emit(map[string]any{"type": "text_delta", "text": *d.Text})
	case d.ToolUse != nil:
		emit(map[string]any{"type": "input_json_delta", "partial_json": d.ToolUse.Input})
	case d.ReasoningContent != nil:
		rc := d.ReasoningContent
		if rc.RedactedContent != nil {
			start(map[string]any{"type": "redacted_thinking", "data": *rc.RedactedContent})
			return
		}
		start(map[string]any{"type": "thinking", "thinking": ""})
		if rc.Text != nil {
			emit(map[string]any{"type": "thinking_delta", "thinking": *rc.Text})
		}
		if rc.Signature != nil {
			emit(map[string]any{"type": "signature_delta", "signature": *rc.Signature})
		}
	}
}

// finish writes message_delta and message_stop once, closing any block
// left open.
func (c *converseEvents) finish(u *cvUsage, out *bytes.Buffer) {
	if c.done {
		return
	}
	c.done = true
	for _, i := range slices.Sorted(maps.Keys(c.open)) {
		writeEvent(out, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	clear(c.open)
	stop := c.stop
	if !c.stopped {
		stop = "end_turn"
	}
	usage := map[string]int{"output_tokens": 0}
	if u != nil {
		usage = u.anthropic()
	}
	writeEvent(out, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	writeEvent(out, "message_stop", map[string]any{"type": "message_stop"})
}

// end finishes a stream that stopped without metadata; one that stopped
// without messageStop either was cut off, and is left so.
func (c *converseEvents) end(out *bytes.Buffer) {
	if c.stopped {
		c.finish(nil, out)
	}
}

// invokeEvents converts InvokeModelWithResponseStream's chunks.
type invokeEvents struct{}

func (invokeEvents) event(typ string, payload []byte, out *bytes.Buffer) error {
	if typ != "chunk" {
		return nil
	}
	var c struct {
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return errBadBody("invoke stream: chunk", err)
	}
	data, err := base64.StdEncoding.DecodeString(c.Bytes)
	if err != nil {
		return errBadBody("invoke stream: chunk", err)
	}
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &t); err != nil || t.Type == "" {
		return errBadBody("invoke stream: chunk", fmt.Errorf("no event type"))
	}
	fmt.Fprintf(out, "event: %s\ndata: %s\n\n", t.Type, bytes.TrimSpace(data))
	return nil
}

func (invokeEvents) end(*bytes.Buffer) {}
