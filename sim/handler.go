package sim

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds request bodies.
const maxBody = 8 << 20

var _ http.Handler = (*deployment)(nil)

// ServeHTTP routes a request by the deployment's flavour. Paths are relative
// to the deployment's base (a shared listener strips the /{name} prefix).
// Every response carries the flavour's request-id headers (Gemini sends
// none).
func (d *deployment) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	dr := d.draw()
	h := w.Header()
	if d.vertex != nil {
		d.routeVertex(w, r, dr)
		return
	}
	switch d.cfg.Flavour {
	case Azure:
		h.Set("X-Request-Id", dr.reqID)
		h.Set("Apim-Request-Id", dr.apimID)
		h.Set("X-Ms-Region", d.cfg.Region)
		d.routeAzure(w, r, dr)
	case Anthropic:
		h.Set("Request-Id", dr.reqID)
		d.routeAnthropic(w, r, dr)
	case Gemini:
		d.routeGemini(w, r, dr)
	case Bedrock:
		h.Set("X-Amzn-Requestid", dr.reqID)
		d.routeBedrock(w, r, dr)
	default:
		h.Set("X-Request-Id", dr.reqID)
		h.Set("Openai-Version", "2020-10-01")
		d.routeOpenAI(w, r, dr)
	}
}

var opPaths = map[string]operation{
	"chat/completions": opChat,
	"completions":      opCompletions,
	"embeddings":       opEmbeddings,
}

func (d *deployment) routeAzure(w http.ResponseWriter, r *http.Request, dr draws) {
	path := r.URL.Path
	apiVersion := r.URL.Query().Get("api-version")
	if rest, ok := strings.CutPrefix(path, "/openai/deployments/"); ok {
		dep, opPath, _ := strings.Cut(rest, "/")
		op, known := opPaths[opPath]
		extra := !known && extraPathKnown(Azure, "deployment", opPath)
		switch {
		case (!known && !extra) || dep == "" || apiVersion == "":
			// Azure answers a missing api-version as an unknown resource.
			d.writeError(w, errRouteNotFound(Azure, r))
		case extra && dep != d.cfg.Deployment:
			d.writeError(w, errDeploymentNotFound(Azure, dep))
		case extra:
			d.routeExtra(w, r, dr, opPath, "deployment", apiVersion)
		case r.Method != http.MethodPost:
			d.writeError(w, errMethodNotAllowed(Azure, r))
		case dep != d.cfg.Deployment:
			d.writeError(w, errDeploymentNotFound(Azure, dep))
		default:
			d.serve(w, r, dr, route{op: op, apiVersion: apiVersion})
		}
		return
	}
	if rest, ok := strings.CutPrefix(path, "/openai/v1/"); ok {
		op, known := opPaths[rest]
		switch {
		case rest == "realtime":
			d.serveRealtime(w, r, dr, realtimeTarget{apiVersion: "v1", model: r.URL.Query().Get("model")})
		case !known:
			if !d.routeExtra(w, r, dr, rest, "v1", "v1") {
				d.writeError(w, errRouteNotFound(Azure, r))
			}
		case r.Method != http.MethodPost && d.routeExtra(w, r, dr, rest, "v1", "v1"):
			// the list of stored chat completions
		case r.Method != http.MethodPost:
			d.writeError(w, errMethodNotAllowed(Azure, r))
		default:
			d.serve(w, r, dr, route{op: op, apiVersion: "v1", modelInBody: true})
		}
		return
	}
	if rest, ok := strings.CutPrefix(path, "/models/"); ok {
		d.routeFoundry(w, r, dr, rest, apiVersion)
		return
	}
	if rest, ok := strings.CutPrefix(path, "/openai/"); ok && apiVersion != "" {
		if rest == "realtime" {
			d.serveRealtime(w, r, dr, realtimeTarget{apiVersion: apiVersion, model: r.URL.Query().Get("deployment"), beta: true})
			return
		}
		if d.routeExtra(w, r, dr, rest, "resource", apiVersion) {
			return
		}
	}
	d.writeError(w, errRouteNotFound(Azure, r))
}

