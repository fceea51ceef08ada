package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

// serveAPI answers one API call: read the body once (bounded), find the
// pool, let the engine route it, and pass the response on.
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request, rt *Routes, op route.Operation, format translate.Format, dep string, who caller, id string) {
	writeError := func(w http.ResponseWriter, status int, typ, code, msg string) {
		writeErrorAs(w, format, status, typ, code, msg)
	}
	start := time.Now()
	lg := &logLine{id: id, key: who.name, who: who.p, method: r.Method, path: r.URL.Path}
	if h.Tracer != nil {
		var span trace.Span
		r, span = h.startSpan(r)
		lg.span = span
	}
	defer func() { h.finish(lg, start) }()

	body, res, ok := h.readRequestBody(w, r, rt, lg, format, start)
	// The reservation is held until the response ends: the engine keeps
	// the body for retries, and the transport until the answer is read.
	defer res.close()
	if !ok {
		return
	}
	var err error
	var req *route.Request
	if op.Multipart() {
		req, err = route.NewMultipartRequest(op, body, r.Header.Get("Content-Type"), r.Header)
	} else {
		req, err = route.NewRequest(op, body, r.Header)
	}
	if err == nil {
		req.Format = format
	}
	if err != nil {
		lg.status = http.StatusBadRequest
		code := "invalid_json"
		var oc *route.OwnerConflictError
		switch {
		case errors.As(err, &oc):
			code = "owners_conflict"
		case op.Multipart():
			code = "invalid_request"
		}
		writeError(w, lg.status, "invalid_request_error", code, "switchover: "+err.Error())
		return
	}
	if dep != "" {
		req.Model = dep
	}
	if v := r.Header.Get(HeaderMaxWait); v != "" {
		d, ok := parseMaxWait(v)
		if !ok {
			lg.status = http.StatusBadRequest
			writeError(w, lg.status, "invalid_request_error", "invalid_max_wait", fmt.Sprintf("switchover: %s must be a duration (120s, 2m) or a number of seconds, not %q", HeaderMaxWait, truncate(v, 40)))
			return
		}
		req.MaxWait = d
	}
	lg.model, lg.stream = req.Model, req.Stream
	if req.Model == "" {
		lg.status = http.StatusBadRequest
		writeError(w, lg.status, "invalid_request_error", "missing_model", "switchover: the request names no model; set \"model\" to one of the gateway's pools (GET /v1/models lists them)")
		return
	}
	pool, ok := rt.Pools[req.Model]
	if !ok {
		lg.status = http.StatusNotFound
		writeError(w, lg.status, "invalid_request_error", "model_not_found",
			fmt.Sprintf("switchover: the model %q is not a pool of this gateway (GET /v1/models lists them)", truncate(req.Model, 100)))
		return
	}
	lg.routed = true
	if op == route.CountTokens && !hasAnthropicMember(pool) {
		lg.pool = pool.Name
		h.serveTokenEstimate(w, lg, body)
		return
	}
	h.run(w, r, lg, pool, req, format, id, start)
}

// run sends req through pool and relays the answer: the half of an API
// call after its body is read and its pool found.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, lg *logLine, pool *route.Pool, req *route.Request, format translate.Format, id string, start time.Time) {
	writeError := func(w http.ResponseWriter, status int, typ, code, msg string) {
		writeErrorAs(w, format, status, typ, code, msg)
	}
	lg.pool = pool.Name
	if !h.admit(w, lg, format, pool.Name, req.Model, int64(req.EstimatedTokens())) {
		return
	}
	if lg.who != nil && lg.who.Patience > 0 && req.MaxWait == 0 {
		req.MaxWait = lg.who.Patience
	}

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

