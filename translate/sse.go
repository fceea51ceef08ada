package translate

import (
	"bytes"
	"errors"
	"io"
)

// Event is one server-sent event: Name is the "event:" field (may be empty),
// Data the joined "data:" lines.
type Event struct {
	Name string
	Data []byte
}

// A StreamConverter turns source events into the output stream's bytes
// (complete SSE text like "data: {...}\n\n" or "event: x\ndata: {...}\n\n"),
// keeping state across events. Not safe for concurrent use.
//
// Event may return output together with an error: the output is still to be
// sent (it is, for instance, the translated error event of a *StreamError),
// and the stream ends there.
type StreamConverter interface {
	Event(ev Event) ([]byte, error)
	End() []byte // called once at the source's clean end of stream: trailing output (e.g. "data: [DONE]\n\n" for OpenAI output)
}

// completer is implemented by this package's converters: complete reports
// whether the source has said all it had to (Anthropic message_stop or
// stop_reason, OpenAI finish_reason or [DONE], a finishReason for every
// Gemini candidate), so that End would close a whole response. A source that
// ends before that was cut off, even if the connection closed cleanly.
type completer interface {
	complete() bool
}

// ErrTruncated is returned by the reader of NewReader when the source ended
// cleanly (io.EOF) before the end of the response, e.g. an Anthropic stream
// without message_stop. The output is not closed: End is not called, so the
// client does not mistake a cut-off answer for a whole one.
var ErrTruncated = errors.New("translate: source stream ended before the response was complete")

// maxEventSize bounds one line and one event's data, so a source that never
// ends its line cannot grow the buffer without bound. Gemini sends inline
// images base64 in one event, hence the generous size.
const maxEventSize = 32 << 20

// ErrEventTooLarge is returned by the reader of NewReader for a source event
// or line longer than 32 MiB.
var ErrEventTooLarge = errors.New("translate: server-sent event larger than 32 MiB")

// sseParser splits a byte stream into events. It handles \n and \r\n line
// ends, multi-line data, comments, unknown fields and a leading BOM.
type sseParser struct {
	line    []byte // an incomplete line carried over
	name    string
	data    []byte
	hasData bool
	started bool // past a possible BOM
}

// feed parses b and calls emit for every event it completes; it stops at the
// first error emit returns.
func (p *sseParser) feed(b []byte, emit func(Event) error) error {
	if !p.started {
		if len(p.line)+len(b) < 3 && bytes.HasPrefix([]byte("\xef\xbb\xbf"), append(p.line, b...)) {
			p.line = append(p.line, b...)
			return nil
		}
		p.started = true
		b = append(p.line, b...)
		p.line = nil
		b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(p.line)+len(b) > maxEventSize {
				return ErrEventTooLarge
			}
			p.line = append(p.line, b...)
			return nil
		}
		var line []byte
		if len(p.line) > 0 {
			p.line = append(p.line, b[:i]...)
			line = p.line
		} else {
			line = b[:i]
		}
		b = b[i+1:]
		err := p.processLine(bytes.TrimSuffix(line, []byte("\r")), emit)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// flush ends the stream: a last event without its blank line is still
// dispatched.
func (p *sseParser) flush(emit func(Event) error) error {
	if len(p.line) > 0 {
		line := bytes.TrimSuffix(p.line, []byte("\r"))
		p.line = nil
		if err := p.processLine(line, emit); err != nil {
			return err
		}
	}
	return p.processLine(nil, emit)
}

func (p *sseParser) processLine(line []byte, emit func(Event) error) error {
	if len(line) == 0 {
		if !p.hasData {
			p.name = ""
			return nil
		}
		ev := Event{Name: p.name, Data: p.data}
		p.name, p.data, p.hasData = "", nil, false
		return emit(ev)
	}
	if line[0] == ':' {
		return nil // comment
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(field) {
	case "event":
		p.name = string(value)
	case "data":
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		if len(p.data)+len(value) > maxEventSize {
			return ErrEventTooLarge
		}
		p.data = append(p.data, value...)
		p.hasData = true
	}
	return nil // id, retry and unknown fields carry nothing to convert
}

// reader is the io.ReadCloser of NewReader.
type reader struct {
	src  io.ReadCloser
	c    StreamConverter
	p    sseParser
	buf  []byte
	out  []byte // converted output not yet read
	off  int    // read position in out
	err  error  // sticky: io.EOF, the source's error, or the converter's
	emit func(Event) error
}

// NewReader reads SSE events from src, passes each through c, and yields the
// converted stream. It streams: each source event is converted and made
// readable as soon as its blank line arrives, without reading further.
//
// A read error from src (not io.EOF) is returned as is, after any output
// already converted, and End is not called, so the caller can tell the
// stream broke. An error from c (a *StreamError for an error event in the
// source, or a malformed event) is returned the same way, after the output c
// returned with it. At io.EOF the reader dispatches a last event that lacks
// its blank line, writes c.End() and returns io.EOF; but when c is one of
// this package's converters and the source stopped before the response was
// complete, it returns ErrTruncated instead, without End.
//
// Close closes src. The reader is not safe for concurrent use.
func NewReader(src io.ReadCloser, c StreamConverter) io.ReadCloser {
	r := &reader{src: src, c: c, buf: make([]byte, 32<<10)}
	r.emit = func(ev Event) error {
		out, err := r.c.Event(ev)
		r.out = append(r.out, out...)
		return err
	}
	return r
}

func (r *reader) Read(p []byte) (int, error) {
	for r.off == len(r.out) {
		r.out, r.off = r.out[:0], 0
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// fill reads once from src and converts what it completes.
func (r *reader) fill() {
	n, err := r.src.Read(r.buf)
	if n > 0 {
		if perr := r.p.feed(r.buf[:n], r.emit); perr != nil {
			r.err = perr
			return
		}
	}
	switch {
	case err == io.EOF:
		if perr := r.p.flush(r.emit); perr != nil {
			r.err = perr
			return
		}
		if c, ok := r.c.(completer); ok && !c.complete() {
			r.err = ErrTruncated
			return
		}
		r.out = append(r.out, r.c.End()...)
		r.err = io.EOF
	case err != nil:
		r.err = err
	}
}

func (r *reader) Close() error { return r.src.Close() }

// Chain feeds a's output, parsed as SSE, into b: Anthropic-inbound clients
// served by a Gemini backend get Gemini → OpenAI → Anthropic. Not safe for
// concurrent use.
func Chain(a, b StreamConverter) StreamConverter {
	return &chain{a: a, b: b}
}

type chain struct {
	a, b StreamConverter
	p    sseParser
}

var _ StreamConverter = (*chain)(nil)
var _ completer = (*chain)(nil)

func (c *chain) Event(ev Event) ([]byte, error) {
	mid, aerr := c.a.Event(ev)
	out, berr := c.through(mid)
	if aerr != nil {
		return out, aerr // the source's own error, not b's view of it
	}
	return out, berr
}

func (c *chain) through(mid []byte) ([]byte, error) {
	var out []byte
	err := c.p.feed(mid, func(e Event) error {
		o, err := c.b.Event(e)
		out = append(out, o...)
		return err
	})
	return out, err
}

func (c *chain) End() []byte {
	out, err := c.through(c.a.End())
	if err != nil {
		return out
	}
	return append(out, c.b.End()...)
}

// complete: the chain is complete when a is; b then completes on a's End.
func (c *chain) complete() bool {
	if ca, ok := c.a.(completer); ok {
		return ca.complete()
	}
	return true
}
