package proxy

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

// KeyResolver finds the key a caller presented: the pipeline's
// authenticate stage asks it (Routes.Resolver). *tenant.Directory
// implements it.
type KeyResolver interface {
	// Required reports whether callers must present a key; while it is
	// false, Routes.Keys decide.
	Required() bool
	// Authenticate returns the key whose secret a caller presented:
	// tenant.ErrNoKey, ErrUnknownKey, ErrRevoked or ErrExpired when it
	// is refused, any other error when it could not be checked.
	Authenticate(ctx context.Context, secret string) (*tenant.Principal, error)
}

// Admission decides whether a caller's request may start, by its key's
// and team's limits: the pipeline's admit stage asks it
// (Routes.Admission). The Ticket it returns settles the request when it
// ends (its Done, with the tokens and cost the answer used).
// *tenant.Limiter implements it.
type Admission interface {
	// AdmitAsk decides whether p may start the request a (its pool and
	// model, token estimate, and what prices it against budgets): a
	// Ticket, or the Refusal that answers it.
	AdmitAsk(p *tenant.Principal, a tenant.Ask) (*tenant.Ticket, *tenant.Refusal)
}

var (
	_ KeyResolver = (*tenant.Directory)(nil)
	_ Admission   = (*tenant.Limiter)(nil)
)

// caller is who sent a request: its key's name (or ID) for logs and
// metrics, and the key's limits when a KeyResolver found it.
type caller struct {
	name string
	p    *tenant.Principal
}

// authenticate is the stage that finds who sent the request, named in its
// log line: its key, with Routes.Resolver when set and it requires keys,
// else among Routes.Keys (none: anyone may call). A missing or wrong key gets 401; a key the store
// could not check, 503 with Retry-After: 1.
func authenticate(x *exchange) error {
	who, err := x.h.caller(x.r, x.rt)
	x.lg.key, x.lg.who = who.name, who.p
	if x.format == translate.Gemini {
		err = geminiKeyError(err) // gemini.go
	}
	return err
}

const msgBadKey = "switchover: missing or incorrect gateway key; send it as \"Authorization: Bearer KEY\", \"api-key: KEY\" or \"x-api-key: KEY\""

// caller finds the key r presents with rt.Resolver, or with rt.Keys when
// there is none or it requires no key.
func (h *Handler) caller(r *http.Request, rt *Routes) (caller, error) {
	if rt.Resolver != nil && rt.Resolver.Required() {
		secret, _ := presentedKey(r)
		p, err := rt.Resolver.Authenticate(r.Context(), secret)
		if err == nil {
			return caller{name: p.ID, p: p}, nil
		}
		msg := msgBadKey
		switch {
		case errors.Is(err, tenant.ErrRevoked):
			msg = "switchover: this gateway key has been revoked"
		case errors.Is(err, tenant.ErrExpired):
			msg = "switchover: this gateway key has expired"
		case errors.Is(err, tenant.ErrNoKey), errors.Is(err, tenant.ErrUnknownKey):
		default:
			// The store could not say: the key may be good.
			h.logger().Warn("key check failed", "error", err)
			return caller{}, requestError(http.StatusServiceUnavailable, "key_store_unavailable",
				"switchover: the key could not be checked (the gateway's key store is unavailable); retry shortly").with("Retry-After", "1")
		}
		return caller{}, requestError(http.StatusUnauthorized, "invalid_api_key", msg)
	}
	if len(rt.Keys) == 0 {
		return caller{}, nil
	}
	name, ok := rt.authenticate(r)
	if !ok {
		return caller{}, requestError(http.StatusUnauthorized, "invalid_api_key", msgBadKey)
	}
	return caller{name: name}, nil
}

// admit is the stage that runs the caller's limits before the call goes
// to its pool (Routes.Admission): its key's and team's rates, concurrency
// and budgets, and the pools and models the key may use: for a call
// routed by its model, that pool and model; for a call on a stored
// response, the pool routeObject chose (one the key may use that has the
// response's backend). A pinned path's pool is the route's, which keys do
// not name: routePinned has checked the key's pools (keyMayUse), so only
// rates, concurrency and budgets are left, and then, for a batch, the
// models it runs (checkBatchModels). A refusal gets 429, or 403 for a
// pool or model the key may not use (keyRefusal). Without a key the
// KeyResolver found, every call is admitted; without an Admission, only
// a batch's models are checked.
func admit(x *exchange) error {
	p := x.lg.who
	if p == nil {
		return nil
	}
	if x.rt.Admission != nil {
		pool, model := x.pool.Name, x.req.Model
		switch {
		case x.kind == pathPinned:
			pool, model = "", ""
		case !x.lg.routed:
			model = "" // a stored response's model is its own, made under these checks
		}
		t, refusal := x.rt.Admission.AdmitAsk(p, askOf(x, pool, model))
		if refusal != nil {
			return keyRefusal(refusal)
		}
		x.lg.ticket = t
	}
	if x.kind == pathPinned {
		// After the rates: reading a batch's input file costs the
		// gateway a call and its bytes.
		return checkBatchModels(x, x.req.Owner, x.req.Path, x.req.Body)
	}
	return nil
}