// routeFoundry serves Azure AI Foundry's model inference API under
// /models/: chat completions and embeddings, with the api-version query
// and the deployment as the body's model.
func (d *deployment) routeFoundry(w http.ResponseWriter, r *http.Request, dr draws, rest, apiVersion string) {
	op, known := opPaths[rest]
	switch {
	case !known || op == opCompletions || apiVersion == "":
		d.writeError(w, errRouteNotFound(Azure, r))
	case r.Method != http.MethodPost:
		d.writeError(w, errMethodNotAllowed(Azure, r))
	default:
		d.serve(w, r, dr, route{op: op, apiVersion: apiVersion, modelInBody: true, foundry: true})
	}
}

func (d *deployment) routeOpenAI(w http.ResponseWriter, r *http.Request, dr draws) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		d.writeError(w, errRouteNotFound(OpenAI, r))
		return
	}
	if op, known := opPaths[rest]; known {
		if r.Method != http.MethodPost {
			if !d.routeExtra(w, r, dr, rest, "", "") { // the list of stored chat completions
				d.writeError(w, errMethodNotAllowed(OpenAI, r))
			}
			return
		}
		d.serve(w, r, dr, route{op: op, modelInBody: true})
		return
	}
	if rest == "models" || strings.HasPrefix(rest, "models/") {
		d.serveModels(w, r, strings.TrimPrefix(strings.TrimPrefix(rest, "models"), "/"))
		return
	}
	if rest == "realtime" {
		d.serveRealtime(w, r, dr, realtimeTarget{model: r.URL.Query().Get("model")})
		return
	}
	if d.routeExtra(w, r, dr, rest, "", "") {
		return
	}
	d.writeError(w, errRouteNotFound(OpenAI, r))
}

// routeAnthropic serves POST /v1/messages, and the endpoints of
// extraRoutes (count_tokens, message batches).
func (d *deployment) routeAnthropic(w http.ResponseWriter, r *http.Request, dr draws) {
	if r.URL.Path != "/v1/messages" {
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
		if !ok || !d.routeExtra(w, r, dr, rest, "", "") {
			d.writeError(w, errRouteNotFound(Anthropic, r))
		}
		return
	}
	if r.Method != http.MethodPost {
		d.writeError(w, errMethodNotAllowed(Anthropic, r))
		return
	}
	d.serve(w, r, dr, route{op: opMessages, modelInBody: true})
}

// routeGemini serves POST /v1beta/models/{model}:generateContent,
// :streamGenerateContent and :countTokens. Another model in the path is a routing 404, as
// another deployment in an azure path is.
func (d *deployment) routeGemini(w http.ResponseWriter, r *http.Request, dr draws) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	model, method, split := splitGeminiPath(rest)
	switch {
	case !ok || !split || (method != "generateContent" && method != "streamGenerateContent" && method != "countTokens") || r.Method != http.MethodPost:
		d.writeError(w, errRouteNotFound(Gemini, r))
	case model != d.cfg.Deployment:
		d.writeError(w, errDeploymentNotFound(Gemini, model))
	case method == "countTokens":
		d.serve(w, r, dr, route{op: opGenerate, countTokens: true})
	default:
		d.serve(w, r, dr, route{op: opGenerate, stream: method == "streamGenerateContent", sse: r.URL.Query().Get("alt") == "sse"})
	}
}

