package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchover-gw/switchover/route"
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

// hasAnthropicMember reports whether p has a member that speaks the
// Anthropic API, and so can count tokens itself.
func hasAnthropicMember(p *route.Pool) bool {
	for _, m := range p.Members {
		if m.Backend.Provider.Format() == translate.Anthropic {
			return true
		}
	}
	return false
}

// HeaderEstimate marks an answer the gateway computed itself instead of
// asking a backend: a count_tokens for a pool with no Anthropic member.
const HeaderEstimate = "X-Switchover-Estimate"

// serveTokenEstimate answers POST /v1/messages/count_tokens for a pool
// with no Anthropic member with the gateway's own estimate, labelled as
// such: text at four bytes a token, a flat figure per image or document.
func (h *Handler) serveTokenEstimate(w http.ResponseWriter, lg *logLine, body []byte) {
	n, err := translate.EstimateAnthropicTokens(body)
	if err != nil {
		lg.status = http.StatusBadRequest
		writeErrorAs(w, translate.Anthropic, lg.status, "invalid_request_error", "invalid_request", "switchover: "+err.Error())
		return
	}
	lg.status = http.StatusOK
	w.Header().Set(HeaderEstimate, "true")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"input_tokens\":%d}", n)
}
