package route

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/translate"
)

// prefixSize is how much of a response is kept to find the model version
// it names, which OpenAI, Azure and Anthropic put near the start.
const prefixSize = 2 << 10

// BodyError is returned by a response body that failed after its headers
// were returned: a stream that broke, stalled or timed out mid-way.
type BodyError struct {
	Backend string
	Reason  Reason
	Err     error
	// Reported is true when the client has already been told in-band: the
	// backend's own error event, translated, is in the stream.
	Reported bool
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("switchover: backend %s: response body: %s: %v", e.Backend, e.Reason, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// ErrStreamIncomplete is the error of a passed-through stream that ended
// cleanly without the end its format requires: no "data: [DONE]" and no
// finish_reason (OpenAI), no message_stop (Anthropic). A cut-off answer is
// the backend's failure, never a clean 200.
var ErrStreamIncomplete = errors.New("switchover: the stream ended before the response was complete")

// body wraps an upstream response body. When the body ends it tells the
// breaker how (EOF is a success, a read error a failure, the client going
// away or closing early says nothing), and it ends the attempt's context
// when closed, not when the attempt returned: cancelling earlier would cut
// the body off.
type body struct {
	rc      io.ReadCloser // the upstream body, for Close
	r       io.Reader     // what to read: rc, or a buffered reader over it
	done    breaker.Done  // nil when the outcome is already recorded
	release func()        // stops the attempt's timers and cancels actx
	cancel  context.CancelCauseFunc
	cctx    context.Context // the client's
	actx    context.Context // the attempt's
	// idle bounds each wait for upstream data: the timer runs only while a
	// Read waits on the backend, so a client that reads slowly is never
	// mistaken for a backend that stalled. Zero means no bound.
	idle  time.Duration
	clock clock.Clock
	// end, if set, watches a passed-through stream for the end its format
	// requires; EOF before it is ErrStreamIncomplete.
	end     *streamEnd
	onError func(error)
	// modelOf, if set, reads the model version the backend answered with
	// from the body's first bytes (up to prefixSize), and onModel gets it
	// once the body has ended cleanly. The version is read as soon as
	// those bytes are in, so that a long stream does not hold them.
	modelOf func(prefix []byte) string
	onModel func(model string)
	model   string
	read    bool // modelOf has read model
	// stall, if set (a committed stream, with an idle bound), bounds the
	// backend's silence after a steady event by the stall rule (see
	// stall.go), within idle.
	stall   *stallWatch
	backend string

	prefix []byte // up to prefixSize bytes from the start of the body, until modelOf has read them

	idleTimer clock.Timer
	// plain, if set, is the attempt whose plain answer this is, read
	// whole before try returns: its idle bound runs on the attempt's
	// first-byte timer (attempt.armIdle), not a timer of its own.
	plain   *attempt
	began   time.Time   // when the read under way began, for the stall watch
	stalled atomic.Bool // the armed timer is the stall rule's, not idle's
	once    sync.Once
}

// Read reads from the backend with the idle bound (or the stall rule's)
// armed while it waits. It is kept small: a stream spends its life
// parked in it, and every frame under that wait is stack the stream holds
// (see relay.go's stack note); what happens after the read is in
// afterRead.
func (b *body) Read(p []byte) (int, error) {
	if b.idle > 0 {
		b.arm()
	}
	n, err := b.r.Read(p)
	return b.afterRead(p, n, err)
}

// arm starts the idle timer (or the stall rule's) before a read, and
// notes when the read began if the stall watch needs it.
//
//go:noinline
func (b *body) arm() {
	wait, cause := b.idle, errIdleTimeout
	if b.stall != nil {
		b.began = b.clock.Now()
		wait, cause = b.stall.limit(b.idle)
	}
	b.stalled.Store(cause == errStreamStalled)
	switch {
	case wait <= 0:
		b.cancel(cause) // silent for the whole bound already, over reads that brought no event
	case b.plain != nil:
		b.plain.armIdle(wait)
	case b.idleTimer == nil:
		b.idleTimer = b.clock.AfterFunc(wait, b.timeUp)
	default:
		b.idleTimer.Reset(wait)
	}
}

// afterRead handles what one read from the backend returned: n bytes of
// p, and err.
//
//go:noinline
func (b *body) afterRead(p []byte, n int, err error) (int, error) {
	if b.plain != nil && b.idle > 0 {
		b.plain.disarmIdle()
	} else if b.idleTimer != nil {
		b.idleTimer.Stop()
	}
	if pr, ok := b.r.(*pendingReader); ok && len(pr.pending) == 0 {
		b.r = pr.r // the bytes read ahead are passed on: one reader fewer under every later wait
	}
	if b.stall != nil && b.idle > 0 {
		b.stall.saw(p[:n], b.clock.Now().Sub(b.began))
	}
	if b.modelOf != nil && !b.read && n > 0 {
		b.keepPrefix(p[:n])
	}
	if b.end != nil && n > 0 {
		b.end.scan(p[:n])
	}
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		if b.end != nil && !b.end.complete() {
			berr := &BodyError{Backend: b.backend, Reason: ReasonStreamError, Err: ErrStreamIncomplete}
			b.finish(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindStreamBroken, Cause: "stream incomplete"}, berr)
			return n, berr
		}
		b.finish(breaker.Outcome{Result: breaker.Success}, nil)
		if b.modelOf != nil {
			b.readModel()
			b.onModel(b.model)
		}
		return n, err
	}
	reason := errReason(b.cctx, b.actx, err)
	if reason == ReasonCanceled {
		b.finish(breaker.Outcome{Result: breaker.Ignore}, nil)
		return n, err
	}
	if cause := context.Cause(b.actx); cause == errStreamStalled {
		err = cause // say why, rather than "context canceled"
	}
	berr := &BodyError{Backend: b.backend, Reason: reason, Err: err}
	b.finish(breaker.Outcome{Result: breaker.Failure, Kind: reason.kind(), Cause: "body " + string(reason)}, berr)
	return n, berr
}