// model is an entry of OpenAI's /v1/models.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (d *deployment) serveModels(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodGet {
		d.writeError(w, errMethodNotAllowed(OpenAI, r))
		return
	}
	if key := d.keyFrom(r); !d.authorized(key) {
		d.writeError(w, errUnauthorized(OpenAI, key))
		return
	}
	m := model{ID: d.cfg.Deployment, Object: "model", Created: d.sim.start.Unix(), OwnedBy: "system"}
	switch id {
	case "":
		_ = writeJSON(w, http.StatusOK, struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{"list", []model{m}})
	case d.cfg.Deployment:
		_ = writeJSON(w, http.StatusOK, m)
	default:
		d.writeError(w, errDeploymentNotFound(OpenAI, id))
	}
}

// draws are a request's random decisions, drawn in a fixed order so that
// the same seed gives the same decisions whatever the fault in force. Each
// request, API call or not, draws once.
type draws struct {
	rng    *rand.Rand
	u      float64 // error_rate: fail when u < rate
	pick   int     // error_rate with status 0: 0 is 500, 1 is 503
	z      float64 // latency: standard normal
	reqID  string
	apimID string
}

func (d *deployment) draw() draws {
	rng := d.nextRand()
	dr := draws{rng: rng, u: rng.Float64(), pick: rng.IntN(2), z: rng.NormFloat64()}
	switch d.cfg.Flavour {
	case OpenAI:
		dr.reqID = "req_" + randomHex(rng, 32)
	case Anthropic:
		dr.reqID = randomID(rng, "req_011C", 20)
	case Gemini:
	default:
		dr.reqID = randomUUID(rng)
		dr.apimID = randomUUID(rng)
	}
	return dr
}

// route is what routing learnt of an API call from its method, path and
// query.
type route struct {
	op          operation
	apiVersion  string // azure: the api-version query, "v1" on /openai/v1/
	modelInBody bool   // the body's model must name the deployment
	foundry     bool   // azure: Azure AI Foundry's /models/ API
	stream      bool   // gemini: streamGenerateContent
	// vertexClaude: Claude on Vertex, whose body must have
	// anthropic_version and no model
	vertexClaude bool
	sse          bool   // gemini: alt=sse
	countTokens  bool   // gemini: countTokens
	bedrock      string // bedrock: the action (converse, converse-stream, invoke…)
}

// serve handles one API call: it counts it, applies the fault in force,
// checks the key, the body and the quota, and answers.
func (d *deployment) serve(w http.ResponseWriter, r *http.Request, dr draws, rt route) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	now := d.sim.clock.Now()
	d.counters.begin()
	t := &tally{d: d, op: rt.op}
	defer t.settle(outcomeError) // when handle aborts the connection (faults)
	o := d.handle(w, r, call{route: rt, body: body, readErr: readErr, now: now, draws: dr, tally: t})
	t.settle(o)
	if o == outcomeAbandoned {
		// Nothing (or only part) was written: cut the connection rather
		// than let net/http finish the response as an empty 200.
		panic(http.ErrAbortHandler)
	}
}

// call is what serve hands to handle.
type call struct {
	route
	body    []byte
	readErr error
	now     time.Time
	tally   *tally
	draws
}

// tally records a call's outcome exactly once. A fault that cuts the
// connection settles first, so a client that sees the cut finds it counted.
type tally struct {
	d       *deployment
	op      operation
	settled bool
}

func (t *tally) settle(o outcome) {
	if t.settled {
		return
	}
	t.settled = true
	t.d.counters.end(o)
	t.d.sim.log.Debug("sim: request", "deployment", t.d.cfg.Name, "op", t.op.azureName(), "result", o.String())
}

