package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// parseCall is the stage that makes the API call's route.Request of its
// body: the model (or the Azure deployment the path names), the stream
// flag, the caller's max wait. A body that is not the operation's, an
// Anthropic messages call without max_tokens (checkMaxTokens), or an
// unreadable max wait, gets 400.
func parseCall(x *exchange) error {
	r, op := x.r, x.op
	var req *route.Request
	var err error
	if op.Multipart() {
		req, err = route.NewMultipartRequest(op, x.body, r.Header.Get("Content-Type"), r.Header)
	} else {
		var tg route.Tagger // copied into req
		x.taggerInto(&tg)
		req, err = route.NewTaggedRequest(op, x.body, r.Header, &tg)
	}
	if err != nil {
		code := "invalid_json"
		var oc *route.OwnerConflictError
		var unknown *route.UnknownIDError
		var le *route.JSONLimitError
		switch {
		case errors.As(err, &unknown):
			return objectNotFound(unknown.ID)
		case errors.As(err, &oc):
			code = "owners_conflict"
		case errors.As(err, &le):
			code = "json_too_complex"
		case op.Multipart():
			code = "invalid_request"
		}
		return requestError(http.StatusBadRequest, code, "switchover: "+err.Error())
	}
	if op == route.Messages {
		if err := checkMaxTokens(req); err != nil {
			return err
		}
	}
	req.Format = x.format
	if x.dep != "" {
		req.Model = x.dep
	}
	if x.format == translate.Gemini {
		geminiCall(x, req)
	}
	if v := r.Header.Get(HeaderMaxWait); v != "" {
		d, ok := parseMaxWait(v)
		if !ok {
			return requestError(http.StatusBadRequest, "invalid_max_wait",
				fmt.Sprintf("switchover: %s must be a duration (120s, 2m) or a number of seconds, not %q", HeaderMaxWait, truncate(v, 40)))
		}
		req.MaxWait = d
	}
	x.req = req
	x.lg.model, x.lg.stream = req.Model, req.Stream
	return nil
}

// checkMaxTokens refuses an Anthropic messages call without max_tokens,
// or with one that is not an integer, as Anthropic's API does (400, its
// message): before routing, so that the answer does not depend on which
// member would serve the call (a translated member has no such rule).
func checkMaxTokens(req *route.Request) error {
	v, ok := req.Member("max_tokens")
	if !ok {
		return requestError(http.StatusBadRequest, "invalid_request", "max_tokens: Field required")
	}
	if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
		return requestError(http.StatusBadRequest, "invalid_request", "max_tokens: Input should be a valid integer")
	}
	return nil
}

// findPool is the stage that finds the pool the call's model names: 400
// without a model, 404 for a name that is no pool's. The key's allowed
// pools and models apply to a call routed so.
func findPool(x *exchange) error {
	model := x.req.Model
	if model == "" {
		return requestError(http.StatusBadRequest, "missing_model",
			"switchover: the request names no model; set \"model\" to one of the gateway's pools (GET /v1/models lists them)")
	}
	pool, ok := x.rt.Pools[model]
	if !ok {
		return requestError(http.StatusNotFound, "model_not_found",
			fmt.Sprintf("switchover: the model %q is not a pool of this gateway (GET /v1/models lists them)", truncate(model, 100)))
	}
	x.lg.routed = true
	x.routeTo(pool, x.req)
	if o := x.req.Owner; o != "" && pool.Member(o) == nil {
		// A follow-up on an object of a backend outside the pool: none
		// of the pool's members has it (see objectNotFound).
		return objectNotFound(x.req.OwnerID())
	}
	if pool.Translates(x.req) {
		return chargeDecoding(x)
	}
	return nil
}

// chargeDecoding adds to the body's share of Routes.MaxBodyMemory what
// decoding it whole will take (route.Request.DecodeMemory): a body
// translated for another provider, or whose tokens the gateway counts,
// costs far more than its bytes when it has many small values. A body
// that could never fit gets 413; one that cannot now, 503.
func chargeDecoding(x *exchange) error {
	n := x.req.DecodeMemory()
	if n == 0 || x.res.growShared(n) {
		return nil
	}
	if limit := x.rt.MaxBodyMemory; int64(len(x.body))+n > limit {
		return requestError(http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("switchover: decoding this request (to translate it, or count its tokens) would take about %d MiB, over the gateway's memory for request bodies (server.max_body_memory, %d MiB)",
				n>>20, limit>>20))
	}
	return bodyMemoryFull()
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

// estimateTokens is the stage that answers POST /v1/messages/count_tokens
// for a pool with no Anthropic member, which could count them, with the
// gateway's own estimate, labelled as such: the request's prompt
// estimate (route.Request.PromptTokens, the figure admission and the
// quota router use), which counts text by the pieces of the named
// model's encoding (Claude's characters per token when the name says
// none) and images, audio and documents at their documented flat costs,
// never their base64 bytes. A body Anthropic would refuse gets its 400
// (translate.CheckAnthropicCountTokens). The key's limits do not apply
// to it.
func estimateTokens(x *exchange) error {
	if x.op != route.CountTokens || hasAnthropicMember(x.pool) {
		return nil
	}
	if err := chargeDecoding(x); err != nil { // the check decodes the messages
		return err
	}
	if err := translate.CheckAnthropicCountTokens(x.body); err != nil {
		return requestError(http.StatusBadRequest, "invalid_request", err.Error())
	}
	n := x.req.PromptTokens()
	x.w.Header().Set(HeaderEstimate, "true")
	x.w.Header().Set("Content-Type", "application/json")
	x.writeHeader(http.StatusOK)
	fmt.Fprintf(x.w, "{\"input_tokens\":%d}", n)
	return errAnswered
}
