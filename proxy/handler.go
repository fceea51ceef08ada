// Package proxy is the gateway's http.Handler: the OpenAI-compatible and
// Azure-OpenAI-style API routes on top of the routing engine, caller
// authentication, SSE passthrough, the x-switchover-* response headers,
// health endpoints, and one log line per request.
package proxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/route"
)

// Routes is what the handler serves: pools by model name, and the keys
// callers present. A Routes is immutable once passed to Update.
type Routes struct {
	// Pools maps every model name callers may use (pool names and
	// aliases) to its pool.
	Pools map[string]*route.Pool
	// Models are the names listed by GET /v1/models: one per pool.
	Models []string
	// Keys are the gateway keys. Empty means no authentication. Unused
	// while Resolver requires keys.
	Keys []Key
	// Resolver, if set, finds the caller's key (with its team and
	// limits) in place of Keys, while its Required says keys are
	// required. Nil means Keys.
	Resolver KeyResolver
	// Admission, if set, runs the limits of a key Resolver found before
	// its call goes to a pool. Nil means no limits.
	Admission Admission
	// keyIndex finds a key by its hash: one lookup whatever the number
	// of keys (Update builds it).
	keyIndex map[[sha256.Size]byte]string
	// MaxBody bounds a request body; larger gets 413. Default 32 MiB.
	MaxBody int64
	// MaxBodyMemory bounds the bytes held by request bodies in flight
	// across all requests: a request whose body would take the total
	// over it gets 503 request_body_memory_full with Retry-After: 1
	// before (or, chunked, while) its body is read. Each body holds its
	// share until its response ends; the count carries across Update.
	// Keep it at least MaxBody, or the largest bodies are never read.
	// Zero means no bound.
	MaxBodyMemory int64
	// Pinned routes the paths of stored objects to one backend or a pool
	// without failover; the longest matching Path wins. Nil means none:
	// those paths get 404.
	Pinned []Pinned
	// Conversations are where conversations are made and reached when no
	// pinned route takes their path (see conversations.go): for each
	// pool that has members able to keep them, in the configuration's
	// order, a pool of those members named as it is, with one attempt.
	// Nil means none: without a pinned route they get 404.
	Conversations []*route.Pool
	// UnknownAllow are the paths Unknown takes, relative to the API root,
	// for keys whose scope allows it (scopeForwarded): "assistants" takes
	// /v1/assistants and every path under it; "*" takes every path. The
	// provider's organisation and admin APIs, realtime sub-paths and
	// stored chat completions (neverForwarded) are taken only when an
	// entry names them or a path under them, never through "*". Empty
	// means Unknown takes nothing: other paths get 404.
	UnknownAllow []string
	// Unknown, if set, takes /v1/ and /openai/v1/ paths that nothing
	// else routes, passed on as they are. Nil means 404 listing the
	// routes.
	Unknown *route.Pool
	// Signer signs the owner tags of stored objects' ids (see
	// route.Tagger): every replica serving the same callers needs the
	// same secrets. Nil means an empty secret, forgeable: enough without
	// keys, where every caller is one tenant.
	Signer *route.Signer
	// Index keeps the owners of stored objects without metadata (files,
	// uploads, containers, message batches), by which their lists show
	// a key its own (see route.Tagger.Index). Nil means none: those
	// lists show a key none of them.
	Index route.OwnerIndex
	// MaxConcurrentRequests bounds the requests served at once (health,
	// readiness and metrics excepted): past it a request gets 503
	// too_many_concurrent_requests with Retry-After: 1 at once, its body
	// unread. Zero means no bound.
	MaxConcurrentRequests int
	// MaxConcurrentPerKey bounds the requests of one key served at once
	// (its share of MaxConcurrentRequests; a key's own max_concurrent
	// may be lower): past it the key's request gets 429
	// rate_limit_exceeded at once, its body unread. Without keys it does
	// not apply. Zero means no bound.
	MaxConcurrentPerKey int
	// MaxBodyMemoryPerKey bounds the bytes held by one key's request
	// bodies in flight (its share of MaxBodyMemory): a request of the key
	// whose body would take it over gets 429 rate_limit_exceeded before
	// (or, chunked, while) its body is read. Keep it at least MaxBody.
	// Without keys it does not apply. Zero means no bound.
	MaxBodyMemoryPerKey int64
	// MinBodyRate is the least average rate, in bytes a second, at which
	// a request body must arrive once Handler.BodyReadTimeout has passed
	// (bodyDeadline): a body that falls behind gets 408. Zero means none:
	// the body must arrive whole within BodyReadTimeout.
	MinBodyRate int64
	// Cache is the response cache and request coalescing (cache.go). Nil
	// means none: every call goes to its pool.
	Cache *CacheRoutes
	// Bodies are the request log's body settings (bodies.go). Nil means
	// no call keeps its bodies.
	Bodies *BodyRoutes
}