func (d *deployment) handle(w http.ResponseWriter, r *http.Request, c call) outcome {
	f := d.faultAt(c.now)
	lim := d.limits(f)
	fl := d.cfg.Flavour
	if o, done := d.gate(w, r, c, f); done {
		return o
	}
	if c.stream && !c.sse {
		d.writeError(w, errInvalidRequest(fl, "the simulator streams streamGenerateContent only as server-sent events: add alt=sse to the query"))
		return outcomeRejected
	}
	if c.readErr != nil {
		d.writeError(w, errInvalidRequest(fl, "could not read the request body: "+c.readErr.Error()))
		return outcomeRejected
	}
	if c.vertexClaude {
		if e, bad := vertexClaudeBody(c.body); bad {
			d.writeError(w, e)
			return outcomeRejected
		}
	}
	req, err := parseRequest(c.op, c.body)
	if fl == Bedrock {
		req, err = parseBedrock(c.route, c.body)
	}
	if err != nil {
		d.writeError(w, errInvalidRequest(fl, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	if c.op == opGenerate {
		req.stream = c.stream
	}
	if c.countTokens {
		// Gemini's countTokens ({"contents": …}): the sim's estimate of
		// the prompt, as Anthropic's count_tokens (countTokens), one
		// request against RPM and no tokens.
		if !d.admit(w, &c, f, 0) {
			return outcomeRefused
		}
		if err := writeJSON(w, http.StatusOK, struct {
			TotalTokens int64 `json:"totalTokens"`
		}{req.promptTokens}); err != nil {
			return outcomeAbandoned
		}
		return outcomeOK
	}
	if c.modelInBody {
		if req.model == "" {
			d.writeError(w, errMissingModel(fl))
			return outcomeRejected
		}
		if req.model != d.cfg.Deployment && c.foundry {
			d.writeError(w, errUnknownModel(req.model))
			return outcomeRejected
		}
		if req.model != d.cfg.Deployment {
			d.writeError(w, errDeploymentNotFound(fl, req.model))
			return outcomeRejected
		}
	}

	cost := req.cost(d.cfg.Quota.DefaultMaxTokens)
	a := d.quota.admit(c.now, lim, cost)
	setRateHeaders(w.Header(), d.front(fl), a, lim, c.now)
	if !a.ok {
		setRetryHeaders(w.Header(), d.front(fl), a.untilNext)
		d.writeError(w, errRateLimited(fl, c.op, c.apiVersion, d.cfg.Model, a, lim, d.sim.cfg.Slice))
		return outcomeRefused
	}
	d.counters.charge(cost)

	verdict := filterPass
	if c.op != opEmbeddings {
		verdict = d.cfg.ContentFilter.check(req.prompt)
	}
	if verdict == filterBlock {
		if fl == Gemini {
			writeGeminiBlocked(w, req.stream, geminiBlocked(d.cfg.Model, randomID(c.rng, "", 22), req.promptTokens))
		} else {
			d.writeError(w, errContentFilter(fl))
		}
		return outcomeFiltered
	}

	factor := 0.0
	if f.Mode == FaultSlow {
		factor = f.Factor
	}
	plan := planTiming(d.cfg.Latency, c.z, factor)
	ans := d.answer(req, c, verdict == filterTruncate)
	if c.op == opChat && (fl == OpenAI || fl == Azure) {
		d.storeChat(c.body, ans)
	}
	if req.stream && c.op != opEmbeddings {
		return d.stream(w, r, ans, plan, f, c.tally)
	}
	if err := d.sim.waiter.Wait(r.Context(), plan.total); err != nil {
		return outcomeAbandoned
	}
	if f.Mode == FaultShortBody {
		writeShortBody(w, ans.body(), c.tally)
	}
	if err := writeJSON(w, http.StatusOK, ans.body()); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// gate applies what every API call faces before its body is looked at:
// the fault in force f (down, overloaded, 500s, error rate, blackhole,
// reset, 401/403/404 faults, slow_error_body), the key check, for
// anthropic the anthropic-version header, and whether the deployment
// serves the operation (Deployment.Operations). It sets the rate-limit headers
// of the slice as it stands. done reports that the call was answered (or
// cut) with outcome o; chat, the Responses API, files, batches, audio,
// images and realtime all pass through it.
func (d *deployment) gate(w http.ResponseWriter, r *http.Request, c call, f Fault) (o outcome, done bool) {
	lim := d.limits(f)
	fl := d.cfg.Flavour
	// Until the quota decides, the headers show the slice as it stands.
	setRateHeaders(w.Header(), d.front(fl), d.quota.peek(c.now, lim), lim, c.now)

	switch f.Mode {
	case FaultDown:
		d.writeError(w, errDown(fl, c.reqID))
		return outcomeError, true
	case FaultOverloaded:
		d.writeError(w, errOverloaded(fl, c.reqID))
		return outcomeError, true
	case FaultError500:
		d.writeError(w, errServer(fl, http.StatusInternalServerError, c.reqID))
		return outcomeError, true
	case FaultErrorRate:
		if c.u < f.Rate {
			status := f.Status
			if status == 0 {
				status = []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[c.pick]
			}
			d.writeError(w, errServer(fl, status, c.reqID))
			return outcomeError, true
		}
	case FaultBlackhole:
		<-r.Context().Done()
		panic(http.ErrAbortHandler) // never answer, not even an empty 200
	case FaultReset:
		c.tally.settle(outcomeError)
		resetConn(w)
		return outcomeError, true
	case FaultUnauthorized:
		d.writeError(w, d.unauthorized(fl, d.keyFrom(r)))
		return outcomeError, true
	case FaultForbidden:
		d.writeError(w, errForbidden(fl))
		return outcomeError, true
	case FaultNotFound:
		d.writeError(w, errDeploymentNotFound(fl, d.cfg.Deployment))
		return outcomeError, true
	case FaultSlowErrorBody:
		writeHeadersOnly(w, r, errServer(fl, http.StatusServiceUnavailable, c.reqID))
	}

	if fl == Bedrock {
		if e, bad := d.checkSigV4(r, c.body, c.now); bad {
			d.writeError(w, e)
			return outcomeRejected, true
		}
	} else if key := d.keyFrom(r); !d.authorized(key) {
		d.writeError(w, d.unauthorized(fl, key))
		return outcomeRejected, true
	}
	if fl == Anthropic && d.vertex == nil && r.Header.Get("Anthropic-Version") == "" {
		d.writeError(w, errInvalidRequest(fl, "anthropic-version: header is required"))
		return outcomeRejected, true
	}
	if e, lacks := d.lacks(c.op); lacks {
		d.writeError(w, e)
		return outcomeRejected, true
	}
	return 0, false
}

// resetConn hijacks the connection and closes it with an RST: SO_LINGER 0
// makes the kernel drop unsent data and reset rather than close gracefully.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// writeHeadersOnly sends e's status and headers, with a Content-Length
// promising its JSON body, flushes them, and never sends the body: it holds
// the connection until the client gives up or the sim closes, then aborts
// (slow_error_body). The deferred settle in serve counts the error.
func writeHeadersOnly(w http.ResponseWriter, r *http.Request, e apiError) {
	b := mustJSON(e.body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.status)
	_ = http.NewResponseController(w).Flush()
	<-r.Context().Done()
	panic(http.ErrAbortHandler)
}

// writeShortBody answers 200 with a Content-Length for all of v but sends
// only its first ShortBodyBytes bytes, then closes the connection
// (short_body). The error is counted before the cut, so a client that sees
// it finds it in the stats.
func writeShortBody(w http.ResponseWriter, v any, t *tally) {
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b[:min(ShortBodyBytes, len(b)-1)])
	_ = http.NewResponseController(w).Flush()
	t.settle(outcomeError)
	panic(http.ErrAbortHandler)
}

// writeError writes e as JSON.
func (d *deployment) writeError(w http.ResponseWriter, e apiError) {
	if d.vertex != nil {
		e = d.vertex.frontError(e, d.cfg.Deployment)
	} else if d.cfg.Flavour == Bedrock {
		e = bedrockErr(w.Header(), e)
	}
	_ = writeJSON(w, e.status, e.body)
}

// writeJSON writes v as a JSON response with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}