// askOf is the request x to admit, checked as pool and model: its token
// estimate, and its price's parts (the prompt estimate, its max_tokens,
// and the pool's top member, the one most likely to answer). The
// estimates are the route.Request's, computed once and read again by the
// pool's quota router.
func askOf(x *exchange, pool, model string) tenant.Ask {
	r := x.req
	a := tenant.Ask{Pool: pool, Model: model, Tokens: r.Tokens(), Prompt: r.PromptTokens(), Completion: r.MaxOutputTokens(), EndUser: x.lg.endUser}
	if m := topMember(x.pool); m != nil {
		a.Backend = m.Backend.Name
		x.models = [2]string{m.Deployment, x.req.Model}
		a.Models = x.models[:] // no allocation: nothing keeps an Ask past its admission
	}
	return a
}

// topMember is the member of pool most likely to answer: of the first
// tier (the lowest priority), the heaviest, the first listed on a tie;
// nil for none.
func topMember(pool *route.Pool) *route.Member {
	if pool == nil {
		return nil
	}
	var top *route.Member
	for _, m := range pool.Members {
		if m == nil || m.Backend == nil {
			continue
		}
		if top == nil || max(m.Priority, 1) < max(top.Priority, 1) ||
			max(m.Priority, 1) == max(top.Priority, 1) && max(m.Weight, 1) > max(top.Weight, 1) {
			top = m
		}
	}
	return top
}

// applyPatience is the stage that gives a call without a max wait of its
// own its key's patience: how long it may wait in the pool's queue for
// quota.
func applyPatience(x *exchange) error {
	if p := x.lg.who; p != nil && p.Patience > 0 && x.req.MaxWait == 0 {
		x.req.MaxWait = p.Patience
	}
	return nil
}

// keyRefusal is the answer to a request refused at its key's or team's
// limit, before any backend saw it: OpenAI's error body with the limit,
// what is used and when it resets (switchover_limit), Retry-After, and
// the x-ratelimit-* headers OpenAI sends. A budget or a model the key may
// not use is not worth retrying soon: x-should-retry: false tells the
// OpenAI SDKs so. The log line names the refusal's code, and Refusals
// counts it (KeyRefused).
func keyRefusal(r *tenant.Refusal) *apiError {
	typ := "rate_limit_exceeded"
	switch r.Code {
	case "budget_exceeded":
		typ = "insufficient_quota"
	case "model_not_allowed":
		typ = "invalid_request_error"
	}
	e := &apiError{status: r.Status, typ: typ, code: r.Code, msg: r.Message, refusal: r}
	if r.RetryAfter > 0 {
		e.with("Retry-After", strconv.FormatInt(int64(math.Ceil(r.RetryAfter.Seconds())), 10))
		e.with("Retry-After-Ms", strconv.FormatInt(max(r.RetryAfter.Milliseconds(), 1), 10))
	}
	switch r.Limit {
	case "requests per minute", "tokens per minute":
		unit := "requests"
		if r.Limit == "tokens per minute" {
			unit = "tokens"
		}
		e.with("X-Ratelimit-Limit-"+unit, strconv.FormatInt(int64(r.Max), 10))
		e.with("X-Ratelimit-Remaining-"+unit, strconv.FormatInt(max(int64(r.Remaining), 0), 10))
		e.with("X-Ratelimit-Reset-"+unit, r.RetryAfter.Round(time.Millisecond).String())
	}
	if r.Code == "model_not_allowed" || r.RetryAfter > time.Minute {
		e.with("X-Should-Retry", "false") // the OpenAI SDKs would retry a 429 at once
	}
	return e
}

// limitObject is the switchover_limit member of a refusal's error body.
type limitObject struct {
	Subject string  `json:"subject"`
	Name    string  `json:"name"`
	Limit   string  `json:"limit"`
	Max     float64 `json:"max,omitempty"`
	Used    float64 `json:"used,omitempty"`
	Reset   string  `json:"reset,omitempty"`
}

func newLimitObject(r *tenant.Refusal) *limitObject {
	l := &limitObject{Subject: r.Subject, Name: r.Name, Limit: r.Limit, Max: r.Max, Used: r.Used}
	if !r.Reset.IsZero() {
		l.Reset = r.Reset.UTC().Format(time.RFC3339Nano)
	}
	return l
}

// settle ends the request's ticket with what its answer used.
func (l *logLine) settle() {
	if l.ticket == nil {
		return
	}
	known := l.usage.Known
	l.ticket.Done(l.usage.Prompt+l.usage.Completion, known, l.cost)
	l.ticket = nil
}