// Recorder receives one call per answered request, for metrics.
type Recorder interface {
	Request(pool, backend string, status int, total, firstByte time.Duration)
}

// Spender prices and records what an answered request used. It returns
// the cost in US dollars, and whether the model has a price.
type Spender interface {
	Spent(s Spend) (cost float64, priced bool)
}

// Spend is one answered request, for a Spender: who asked (the key's name
// or ID, "" without keys, and its team, and the end user it was made for,
// "" for none), where it went, how it ended and the usage the answer
// reported (Usage.Known false when it said none).
type Spend struct {
	RequestID, Key, Team string
	// Tags are the key's tags (see tenant.Principal), nil without a key.
	Tags                 []string
	EndUser              string
	Pool, Backend, Model string
	Status               int
	Failover             bool
	Usage                route.Usage
	// Cache is "hit" or "coalesced" for an answer the response cache
	// gave without a backend's call: Backend and Usage are then the
	// call's that made it, what the replay saved; its cost is zero.
	// Empty for a call.
	Cache string
	// For the request log: the attempts (of every pool along a chain of
	// fallbacks, in order), the hedge's outcome ("" without one), and the
	// request's duration and time to its first byte.
	Attempts            []route.Attempt
	Hedge               string
	Duration, FirstByte time.Duration
	// Unanswered marks a request that no backend answered (every member
	// failed or none would take it): Backend is "", Usage unknown, and
	// a Spender records it for the log, pricing nothing.
	Unanswered bool
	// Bodies are the call's bodies when its pool or key keeps them
	// (request_log.bodies), nil otherwise.
	Bodies *Bodies
}

// Refusals receives one call per request refused at one of the gateway's
// own limits, before its body was read (or, chunked, while it was), with
// the error code it was answered: request_body_memory_full or
// too_many_concurrent_requests.
type Refusals interface {
	Refused(code string)
	// KeyRefused counts a request refused at its key's or team's limits
	// (Routes.Admission), with the key, the code and the limit.
	KeyRefused(key, code, limit string)
}

