package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// relay is the stage that sends the call through its pool (the engine
// routes it, retries and fails over) and passes the answer on: its
// header, then its body as it arrives, flushed on every read for a stream
// or a body of unknown length. The call is cancelled when the client goes
// away, or when the gateway halts at the end of a shutdown's grace period
// (Halt).
func relay(x *exchange) error {
	ctx, cancel := context.WithCancelCause(x.r.Context())
	x.h.halting.add(&x.lg, cancel)
	defer x.endCall(cancel)
	x.startCapture() // bodies.go
	resp, err := x.call(ctx)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	bufs := &plainBufs
	if x.eventStream {
		bufs = &streamBufs
	}
	n, err := copyBody(x.w, resp.Body, x.eventStream || resp.ContentLength < 0, bufs, x.lg.bodies)
	x.lg.bytes = n
	if err != nil {
		return x.bodyError(ctx, err)
	}
	return nil
}

// A stream spends its life waiting in relay's copy for the backend's next
// event, and the frames under that wait are what its goroutine's stack
// keeps: the runtime halves a waiting goroutine's stack only while less
// than a quarter of it (less 800 bytes) is in use. net/http's frames
// under a wait for an HTTP/1.1 body take about 2.4 KiB; with ours under
// about 0.9 KiB, a stream's request goroutine waits on 8 KiB of stack
// rather than 16. So the work before and after the copy is in functions
// of their own (call, bodyError), and the readers under the copy keep
// their rare paths out of the frame that waits (route's body.Read).
// TestStreamStackStaysSmall holds it.

// endCall ends the call relay made, whose context's cancel is cancel.
//
//go:noinline
func (x *exchange) endCall(cancel context.CancelCauseFunc) {
	x.h.halting.remove(&x.lg)
	cancel(nil)
}

// call sends the call through its pool and, when the pool answers, sends
// the answer's header: the answer's body is left to copy. An error is
// the call's answer, to render.
//
//go:noinline
func (x *exchange) call(ctx context.Context) (*http.Response, error) {
	resp, rep, err := x.pool.Do(ctx, x.req)
	x.lg.report = rep
	if err != nil {
		return nil, x.callError(ctx, err)
	}
	if x.format == translate.Gemini {
		if err := x.geminiAnswer(resp); err != nil { // gemini.go
			resp.Body.Close()
			return nil, err
		}
	}
	x.passHeader(resp.Header, rep)
	if c := x.lg.bodies; c != nil {
		c.answer(resp.Header, resp.ContentLength)
	}
	x.writeHeader(resp.StatusCode)
	x.lg.firstByte = time.Since(x.start)
	x.eventStream = route.IsEventStream(resp.Header)
	return resp, nil
}

// callError is the answer to a call the pool could not make (err), whose
// context is ctx.
func (x *exchange) callError(ctx context.Context, err error) error {
	if cerr := x.r.Context().Err(); cerr != nil {
		return clientGone(cerr)
	}
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return serverError(http.StatusServiceUnavailable, "shutting_down", "switchover: the gateway is shutting down; send the request again").
			with("Connection", "close").because(ErrShuttingDown)
	}
	if errors.Is(err, route.ErrBadBody) {
		return requestError(http.StatusBadRequest, "invalid_request", "switchover: "+err.Error()).because(err)
	}
	var ou *route.OwnerUnavailableError
	if errors.As(err, &ou) {
		e := serverError(http.StatusServiceUnavailable, "owner_unavailable", "switchover: "+err.Error()+
			"; no other backend has that state, so the request is not sent elsewhere (to keep a conversation failover-safe, send it with store: false and its whole context each turn)").
			because(err)
		if ou.RetryAfter > 0 {
			route.SetRetryAfter(e.headers(), ou.RetryAfter)
		}
		return e
	}
	return serverError(http.StatusBadGateway, "bad_gateway", "switchover: "+err.Error()).because(err)
}

// bodyError is how an answer whose body failed (err) after its header
// went out ends (see cutShort); ctx is the call's context.
func (x *exchange) bodyError(ctx context.Context, err error) error {
	if cerr := x.r.Context().Err(); cerr != nil {
		return clientGone(cerr)
	}
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return streamBroken("shutting_down", "switchover: the gateway is shutting down; the response is incomplete", ErrShuttingDown)
	}
	var be *route.BodyError
	if errors.As(err, &be) && be.Reported {
		return &apiError{ended: true, cause: err} // the backend's own error event, translated, has ended a stream
	}
	if errors.As(err, &be) {
		// A stream broke after bytes reached the client: failover is no
		// longer possible. It ends with an error the SDKs surface, and a
		// clean end of the response, never a silent truncation.
		return streamBroken("upstream_stream_error",
			fmt.Sprintf("switchover: the stream from backend %s failed mid-way (%s); the response is incomplete", be.Backend, be.Reason), err)
	}
	return &apiError{cause: err}
}

