package proxy

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
)

// begin is the stage that starts the request proper, once it is known to
// be a call its caller may make: from here on its log line counts the
// duration and shows the whole path.
func begin(x *exchange) error {
	x.start = time.Now()
	x.lg.path = x.r.URL.Path
	return nil
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
	// who is the caller's key when Routes.Resolver found it, ticket its
	// admitted request (settled in finish), refused the code of a refusal
	// at its limits.
	who     *tenant.Principal
	ticket  *tenant.Ticket
	refused string
	// endUser is the end user the request is made for (findEndUser):
	// kept in its usage record, never written in the line.
	endUser string
	// cache is what the response cache did with the call (cache.go):
	// "hit" or "coalesced" (answered without a backend: saved is what
	// the answer had used at savedBackend), "miss", "bypass", or "" when
	// the call is not cached.
	cache        string
	saved        route.Usage
	savedBackend string
	// bodies captures the call's bodies when its pool or key keeps them
	// (bodies.go); nil otherwise.
	bodies *bodyCapture
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
		sp := Spend{RequestID: l.id, Pool: l.pool, Backend: backend, Key: l.key, Model: l.model, Status: status, Usage: l.usage,
			EndUser: l.endUser}
		if l.who != nil {
			sp.Team, sp.Tags = l.who.Team, l.who.Tags
		}
		if l.report != nil {
			sp.Failover = l.report.Failover
		}
		l.logged(&sp, total)
		if l.bodies != nil {
			sp.Bodies = l.bodies.done(l.bytes)
		}
		l.cost, l.priced = h.Spender.Spent(sp)
	} else if h.Spender != nil && (l.cache == "hit" || l.cache == "coalesced") && status != 0 {
		h.spendCached(l, status, total) // cache.go
	} else if h.Spender != nil && l.report != nil && l.pool != "" {
		// No backend answered: the request log keeps it all the same.
		sp := Spend{RequestID: l.id, Pool: l.pool, Key: l.key, Model: l.model, Status: status, EndUser: l.endUser, Unanswered: true}
		if l.who != nil {
			sp.Team, sp.Tags = l.who.Team, l.who.Tags
		}
		l.logged(&sp, total)
		if l.bodies != nil {
			sp.Bodies = l.bodies.done(-1)
		}
		h.Spender.Spent(sp)
	}
	if l.usage.Estimated {
		h.logEstimate(l, backend)
	}
	l.settle()
	if l.span != nil {
		endSpan(l, backend)
	}
	h.writeLine(l, time.Now(), backend, total)
}

// logged fills in what the request log keeps of l beyond its spend: the
// attempts of every pool it went through (a fallback's first), its hedge
// and its timings.
func (l *logLine) logged(sp *Spend, total time.Duration) {
	sp.Duration, sp.FirstByte = total, l.firstByte
	if l.report == nil {
		return
	}
	sp.Hedge = string(l.report.Hedge)
	if l.report.Prior == nil {
		// One pool: its report's attempts, as they are (a Spender only
		// reads them), capped so that an append copies.
		a := l.report.Attempts
		sp.Attempts = a[:len(a):len(a)]
		return
	}
	var chain []*route.Report
	for r := l.report; r != nil; r = r.Prior {
		chain = append(chain, r)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		sp.Attempts = append(sp.Attempts, chain[i].Attempts...)
	}
}

// logEstimate logs, at debug, that l's answer reported no usage and was
// counted by the tokenizer instead: once per answer.
func (h *Handler) logEstimate(l *logLine, backend string) {
	lg := h.logger()
	if !lg.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	u := l.usage
	lg.Debug("usage estimated: the answer reported none", "request_id", l.id, "backend", backend,
		"model", u.Model, "prompt_tokens", u.Prompt, "completion_tokens", u.Completion)
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
	if l.cache != "" {
		f.str("cache", l.cache)
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
		if u.Estimated {
			f.bool("usage_estimated", true)
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