// readRequestBody reads r's body, bounded by the routes' limits, and
// answers the error itself when it cannot (ok false). The reservation of
// body memory it returns must be closed once the response has ended.
func (h *Handler) readRequestBody(w http.ResponseWriter, r *http.Request, rt *Routes, lg *logLine, format translate.Format, start time.Time) (body []byte, res *reservation, ok bool) {
	writeError := func(w http.ResponseWriter, status int, typ, code, msg string) {
		writeErrorAs(w, format, status, typ, code, msg)
	}
	if r.ContentLength > rt.MaxBody {
		// Refused before a byte of it is read; the connection is not
		// worth draining.
		lg.status = http.StatusRequestEntityTooLarge
		w.Header().Set("Connection", "close")
		writeError(w, lg.status, "invalid_request_error", "request_too_large", fmt.Sprintf("switchover: request body is over the %d byte limit", rt.MaxBody))
		return
	}
	res, ok = h.bodies.open(r.ContentLength, rt.MaxBodyMemory)
	if !ok {
		lg.status = http.StatusServiceUnavailable
		w.Header().Set("Connection", "close") // not worth draining either
		h.refused(codeBodyMemoryFull)
		writeBusy(w, format, codeBodyMemoryFull, msgBodyMemoryFull)
		return body, res, false
	}

	rc := http.NewResponseController(w)
	if h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(start.Add(h.BodyReadTimeout))
	}
	body, err := readBody(res.reader(http.MaxBytesReader(w, r.Body, rt.MaxBody)), r.ContentLength)
	if h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.Is(err, errBodyMemoryFull):
			lg.status = http.StatusServiceUnavailable
			w.Header().Set("Connection", "close") // the rest is unread
			h.refused(codeBodyMemoryFull)
			writeBusy(w, format, codeBodyMemoryFull, msgBodyMemoryFull)
		case errors.As(err, &tooBig):
			lg.status = http.StatusRequestEntityTooLarge
			writeError(w, lg.status, "invalid_request_error", "request_too_large", fmt.Sprintf("switchover: request body is over the %d byte limit", rt.MaxBody))
		case errors.As(err, &ne) && ne.Timeout():
			lg.status, lg.err = http.StatusRequestTimeout, err
			w.Header().Set("Connection", "close")
			writeError(w, lg.status, "invalid_request_error", "request_timeout", "switchover: the request body took too long to arrive")
		default:
			lg.status, lg.err = 0, err // the client went away while sending
		}
		return nil, res, false
	}
	return body, res, true
}

// HeaderMaxWait is how long a caller will wait inside the gateway for
// quota when every backend is out of it ("120s", "2m", or seconds): the
// request is held in the pool's queue instead of answered 429 at once
// (see route.Request.MaxWait), at most the pool's queue.max_wait_limit.
const HeaderMaxWait = "X-Switchover-Max-Wait"

// parseMaxWait reads a max-wait header value: a Go duration or a number
// of seconds, not negative, at most a day.
func parseMaxWait(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, serr := strconv.ParseFloat(v, 64)
		if serr != nil || secs != secs {
			return 0, false
		}
		d = time.Duration(min(secs, 86400) * float64(time.Second))
	}
	if d < 0 || d > 24*time.Hour {
		return 0, false
	}
	return d, true
}

const msgBodyMemoryFull = "switchover: the gateway holds as many request bodies as its memory for them allows (server.max_body_memory); retry shortly"

// readBody reads a request body of declared length n (-1: unknown). A
// declared length is read into a slice of exactly that size, so the
// memory a body takes is the length it reserved; io.ReadAll's doubling
// would take up to twice as much.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
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

// logLine is what one request's log line says.
type logLine struct {
	id, key, method, path string
	model, pool           string
	stream                bool
	status                int
	firstByte             time.Duration
	bytes                 int64
	report                *route.Report
	err                   error
	clientGone            bool
	span                  trace.Span
	// usage is what the answer said it used, and cost its price (priced
	// false when the model has none).
	usage  route.Usage
	cost   float64
	priced bool
	// who is the caller's key when Tenants found it, ticket its admitted
	// request (settled in finish), refused the code of a refusal at its
	// limits.
	who     *tenant.Principal
	ticket  *tenant.Ticket
	refused string
	// routed is set for calls routed by their model to a pool (not a
	// stored object's, pinned to its backend): the key's allowed pools
	// and models apply to them.
	routed bool
}

func (h *Handler) finish(l *logLine, start time.Time) {
	total := time.Since(start)
	backend := ""
	if l.report != nil && l.report.Served != nil {
		backend = l.report.Served.Backend.Name
	}
	status := l.status
	if l.clientGone {
		status = 0
	}
	if h.Recorder != nil && l.pool != "" {
		h.Recorder.Request(l.pool, backend, status, total, l.firstByte)
	}
	if r := l.report; r != nil && r.Usage != nil && r.Usage.Known && backend != "" {
		l.usage = *r.Usage
	}
	if h.Spender != nil && backend != "" {
		sp := Spend{RequestID: l.id, Pool: l.pool, Backend: backend, Key: l.key, Model: l.model, Status: status, Usage: l.usage}
		if l.who != nil {
			sp.Team = l.who.Team
		}
		if l.report != nil {
			sp.Failover = l.report.Failover
		}
		l.cost, l.priced = h.Spender.Spent(sp)
	}
	l.settle()
	if l.span != nil {
		endSpan(l, backend)
	}
	h.writeLine(l, time.Now(), backend, total)
}

