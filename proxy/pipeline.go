package proxy

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// The request pipeline. ServeHTTP answers the probes (health, readiness,
// metrics) itself; every other request is an exchange that goes through
// stages in order, each a small function of one concern, in the file of
// that concern. A stage returns nil to go on, or an error to stop the
// request there: fail (errors.go) answers that error in the caller's
// format, the one place a failure is written. end runs last, whatever
// happened, a panic included.
//
// Every request runs these:
//
//	loadRoutes    handler.go      the routes in force; 503 not_ready without
//	identify      handler.go      its X-Request-Id; opens the log line
//	classifyPath  path.go         what the path asks for, in which API format; 404
//	checkMethod   path.go         405
//	authenticate  tenancy.go      the caller's key; 401, or 503 when the store cannot say
//	holdSlot      concurrency.go  a slot under server.max_concurrent_requests (503) and,
//	                              for a key, one of its places: its max_concurrent and its
//	                              share of the slots (429)
//
// A caller is admitted in two steps: what needs its key alone (holdSlot:
// concurrency, and its share of the body memory, reserved as the body is
// read) before a byte of its body is read, so a caller without a key
// holds no slot and no memory, and what needs the body (admit: pools and
// models, rates, tokens, budgets) after it is read. Any answer given
// before the body was read closes the connection (fail), so a refused
// caller never holds it either.
//
// then those of its kind of path (stagesOf):
//
//	the model list      ignoreBody      body.go      a body sent anyway is not read
//	                    listModels      models.go
//
//	an API call         begin           logline.go   the start, for the log line's duration
//	                    traceRequest    tracing.go   the span, with Tracer set
//	                    readRequestBody body.go      the body, bounded in size, memory (the
//	                                                 key's share too) and time; 413, 503, 429, 408
//	                    geminiBody      gemini.go    a Gemini client's embedContent made an
//	                                                 embeddings call; 400
//	                    parseCall       api.go       the route.Request; 400
//	                    findPool        api.go       the pool the model names; 400, 404
//	                    estimateTokens  api.go       count_tokens answered here for a pool that cannot
//	                    countGeminiTokens            a Gemini client's countTokens answered
//	                                    gemini.go    here, with the gateway's estimate
//	                    findEndUser     enduser.go   the end user (header, else body); 400
//	                    admit           tenancy.go   the key's limits (Routes.Admission); 429, 403
//	                    applyPatience   tenancy.go   the key's patience as the call's max wait
//	                    cacheLookup     cache.go     the answer from the response cache or an identical
//	                                                 call in flight; a flight's leader relays and stores
//	                    relay           relay.go     the call through the pool, its answer passed on
//
//	a stored response   begin, objectBody (objects.go: read for a chat's POST, else ignored),
//	or chat completion  routeObject (objects.go: its backend; 404),
//	                    checkUpstreamPath (forward.go: the path sent; 400),
//	                    findEndUser (the header's), admit, applyPatience, relay
//
//	a pinned path       begin, pinnedFormat (pinned.go), scopeForwarded (forward.go:
//	(or unknown_paths)  the key's pools and models on unknown_paths; 403), readRequestBody,
//	                    routePinned (pinned.go: untagged ids, their backend; 400, 404;
//	                    for conversations without a pinned route, their pool first:
//	                    conversationPool in conversations.go, 403, 404),
//	                    checkUpstreamPath, findEndUser, admit, applyPatience, relay
//
//	a realtime session  begin, routeRealtime (realtime.go: its pool; 426, 400, 404),
//	                    findEndUser, admit, tunnel (realtime.go: the session, joined to its backend's)
var everyRequest = []stage{loadRoutes, identify, classifyPath, checkMethod, authenticate, holdSlot}

// stagesOf are the stages a request runs after everyRequest's, by the
// kind of its path. (pathUnknown has none: classifyPath refuses it.)
var stagesOf = [...][]stage{
	pathModels:   {ignoreBody, listModels},
	pathAPI:      {begin, traceRequest, readRequestBody, geminiBody, parseCall, findPool, estimateTokens, countGeminiTokens, findEndUser, admit, applyPatience, cacheLookup, relay},
	pathObject:   {begin, objectBody, routeObject, checkUpstreamPath, findEndUser, admit, applyPatience, relay},
	pathPinned:   {begin, pinnedFormat, scopeForwarded, readRequestBody, routePinned, checkUpstreamPath, findEndUser, admit, applyPatience, relay},
	pathRealtime: {begin, routeRealtime, findEndUser, admit, tunnel},
}