// Handler serves the gateway API. Set Routes with Update before serving.
// It is safe for concurrent use; Update may be called while serving.
type Handler struct {
	// Logger gets one line per request and breaker events. Nil means
	// slog.Default().
	Logger *slog.Logger
	// RequestLog, if set, writes the one line per request instead of
	// Logger, in the same format for a fraction of the cost. Nil means
	// the line goes through Logger.
	RequestLog *RequestLog
	// Recorder gets request metrics. Nil means none.
	Recorder Recorder
	// Spender, if set, gets the tokens each answer used (after its body
	// went out), for metrics and spend; the request log has them either way.
	Spender Spender
	// Refusals counts requests refused at a limit. Nil means none.
	Refusals Refusals
	// Metrics serves GET /metrics. Nil means 404.
	Metrics http.Handler
	// Ready reports readiness for GET /readyz: whether this replica can
	// serve (a configuration is loaded, it is listening, it is not
	// draining). Nil means ready once Update has given it routes. Pool
	// health is not readiness: a benched pool is the same on every replica,
	// and failing /readyz for it would take them all out of a load
	// balancer at once; it is GET /healthz/pools.
	Ready func() error
	// PoolHealth reports for GET /healthz/pools whether every pool has a
	// member that would take a call. Nil means PoolsReady on the routes at
	// the wall clock's time.
	PoolHealth func() error
	// TraceHeader enables the opt-in X-Switchover-Trace response header.
	TraceHeader bool
	// Tracer, if set, makes a span per API request, under the caller's
	// trace (W3C traceparent) when it sent one; the span's context goes
	// upstream. Nil means no spans.
	Tracer trace.Tracer
	// BodyReadTimeout bounds reading a request body, so a slow client
	// cannot hold a connection, its slot or its memory: the body may take
	// this long, and after it must keep up Routes.MinBodyRate (with none,
	// it must have arrived). It bounds the body's read alone:
	// http.Server's ReadTimeout would instead cancel long-running streams
	// when it expires. Zero means none.
	BodyReadTimeout time.Duration
	// Clock times the body's read (BodyReadTimeout, Routes.MinBodyRate).
	// Nil means the wall clock.
	Clock clock.Clock

	routes   atomic.Pointer[Routes]
	bodies   bodyMemory
	inflight concurrency
	keys     keyHolds

	halting halting
}

// ErrShuttingDown is the cause of the requests Halt ends.
var ErrShuttingDown = errors.New("the gateway is shutting down")

// Halt ends the API requests in flight, for a shutdown whose grace period
// is over: their upstream calls are cancelled; a stream already under way
// ends with an SSE error event, in the client's format, saying the gateway
// is shutting down; a request not yet answered gets 503 shutting_down; a
// plain response already begun is aborted. Each is logged with the error
// ErrShuttingDown, not as a client that went away. Requests that arrive
// later are ended the same way. Safe to call more than once.
func (h *Handler) Halt() { h.halting.halt(ErrShuttingDown) }

// halting is the set of requests Halt ends: each registers the cancel of
// its context while it runs. (A context.AfterFunc on a halt context did
// the same at three allocations per request.) It is safe for concurrent
// use.
type halting struct {
	mu      sync.Mutex
	halted  error // the cause once halted; later requests end at once
	running map[*logLine]context.CancelCauseFunc
}

// add registers the cancel of l's request context, or cancels it at once
// when Halt has been called.
func (hs *halting) add(l *logLine, cancel context.CancelCauseFunc) {
	hs.mu.Lock()
	if cause := hs.halted; cause != nil {
		hs.mu.Unlock()
		cancel(cause)
		return
	}
	if hs.running == nil {
		hs.running = map[*logLine]context.CancelCauseFunc{}
	}
	hs.running[l] = cancel
	hs.mu.Unlock()
}

// remove unregisters l's request.
func (hs *halting) remove(l *logLine) {
	hs.mu.Lock()
	delete(hs.running, l)
	hs.mu.Unlock()
}

// halt cancels every registered request with cause, and every later one
// as it registers. The cancels are called outside the lock.
func (hs *halting) halt(cause error) {
	hs.mu.Lock()
	if hs.halted == nil {
		hs.halted = cause
	}
	cancels := make([]context.CancelCauseFunc, 0, len(hs.running))
	for _, c := range hs.running {
		cancels = append(cancels, c)
	}
	hs.running = nil
	hs.mu.Unlock()
	for _, c := range cancels {
		c(cause)
	}
}