// passHeader puts the answer's header h, its hop-by-hop headers removed,
// in the response's: the backend's X-Request-Id as X-Upstream-Request-Id
// beside the request's own, Anthropic's Request-Id when a translated
// answer has none, and the trace the caller asked for (HeaderTrace).
func (x *exchange) passHeader(h http.Header, rep *route.Report) {
	id := x.lg.id
	hdr := x.w.Header()
	route.RemoveHopHeaders(h)
	for k, vv := range h {
		if k == "X-Request-Id" {
			hdr["X-Upstream-Request-Id"] = vv
			continue
		}
		hdr[k] = vv
	}
	if v := hdr["X-Request-Id"]; len(v) != 1 || v[0] != id {
		hdr.Set("X-Request-Id", id) // identify has set it already
	}
	if x.format == translate.Anthropic && hdr.Get("Request-Id") == "" {
		hdr.Set("Request-Id", id) // what Anthropic's SDKs read, when a translated answer has none
	}
	if x.h.TraceHeader && x.r.Header.Get(HeaderTrace) != "" {
		hdr.Set(HeaderTrace, traceHeader(rep))
	}
}

// writeHeader sends the answer's header with status, which the log line
// records. From here on an error cuts the response short.
func (x *exchange) writeHeader(status int) {
	x.lg.status, x.sent = status, true
	x.w.WriteHeader(status)
}

// Copy buffers. A stream holds its buffer for as long as it is open,
// minutes, while its events are a few hundred bytes each: a 32 KiB buffer
// per stream was a third to a half of the heap with 1,000 streams open.
// Plain bodies, copied in one go, keep the large buffer.
var (
	plainBufs  = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	streamBufs = sync.Pool{New: func() any { b := make([]byte, 2<<10); return &b }}
)

// copyBody copies src to w through a buffer from bufs. With flush set it
// flushes after every read, so each SSE event goes out as it arrives.
// With a capture (c not nil), what went out is copied to it after it
// went (bodies.go), so that no chunk waits for it.
// Before a write error or an upstream error it makes sure a partial event
// line is terminated, so that an error event that follows is read as an
// event of its own.
func copyBody(w http.ResponseWriter, src io.Reader, flush bool, bufs *sync.Pool, c *bodyCapture) (int64, error) {
	bp := bufs.Get().(*[]byte) // put back on return, not on a panic: the buffer is then left to the collector
	buf := *bp
	rc := http.NewResponseController(w)
	var written int64
	var tail [2]byte // last two bytes written
	for {
		n, err := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			written += int64(m)
			tail = lastTwo(tail, buf[:m])
			if werr == nil && flush {
				werr = rc.Flush()
			}
			if c != nil {
				c.response(buf[:m])
			}
			if werr != nil {
				bufs.Put(bp)
				return written, werr
			}
		}
		if err != nil {
			bufs.Put(bp)
			if err == io.EOF {
				return written, nil
			}
			if flush && written > 0 {
				endLine(w, tail)
			}
			return written, err
		}
	}
}

// lastTwo is the last two bytes written, tail, after p is written.
func lastTwo(tail [2]byte, p []byte) [2]byte {
	switch len(p) {
	case 0:
		return tail
	case 1:
		return [2]byte{tail[1], p[0]}
	}
	return [2]byte{p[len(p)-2], p[len(p)-1]}
}

// endLine ends the event whose last two bytes written were tail, if it
// is not ended, so that an error event written next is read as an event
// of its own.
//
//go:noinline
func endLine(w io.Writer, tail [2]byte) {
	switch {
	case tail == [2]byte{'\n', '\n'}:
	case tail[1] == '\n':
		w.Write([]byte("\n"))
	default:
		w.Write([]byte("\n\n"))
	}
}

// HeaderTrace is the opt-in per-attempt trace: a caller that sends it (any
// value) gets it back listing each attempt's backend, status, reason and
// latency, so it can see why a request took 1.8 s.
const HeaderTrace = "X-Switchover-Trace"

// traceHeader renders a report as the trace header:
// "aoai-weu;status=429;reason=rate_limited;ms=605, aoai-sec;status=200;ms=1218".
func traceHeader(rep *route.Report) string {
	var b strings.Builder
	for i, a := range rep.Attempts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Backend)
		if a.Status != 0 {
			b.WriteString(";status=" + strconv.Itoa(a.Status))
		}
		if a.Hedge {
			b.WriteString(";hedge")
		}
		if a.Reason != "" {
			b.WriteString(";reason=" + string(a.Reason))
		}
		b.WriteString(";ms=" + strconv.FormatInt(a.Duration.Milliseconds(), 10))
	}
	for _, s := range rep.Skipped {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Backend + ";skipped")
	}
	return b.String()
}