// keepPrefix keeps what p adds to the body's first prefixSize bytes,
// and reads the model version from them once they are all in.
func (b *body) keepPrefix(p []byte) {
	b.prefix = append(b.prefix, p[:min(len(p), prefixSize-len(b.prefix))]...)
	if len(b.prefix) == prefixSize {
		b.readModel()
	}
}

// readModel reads the model version from the prefix kept, once, and lets
// the prefix go.
func (b *body) readModel() {
	if !b.read {
		b.model, b.prefix, b.read = b.modelOf(b.prefix), nil, true
	}
}

// timeUp is the idle timer's callback: it ends the attempt for the
// bound that was armed, the idle timeout's or the stall rule's.
func (b *body) timeUp() {
	if b.stalled.Load() {
		b.cancel(errStreamStalled)
		return
	}
	b.cancel(errIdleTimeout)
}

func (b *body) Close() error {
	b.finish(breaker.Outcome{Result: breaker.Ignore}, nil)
	return b.rc.Close()
}

func (b *body) finish(o breaker.Outcome, err error) {
	b.once.Do(func() {
		if b.idleTimer != nil {
			b.idleTimer.Stop()
		}
		if b.done != nil {
			b.done(o)
		}
		b.release()
		if err != nil && b.onError != nil {
			b.onError(err)
		}
	})
}

// translatedBody is a response body translated from the backend's format
// to the client's. A stream that the backend ended with its own error
// event, or cut short without finishing its answer, is the backend's
// failure, although the connection ended cleanly.
type translatedBody struct {
	io.ReadCloser
	raw *body
}

func (t *translatedBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var be *BodyError
	if errors.As(err, &be) {
		return n, err // the raw body failed and has told the breaker
	}
	var se *translate.StreamError
	reported := errors.As(err, &se)
	if !reported && !errors.Is(err, translate.ErrTruncated) {
		return n, err
	}
	berr := &BodyError{Backend: t.raw.backend, Reason: ReasonStreamError, Err: err, Reported: reported}
	t.raw.finish(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindStreamBroken, Cause: "stream error"}, berr)
	return n, berr
}

// errNoEvent ends a stream whose preamble (comments, blank lines) is
// longer than any backend sends before its first event.
var errNoEvent = errors.New("switchover: no event in the first 64 KiB of the stream")

// maxPreamble bounds the comments and blank lines skipped before a
// stream's first event.
const maxPreamble = 64 << 10

