package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/switchover-gw/switchover/tenant"
	"github.com/switchover-gw/switchover/translate"
)

// Tenants finds who a request is from and whether it may start;
// tenant.Gate implements it.
type Tenants interface {
	// Required reports whether callers must present a key.
	Required() bool
	// Authenticate returns the key a caller presented.
	Authenticate(ctx context.Context, secret string) (*tenant.Principal, error)
	// Admit decides whether p may start a request to pool, by the model
	// name model, estimated at tokens.
	Admit(p *tenant.Principal, pool, model string, tokens int64) (*tenant.Ticket, *tenant.Refusal)
}

// caller is who sent a request: its key's name (or ID) for logs and
// metrics, and the key's limits when Tenants found it.
type caller struct {
	name string
	p    *tenant.Principal
}

// authenticate is the stage that finds who sent the request: its key,
// with Tenants when set, else among Routes.Keys (none: anyone may call).
// A missing or wrong key gets 401; a key the store could not check, 503
// with Retry-After: 1.
func authenticate(x *exchange) error {
	who, err := x.h.caller(x.r, x.rt)
	x.who = who
	return err
}

const msgBadKey = "switchover: missing or incorrect gateway key; send it as \"Authorization: Bearer KEY\", \"api-key: KEY\" or \"x-api-key: KEY\""

// caller finds the key r presents with h.Tenants, or with rt.Keys when
// there are none.
func (h *Handler) caller(r *http.Request, rt *Routes) (caller, error) {
	if h.Tenants != nil && h.Tenants.Required() {
		secret, _ := presentedKey(r)
		p, err := h.Tenants.Authenticate(r.Context(), secret)
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

// admit runs the caller's limits for a request to pool; false when it was
// refused and the answer written.
func (h *Handler) admit(w http.ResponseWriter, lg *logLine, format translate.Format, pool, model string, tokens int64) bool {
	if h.Tenants == nil || lg.who == nil {
		return true
	}
	if !lg.routed {
		pool, model = "", "" // a stored object's call: only rates, concurrency and budgets apply
	}
	t, refusal := h.Tenants.Admit(lg.who, pool, model, tokens)
	if refusal == nil {
		lg.ticket = t
		return true
	}
	lg.status, lg.refused = refusal.Status, refusal.Code
	if h.Refusals != nil {
		h.Refusals.KeyRefused(lg.key, refusal.Code, refusal.Limit)
	}
	writeRefusal(w, format, refusal)
	return false
}

// writeRefusal answers a request refused at its key's or team's limit,
// before any backend saw it: OpenAI's error body with the limit, what is
// used and when it resets, Retry-After, and the x-ratelimit-* headers
// OpenAI sends. A budget or a model the key may not use is not worth
// retrying soon: x-should-retry: false tells the OpenAI SDKs so.
func writeRefusal(w http.ResponseWriter, f translate.Format, r *tenant.Refusal) {
	h := w.Header()
	if r.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(r.RetryAfter.Seconds())), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(max(r.RetryAfter.Milliseconds(), 1), 10))
	}
	switch r.Limit {
	case "requests per minute", "tokens per minute":
		unit := "requests"
		if r.Limit == "tokens per minute" {
			unit = "tokens"
		}
		h.Set("X-Ratelimit-Limit-"+unit, strconv.FormatInt(int64(r.Max), 10))
		h.Set("X-Ratelimit-Remaining-"+unit, strconv.FormatInt(max(int64(r.Remaining), 0), 10))
		h.Set("X-Ratelimit-Reset-"+unit, r.RetryAfter.Round(time.Millisecond).String())
	}
	if r.Code == "model_not_allowed" || r.RetryAfter > time.Minute {
		h.Set("X-Should-Retry", "false") // the OpenAI SDKs would retry a 429 at once
	}
	typ := "rate_limit_exceeded"
	switch r.Code {
	case "budget_exceeded":
		typ = "insufficient_quota"
	case "model_not_allowed":
		typ = "invalid_request_error"
	}
	type limit struct {
		Subject string  `json:"subject"`
		Name    string  `json:"name"`
		Limit   string  `json:"limit"`
		Max     float64 `json:"max,omitempty"`
		Used    float64 `json:"used,omitempty"`
		Reset   string  `json:"reset,omitempty"`
	}
	l := limit{Subject: r.Subject, Name: r.Name, Limit: r.Limit, Max: r.Max, Used: r.Used}
	if !r.Reset.IsZero() {
		l.Reset = r.Reset.UTC().Format(time.RFC3339Nano)
	}
	body, _ := json.Marshal(struct {
		Error struct {
			errorObject
			Limit limit `json:"switchover_limit"`
		} `json:"error"`
	}{Error: struct {
		errorObject
		Limit limit `json:"switchover_limit"`
	}{errorObject{Message: r.Message, Type: typ, Code: r.Code}, l}})
	if f == translate.Anthropic {
		body = translate.ErrorToAnthropic(translate.OpenAI, r.Status, body)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(r.Status)
	w.Write(body)
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
