package proxy

import (
	"net/http"
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
//	holdSlot      concurrency.go  a slot under server.max_concurrent_requests; 503
//	checkMethod   path.go         405
//	authenticate  tenancy.go      the caller's key; 401, or 503 when the store cannot say
//
// then those of its kind of path (stagesOf):
//
//	the model list   listModels (models.go)
//	the others       dispatch
var everyRequest = []stage{loadRoutes, identify, classifyPath, holdSlot, checkMethod, authenticate}

// stagesOf are the stages a request runs after everyRequest's, by the
// kind of its path. (pathUnknown has none: classifyPath refuses it.)
var stagesOf = [...][]stage{
	pathModels:   {listModels},
	pathAPI:      {dispatch},
	pathObject:   {dispatch},
	pathPinned:   {dispatch},
	pathRealtime: {dispatch},
}

// stage is one step of a request's pipeline: nil goes on to the next, an
// error stops the request and is answered by fail.
type stage func(*exchange) error

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
	dep    string           // the Azure deployment named in the path
	rel    string           // what else the path names: a model's id, a stored response's path, a pinned path
	format translate.Format // the caller's API format, in which errors are answered
	pool   *route.Pool      // where the request goes (for a pinned path, as its route has it)
	who    caller

	slot   bool // holds a slot under the concurrency cap
	logged bool // gets a log line
	lg     logLine
	start  time.Time // when the request began, for its log line; zero before
}

// ServeHTTP implements http.Handler: the probes, then the pipeline.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serveProbe(w, r) {
		return
	}
	x := &exchange{h: h, w: w, r: r, format: translate.OpenAI}
	defer x.end()
	err := x.run(everyRequest)
	if err == nil {
		err = x.run(stagesOf[x.kind])
	}
	x.fail(err)
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

// end is the pipeline's last step: it writes the request's log line, then
// gives back its slot.
func (x *exchange) end() {
	if x.logged {
		start := x.start
		if start.IsZero() {
			start = time.Now()
		}
		x.h.finish(&x.lg, start)
	}
	if x.slot {
		x.h.inflight.release()
	}
}

// dispatch is the stage that serves the kinds of path not yet in stages
// of their own. Their serve functions write their own log lines.
func dispatch(x *exchange) error {
	x.logged = false
	w, r, rt, who, id := x.w, x.r, x.rt, x.who, x.lg.id
	switch x.kind {
	case pathObject:
		x.h.serveObject(w, r, rt, x.rel, who, id)
	case pathRealtime:
		x.h.serveRealtime(w, r, rt, who, id)
	case pathPinned:
		x.h.servePinned(w, r, rt, x.pool, x.rel, who, id)
	default:
		x.h.serveAPI(w, r, rt, x.op, x.format, x.dep, who, id)
	}
	return nil
}