// firstEvent reads a stream up to the start of its first event, dropping
// the SSE comments (": keep-alive") and blank lines before it, so that a
// backend that sends a keep-alive and then hangs is still within its
// first-byte timeout. The event itself stays unread in br.
func firstEvent(br *bufio.Reader) error {
	skipped := 0
	for {
		c, err := br.Peek(1)
		if err != nil {
			return err
		}
		if c[0] != ':' && c[0] != '\n' && c[0] != '\r' {
			return nil
		}
		for {
			line, err := br.ReadSlice('\n')
			skipped += len(line)
			if skipped > maxPreamble {
				return errNoEvent
			}
			if err == nil {
				break
			}
			if err != bufio.ErrBufferFull {
				return err
			}
		}
	}
}

// firstEventReaders are the buffers firstEvent reads a stream's start
// through, firstEventBuffer bytes each: firstEvent only needs to peek
// past comments, which it reads line by line whatever their length. A
// stream is open for minutes: holding a 16 KiB buffer for all of it was
// the largest part of an open stream's memory.
const firstEventBuffer = 1 << 10

var firstEventReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, firstEventBuffer) }}

// readToFirstEvent reads src up to the start of its first event (see
// firstEvent) through a pooled buffer, and returns a reader of the rest of
// the stream: the bytes already read past that point, kept in a slice of
// their own size, then src.
func readToFirstEvent(src io.Reader) (io.Reader, error) {
	br := firstEventReaders.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() {
		br.Reset(nil)
		firstEventReaders.Put(br)
	}()
	if err := firstEvent(br); err != nil {
		return nil, err
	}
	buffered, _ := br.Peek(br.Buffered())
	return &pendingReader{pending: bytes.Clone(buffered), r: src}, nil
}

// pendingReader reads pending, then r.
type pendingReader struct {
	pending []byte
	r       io.Reader
}

func (p *pendingReader) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		if len(p.pending) == 0 {
			p.pending = nil // let the slice go
		}
		return n, nil
	}
	return p.r.Read(b)
}

// streamEnd watches a passed-through stream, line by line, for the end
// its format requires. Requires external locking (one reader).
type streamEnd struct {
	format translate.Format
	line   []byte // the unfinished last line
	long   bool   // the unfinished line is over maxLine: ignored
	done   bool
}

// maxLine bounds the part of one line that streamEnd keeps.
const maxLine = 64 << 10

func (s *streamEnd) complete() bool { return s.done }

func (s *streamEnd) scan(p []byte) {
	for len(p) > 0 && !s.done {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.keep(p)
			return
		}
		if len(s.line) == 0 && !s.long && i <= maxLine {
			// A whole line in p, the common case: checked where it is,
			// so the stream holds no copy of its longest line.
			s.check(bytes.TrimRight(p[:i], "\r"))
			p = p[i+1:]
			continue
		}
		s.keep(p[:i])
		if !s.long {
			s.check(bytes.TrimRight(s.line, "\r"))
		}
		s.line, s.long = s.line[:0], false
		p = p[i+1:]
	}
}

func (s *streamEnd) keep(p []byte) {
	if s.long || len(s.line)+len(p) > maxLine {
		s.long = true
		return
	}
	s.line = append(s.line, p...)
}

func (s *streamEnd) check(line []byte) {
	switch s.format {
	case translate.Anthropic:
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok && string(bytes.TrimSpace(v)) == "message_stop" {
			s.done = true
		}
	case translate.Responses:
		// A Responses stream ends with its response's last state.
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			switch string(bytes.TrimSpace(v)) {
			case "response.completed", "response.incomplete", "response.failed":
				s.done = true
			}
		}
	case translate.Gemini:
		// A Gemini stream (passed through to a Gemini client) has no end
		// marker: its candidate's finishReason ends it.
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok && hasStringMember(v, `"finishReason"`) {
			s.done = true
		}
	default:
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			return
		}
		v = bytes.TrimSpace(v)
		if string(v) == "[DONE]" || hasFinishReason(v) {
			s.done = true
		}
	}
}

// hasFinishReason reports whether an OpenAI stream chunk sets a
// finish_reason (a string, not null).
func hasFinishReason(v []byte) bool { return hasStringMember(v, `"finish_reason"`) }

// hasStringMember reports whether v has a member key (quoted) whose value
// is a string.
func hasStringMember(v []byte, key string) bool {
	for {
		i := bytes.Index(v, []byte(key))
		if i < 0 {
			return false
		}
		v = bytes.TrimLeft(v[i+len(key):], " \t")
		if len(v) > 0 && v[0] == ':' {
			rest := bytes.TrimLeft(v[1:], " \t")
			if len(rest) > 0 && rest[0] == '"' {
				return true
			}
		}
	}
}