// stage is one step of a request's pipeline: nil goes on to the next, an
// error stops the request and is answered by fail.
type stage func(*exchange) error

// errAnswered is the error of a stage that has answered its request in
// full: the pipeline stops, and nothing more is written.
var errAnswered = errors.New("answered")

// exchange is one request's state as it goes through the pipeline: what
// the stages have found out so far, and what the request holds until it
// ends. It belongs to its request and is not safe for concurrent use.
type exchange struct {
	h  *Handler
	w  http.ResponseWriter
	r  *http.Request
	rt *Routes // the routes in force when the request arrived

	kind   pathKind
	op     route.Operation
	dep    string           // the Azure deployment named in the path, or a Gemini client's model
	rel    string           // what else the path names: a model's id, a stored response's path, a pinned path
	format translate.Format // the caller's API format, in which errors are answered
	pool   *route.Pool      // where the request goes (for a pinned path, as its route has it)
	body   []byte
	res    reservation    // the body's share of Routes.MaxBodyMemory, held to the end
	req    *route.Request // what goes to the pool
	hold   *keyHold       // the caller's key's count of requests and body bytes; nil: none held
	watch  *bodyDeadline  // bounds the body's arrival; kept for the exchange's next request
	models [2]string      // the backing of the admission's Ask.Models (askOf), which is not kept past the admission

	slot        bool // holds a slot under the concurrency cap
	conv        bool // a conversations path no pinned route takes: its pool is one of Routes.Conversations (conversationPool)
	watching    bool // watch is watching the body's read
	lingers     bool // end lingers on the unread body (linger)
	logged      bool // gets a log line
	sent        bool // the answer's header has gone out: an error now cuts it short
	eventStream bool // the answer is an event stream
	lg          logLine
	start       time.Time // when the request began, for its log line; zero before
}

// exchanges are the exchanges of ended requests, for new ones: one fewer
// allocation per request. Nothing keeps an exchange, or its log line,
// past end: the halting set lets go of it when the call ends, a realtime
// session's goroutines have ended, and the engine holds only its
// route.Request.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// ServeHTTP implements http.Handler: the probes, then the pipeline.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serveProbe(w, r) {
		return
	}
	x := exchanges.Get().(*exchange)
	// Fields set one by one on a zeroed exchange: a composite literal
	// assigned to *x is built in a temporary on the stack first, which
	// made this frame, under every stream as it waits, 0.6 KiB larger
	// and a waiting stream's stack twice the size (see relay.go).
	watch := x.watch
	*x = exchange{}
	x.h, x.w, x.r, x.format, x.watch = h, w, r, translate.OpenAI, watch
	defer x.recycle()
	err := x.run(everyRequest)
	if err == nil {
		err = x.run(stagesOf[x.kind])
	}
	x.fail(err)
}

// recycle ends the exchange and keeps it for a later request.
func (x *exchange) recycle() {
	x.end()
	watch := x.watch
	*x = exchange{watch: watch}
	exchanges.Put(x)
}

// run runs stages in order until one returns an error, and returns it.
func (x *exchange) run(stages []stage) error {
	for _, s := range stages {
		if err := s(x); err != nil {
			return err
		}
	}
	return nil
}

// end is the pipeline's last step: it stops a watch on the body's read
// left running and net/http's read of a body left unread (after the
// answer, for a body refused for its declared size: see linger), gives
// back the body's memory, writes the request's log line, then gives back
// its slots.
func (x *exchange) end() {
	if x.watching {
		x.watch.stop() // the read panicked: the watch must not outlive it
	}
	unread := x.bodyUnread() && x.kind != pathRealtime // a realtime session's connection is the tunnel's
	if unread && !x.lingers {
		x.stopBodyRead()
	}
	x.res.close()
	if x.logged {
		start := x.start
		if start.IsZero() {
			start = time.Now()
		}
		x.h.finish(&x.lg, start)
	}
	if x.hold != nil {
		x.h.keys.release(x.lg.key, x.hold)
	}
	if x.slot {
		x.h.inflight.release()
	}
	if unread && x.lingers {
		x.linger()
	}
}

// routeTo sends the request to pool as req; the log line names the pool.
func (x *exchange) routeTo(pool *route.Pool, req *route.Request) {
	x.pool, x.req = pool, req
	x.lg.pool = pool.Name
}