// Update replaces the routes. Requests in flight finish on the old ones.
func (h *Handler) Update(r *Routes) {
	if r.MaxBody <= 0 {
		r.MaxBody = route.DefaultMaxBodyBytes
	}
	if r.Models == nil {
		for name, p := range r.Pools {
			if name == p.Name {
				r.Models = append(r.Models, name)
			}
		}
		sort.Strings(r.Models)
	}
	r.keyIndex = make(map[[sha256.Size]byte]string, len(r.Keys))
	for _, k := range r.Keys {
		r.keyIndex[k.hash] = k.Name
	}
	h.routes.Store(r)
}

// clock returns the handler's clock.
func (h *Handler) clock() clock.Clock { return clock.Or(h.Clock) }

// now reads the handler's clock.
func (h *Handler) now() time.Time { return h.clock().Now() }

func (h *Handler) refused(code string) {
	if h.Refusals != nil {
		h.Refusals.Refused(code)
	}
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

// serveProbe answers the health, readiness and metrics endpoints, outside
// the pipeline: no cap, no key, no log line. It reports false for every
// other path, and for /metrics without Metrics.
func (h *Handler) serveProbe(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return true
	case "/readyz":
		h.serveCheck(w, h.ready, "not ready", "ready")
		return true
	case "/healthz/pools":
		h.serveCheck(w, h.poolHealth, "unhealthy", "ok")
		return true
	case "/metrics":
		if h.Metrics != nil {
			h.Metrics.ServeHTTP(w, r)
			return true
		}
	}
	return false
}

// loadRoutes is the stage that takes the routes in force: the request is
// served on them to its end, whatever Update does meanwhile.
func loadRoutes(x *exchange) error {
	if x.rt = x.h.routes.Load(); x.rt == nil {
		return serverError(http.StatusServiceUnavailable, "not_ready", "switchover: no configuration loaded")
	}
	return nil
}

// identify is the stage that gives the request its id, sent back and
// upstream in X-Request-Id, and opens its log line, so that a request
// refused from here on (a wrong path, method or key) shows up in the log.
// Until begin, the line is a refusal's: the path cut to 200 bytes, no
// duration.
func identify(x *exchange) error {
	id := requestID(x.r)
	// One value slice for both headers, each of which only replaces it
	// (Header.Set); the caller's own, when it is the id, stays.
	v := x.r.Header["X-Request-Id"]
	if len(v) != 1 || v[0] != id {
		v = []string{id}
		x.r.Header["X-Request-Id"] = v
	}
	x.w.Header()["X-Request-Id"] = v[:1:1]
	x.lg.id, x.lg.method, x.lg.path = id, x.r.Method, truncate(x.r.URL.Path, 200)
	x.logged = true
	return nil
}

func (h *Handler) ready() error {
	if h.Ready != nil {
		return h.Ready()
	}
	if h.routes.Load() == nil {
		return errors.New("no configuration loaded")
	}
	return nil
}

func (h *Handler) poolHealth() error {
	if h.PoolHealth != nil {
		return h.PoolHealth()
	}
	rt := h.routes.Load()
	if rt == nil {
		return errors.New("no configuration loaded")
	}
	return PoolsReady(rt.Pools, time.Now())
}

// serveCheck answers a health check: 200 and ok, or 503 and bad with the
// reason.
func (h *Handler) serveCheck(w http.ResponseWriter, check func() error, bad, ok string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := check(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "%s: %v\n", bad, err)
		return
	}
	io.WriteString(w, ok+"\n")
}

// PoolsReady returns an error naming the pools none of whose backends
// would take a call at now.
func PoolsReady(pools map[string]*route.Pool, now time.Time) error {
	var down []string
	seen := map[*route.Pool]bool{}
	for _, p := range pools {
		if seen[p] {
			continue
		}
		seen[p] = true
		if !p.AnyUsable(now) {
			down = append(down, p.Name)
		}
	}
	if len(down) > 0 {
		sort.Strings(down)
		return fmt.Errorf("no usable backend in pool %s", strings.Join(down, ", "))
	}
	return nil
}

// requestID returns the caller's X-Request-Id when it is sane, or a new one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 && printable(id) {
		return id
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