// writeLine writes l's log line, stamped now.
func (h *Handler) writeLine(l *logLine, now time.Time, backend string, total time.Duration) {
	level := slog.LevelInfo
	if l.err != nil && !l.clientGone && l.status != 0 {
		level = slog.LevelWarn
	}
	logStatus := l.status
	if l.status == 0 || l.clientGone {
		logStatus = 499 // the client closed the request
	}
	if rl := h.RequestLog; rl != nil {
		if !rl.enabled(level) {
			return
		}
		ln := rl.begin(now, level, "request")
		l.fields(&ln, backend, logStatus, total)
		rl.end(ln)
		return
	}
	lg := h.logger()
	if !lg.Enabled(context.Background(), level) {
		return
	}
	// Sized for every attribute at once, and handed to the handler as a
	// record without a caller's PC: the line has no source.
	a := attrLine(make([]slog.Attr, 0, 16))
	l.fields(&a, backend, logStatus, total)
	rec := slog.NewRecord(now, level, "request", 0)
	rec.AddAttrs(a...)
	lg.Handler().Handle(context.Background(), rec)
}

// fieldWriter takes a log line's fields in order: a RequestLog's line, or
// slog attributes.
type fieldWriter interface {
	str(k, v string)
	int(k string, v int64)
	bool(k string, v bool)
}

var (
	_ fieldWriter = (*line)(nil)
	_ fieldWriter = (*attrLine)(nil)
)

// attrLine collects a line's fields as slog attributes.
type attrLine []slog.Attr

func (a *attrLine) str(k, v string)       { *a = append(*a, slog.String(k, v)) }
func (a *attrLine) int(k string, v int64) { *a = append(*a, slog.Int64(k, v)) }
func (a *attrLine) bool(k string, v bool) { *a = append(*a, slog.Bool(k, v)) }

// fields writes the request log line's fields, in their order.
func (l *logLine) fields(f fieldWriter, backend string, status int, total time.Duration) {
	f.str("request_id", l.id)
	f.str("method", l.method)
	f.str("path", l.path)
	f.int("status", int64(status))
	if l.key != "" {
		f.str("key", l.key)
		if l.who != nil && l.who.Team != "" {
			f.str("team", l.who.Team)
		}
	}
	if l.refused != "" {
		f.str("refused", l.refused)
	}
	if l.model != "" {
		f.str("model", l.model)
	}
	if l.pool != "" {
		f.str("pool", l.pool)
		f.bool("stream", l.stream)
	}
	if l.report != nil {
		f.str("backend", backend)
		f.bool("failover", l.report.Failover)
		f.int("attempts", int64(len(l.report.Attempts)))
		f.str("tried", describeAttempts(l.report.Attempts))
		if l.report.Hedge != "" {
			f.str("hedge", string(l.report.Hedge))
		}
	}
	if u := l.usage; u.Known {
		f.int("prompt_tokens", u.Prompt)
		f.int("completion_tokens", u.Completion)
		if u.Cached > 0 {
			f.int("cached_tokens", u.Cached)
		}
		if u.Reasoning > 0 {
			f.int("reasoning_tokens", u.Reasoning)
		}
		if l.priced {
			f.str("cost_usd", strconv.FormatFloat(l.cost, 'f', 6, 64))
		}
	}
	f.int("duration_ms", total.Milliseconds())
	f.int("first_byte_ms", l.firstByte.Milliseconds())
	f.int("bytes", l.bytes)
	if l.err != nil {
		f.str("error", l.err.Error())
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

// describeAttempts renders attempts compactly:
// "aoai-weu=429 rate_limited 605ms, aoai-sec=200 1218ms".
func describeAttempts(as []route.Attempt) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.Backend)
		b.WriteByte('=')
		if a.Status != 0 {
			b.WriteString(strconv.Itoa(a.Status))
			if a.Reason != "" {
				b.WriteByte(' ')
			}
		}
		b.WriteString(string(a.Reason))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(a.Duration.Milliseconds(), 10))
		b.WriteString("ms")
	}
	return b.String()
}
