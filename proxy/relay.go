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

// runCall is the stage that sends the call through its pool and relays
// the answer (run).
func runCall(x *exchange) error {
	x.h.run(x.w, x.r, &x.lg, x.pool, x.req, x.format, x.lg.id, x.start)
	return nil
}

// writeHeader sends the answer's header with status, which the log line
// records.
func (x *exchange) writeHeader(status int) {
	x.lg.status = status
	x.w.WriteHeader(status)
}

// run sends req through pool and relays the answer: the half of an API
// call after its body is read and its pool found.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, lg *logLine, pool *route.Pool, req *route.Request, format translate.Format, id string, start time.Time) {
	writeError := func(w http.ResponseWriter, status int, typ, code, msg string) {
		writeErrorAs(w, format, status, typ, code, msg)
	}
	lg.pool = pool.Name

	// ctx ends when the client goes away or the gateway halts at the end
	// of a shutdown's grace period (Halt).
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	h.halting.add(lg, cancel)
	defer h.halting.remove(lg)
	resp, rep, err := pool.Do(ctx, req)
	lg.report = rep
	if err != nil {
		if r.Context().Err() != nil {
			lg.status, lg.err = 0, r.Context().Err()
			return
		}
		if errors.Is(context.Cause(ctx), ErrShuttingDown) {
			lg.status, lg.err = http.StatusServiceUnavailable, ErrShuttingDown
			w.Header().Set("Connection", "close")
			writeError(w, lg.status, "server_error", "shutting_down", "switchover: the gateway is shutting down; send the request again")
			return
		}
		if errors.Is(err, route.ErrBadBody) {
			lg.status, lg.err = http.StatusBadRequest, err
			writeError(w, lg.status, "invalid_request_error", "invalid_request", "switchover: "+err.Error())
			return
		}
		var ou *route.OwnerUnavailableError
		if errors.As(err, &ou) {
			lg.status, lg.err = http.StatusServiceUnavailable, err
			if ou.RetryAfter > 0 {
				route.SetRetryAfter(w.Header(), ou.RetryAfter)
			}
			writeError(w, lg.status, "server_error", "owner_unavailable", "switchover: "+err.Error()+
				"; no other backend has that state, so the request is not sent elsewhere (to keep a conversation failover-safe, send it with store: false and its whole context each turn)")
			return
		}
		lg.status = http.StatusBadGateway
		lg.err = err
		writeError(w, lg.status, "server_error", "bad_gateway", "switchover: "+err.Error())
		return
	}
	defer resp.Body.Close()

	hdr := w.Header()
	route.RemoveHopHeaders(resp.Header)
	for k, vv := range resp.Header {
		if k == "X-Request-Id" {
			hdr["X-Upstream-Request-Id"] = vv
			continue
		}
		hdr[k] = vv
	}
	if v := hdr["X-Request-Id"]; len(v) != 1 || v[0] != id {
		hdr.Set("X-Request-Id", id) // ServeHTTP has set it already
	}
	if format == translate.Anthropic && hdr.Get("Request-Id") == "" {
		hdr.Set("Request-Id", id) // what Anthropic's SDKs read, when a translated answer has none
	}
	if h.TraceHeader && r.Header.Get(HeaderTrace) != "" {
		hdr.Set(HeaderTrace, traceHeader(rep))
	}
	lg.status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	lg.firstByte = time.Since(start)

	stream := route.IsEventStream(resp.Header)
	bufs := &plainBufs
	if stream {
		bufs = &streamBufs
	}
	n, err := copyBody(w, resp.Body, stream || resp.ContentLength < 0, bufs)
	lg.bytes = n
	if err == nil {
		return
	}
	if r.Context().Err() != nil {
		lg.err = r.Context().Err()
		lg.clientGone = true
		return
	}
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		lg.err = ErrShuttingDown
		if !stream {
			panic(http.ErrAbortHandler)
		}
		w.Write(streamErrorEvent(format, "switchover: the gateway is shutting down; the response is incomplete", "shutting_down"))
		http.NewResponseController(w).Flush()
		return
	}
	lg.err = err
	var be *route.BodyError
	if stream && errors.As(err, &be) && be.Reported {
		return // the backend's own error event, translated, has ended the stream
	}
	if stream && errors.As(err, &be) {
		// The stream broke after bytes reached the client: failover is no
		// longer possible. End with an error the SDKs surface, and a clean
		// end of the response, never a silent truncation.
		msg := fmt.Sprintf("switchover: the stream from backend %s failed mid-way (%s); the response is incomplete", be.Backend, be.Reason)
		w.Write(streamErrorEvent(format, msg, "upstream_stream_error"))
		http.NewResponseController(w).Flush()
		return
	}
	// A plain body cut short: abort the response so the client sees the
	// failure instead of a short body that looks whole.
	panic(http.ErrAbortHandler)
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
// Before a write error or an upstream error it makes sure a partial event
// line is terminated, so that an error event that follows is read as an
// event of its own.
func copyBody(w http.ResponseWriter, src io.Reader, flush bool, bufs *sync.Pool) (int64, error) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	var written int64
	var tail [2]byte // last two bytes written
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			written += int64(m)
			if m >= 2 {
				tail = [2]byte{buf[m-2], buf[m-1]}
			} else if m == 1 {
				tail = [2]byte{tail[1], buf[0]}
			}
			if werr != nil {
				return written, werr
			}
			if flush {
				if err := rc.Flush(); err != nil {
					return written, err
				}
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			if flush && written > 0 && tail != [2]byte{'\n', '\n'} {
				if tail[1] == '\n' {
					w.Write([]byte("\n"))
				} else {
					w.Write([]byte("\n\n"))
				}
			}
			return written, rerr
		}
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
