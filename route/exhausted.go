package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/translate"
)

// exhausted builds the response for a request that no backend answered:
// the last upstream status (502 after a connection error, 504 after a
// timeout, 503 when no backend could be tried), an OpenAI-style error that
// lists each attempt, and a Retry-After of the soonest time a backend will
// take traffic again. lastHeader is the last failed response's header, if
// any: its x-ratelimit-* headers are passed on.
func (p *Pool) exhausted(r *Request, rep *Report, lastHeader http.Header) *http.Response {
	now := p.now()
	h := http.Header{}
	status, code, msg, wait := p.exhaustedStatus(r, rep, now, h)
	body := exhaustedBody(r, rep, status, code, msg)
	for k, vv := range lastHeader {
		if strings.HasPrefix(k, "X-Ratelimit-") {
			h[k] = vv
		}
	}
	h.Set("Content-Type", "application/json")
	if wait > 0 && code != "tokens_exceed_limit" {
		SetRetryAfter(h, wait)
	}
	h.Set(HeaderAttempts, itoa(len(rep.Attempts)))
	h.Set(HeaderFailover, boolString(len(rep.Attempts) > 1))
	if rep.rateLimited = code == "backends_rate_limited"; rep.rateLimited {
		rep.retryAt = now.Add(p.soonestWait(rep, now))
	}
	return newResponse(status, h, body)
}

// exhaustedStatus says why no backend answered: the status, the error
// code and message, and how long to wait before trying again. Headers it
// implies (X-Should-Retry) go in h.
func (p *Pool) exhaustedStatus(r *Request, rep *Report, now time.Time, h http.Header) (status int, code, msg string, wait time.Duration) {
	status, code = http.StatusServiceUnavailable, "no_backend_available"
	msg = fmt.Sprintf("switchover: no backend of pool %q is available", p.Name)
	wait = p.retryAfter(rep, now)
	if len(rep.Attempts) > 0 {
		status, code = attemptsStatus(rep, h)
		msg = p.attemptsMessage(r, rep, code)
	} else if p.allDrained() {
		status, code = http.StatusServiceUnavailable, "pool_out_of_service"
		msg = fmt.Sprintf("switchover: pool %q has been taken out of service: an operator drained every backend", p.Name)
		wait = 0
	} else if len(rep.OutOfQuota) > 0 || p.allThrottled(now) {
		// Every backend is out of quota (benched for it, or passed over
		// because its rate-limit headers say the call would not fit): the
		// SDKs raise a RateLimitError and honour Retry-After.
		status, code = http.StatusTooManyRequests, "backends_rate_limited"
		msg = fmt.Sprintf("switchover: every backend of pool %q is out of quota", p.Name)
		if len(rep.OutOfQuota) > 0 {
			msg += " (no call was sent: their rate-limit headers say this one would be refused)"
		}
	}
	if len(rep.Skipped) > 0 {
		msg += "; " + skipped(rep)
	}
	return status, code, msg, wait
}

// attemptsStatus is the status and error code of a request whose every
// attempt failed, from the last one.
func attemptsStatus(rep *Report, h http.Header) (int, string) {
	last := rep.Attempts[len(rep.Attempts)-1]
	code := "backends_exhausted"
	switch {
	case rep.all(ReasonTooLarge):
		// No backend's whole limit fits the request: waiting will not
		// help, and OpenAI's SDKs honour x-should-retry.
		h.Set("X-Should-Retry", "false")
		return http.StatusTooManyRequests, "tokens_exceed_limit"
	case last.Reason == ReasonMisconfigured:
		// Not the caller's 401 or 404: the gateway's own backend is
		// refusing its key or lacks the deployment.
		return http.StatusBadGateway, "backends_misconfigured"
	case last.Status >= 400:
		return last.Status, code
	case last.Reason == ReasonTimeout || last.Reason == ReasonFirstByteTimeout || last.Reason == ReasonUnresponsive:
		return http.StatusGatewayTimeout, code
	}
	// A connection error, or a 2xx that could not be read or translated:
	// never relayed as a success.
	return http.StatusBadGateway, code
}

// attemptsMessage is the error message of a request whose every attempt
// failed: each attempt, and what ended the retries.
func (p *Pool) attemptsMessage(r *Request, rep *Report, code string) string {
	var parts []string
	for _, a := range rep.Attempts {
		parts = append(parts, a.Backend+": "+a.describe())
	}
	msg := fmt.Sprintf("switchover: every attempt for pool %q failed (%s)", p.Name, strings.Join(parts, "; "))
	if code == "tokens_exceed_limit" {
		msg = fmt.Sprintf("switchover: the request needs about %d tokens, more than the whole per-minute token limit of every backend of pool %q (%s); reduce max_tokens or the prompt", r.Tokens(), p.Name, strings.Join(parts, "; "))
	}
	if rep.BudgetSpent {
		msg += "; the request's time budget ran out"
	}
	if rep.RetryBudgetSpent {
		msg += "; the pool's retry budget is spent, so no more backends were tried"
	}
	return msg
}

// exhaustedAttempt is one attempt as the exhausted answer lists it.
type exhaustedAttempt struct {
	Backend    string `json:"backend"`
	Region     string `json:"region,omitempty"`
	Status     int    `json:"status,omitempty"`
	Reason     Reason `json:"reason"`
	Message    string `json:"message,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// exhaustedBody is the exhausted answer's body: an OpenAI-style error
// listing each attempt, in Anthropic's format for an Anthropic client.
func exhaustedBody(r *Request, rep *Report, status int, code, msg string) []byte {
	var e struct {
		Error struct {
			Message  string             `json:"message"`
			Type     string             `json:"type"`
			Param    *string            `json:"param"`
			Code     string             `json:"code"`
			Attempts []exhaustedAttempt `json:"attempts"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type, e.Error.Code = msg, "switchover_error", code
	e.Error.Attempts = make([]exhaustedAttempt, 0, len(rep.Attempts))
	for _, a := range rep.Attempts {
		e.Error.Attempts = append(e.Error.Attempts, exhaustedAttempt{a.Backend, a.Region, a.Status, a.Reason, a.Message, a.Duration.Milliseconds()})
	}
	body, _ := json.Marshal(e)
	return clientError(r, status, body)
}

// unsupported is the answer when no member of the pool can honour the
// request: 400, saying what each one lacks. A compaction no member can
// make is 404 (same body): the pool has no compaction endpoint, which is
// how a provider without one answers and what clients of the Responses
// API take as "compact on the client side".
func (p *Pool) unsupported(r *Request, rep *Report) *http.Response {
	status := http.StatusBadRequest
	if r.Op == ResponsesCompact {
		status = http.StatusNotFound
	}
	msg := fmt.Sprintf("switchover: no backend of pool %q can honour this request: %s", p.Name, skipped(rep))
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type, e.Error.Code = msg, "invalid_request_error", "unsupported_by_backends"
	body := clientError(r, status, mustJSON(e))
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(HeaderAttempts, "0")
	h.Set(HeaderFailover, "false")
	return newResponse(status, h, body)
}

func skipped(rep *Report) string {
	parts := make([]string, len(rep.Skipped))
	for i, s := range rep.Skipped {
		parts[i] = s.Backend + ": " + s.Reason
	}
	return "skipped " + strings.Join(parts, "; ")
}

func newResponse(status int, h http.Header, body []byte) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
	}
}

// SetRetryAfter sets Retry-After (whole seconds, rounded up, at least 1)
// and retry-after-ms for a wait of d.
func SetRetryAfter(h http.Header, d time.Duration) {
	secs := int64((d + time.Second - 1) / time.Second)
	h.Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
}

// MaxClientRetryAfter caps the Retry-After the engine tells a client, as
// the breaker caps a backend's (breaker.DefaultMaxRetryAfter): an upstream
// "Retry-After: 86400" is not relayed as a day.
const MaxClientRetryAfter = breaker.DefaultMaxRetryAfter

// retryAfter is how long until the soonest member of the pool will take a
// call (readyAt). Drained members are left out. At least one second, at
// most MaxClientRetryAfter.
func (p *Pool) retryAfter(rep *Report, now time.Time) time.Duration {
	var soonest time.Time
	for _, m := range p.Members {
		if m.Backend.Drained() {
			continue
		}
		if t := p.readyAt(m, rep, now); soonest.IsZero() || t.Before(soonest) {
			soonest = t
		}
	}
	if soonest.IsZero() {
		return time.Second
	}
	return clientWait(soonest.Sub(now))
}

// clientWait is d as a client is told to wait: at least one second, at
// most MaxClientRetryAfter.
func clientWait(d time.Duration) time.Duration {
	return min(max(d, time.Second), MaxClientRetryAfter)
}

// readyAt is when m is expected to take a call again, as a client the
// pool could not answer (rep) is told: when its breaker lets a call through;
// sooner when the backend's own Retry-After ends first (it is then tried
// when no other member can take the call, see Pool.early), or when a
// probe checks it before that (probedAt); later when, in this request, it
// sent a Retry-After that ends later, or its quota will not take the call
// before.
func (p *Pool) readyAt(m *Member, rep *Report, now time.Time) time.Time {
	t := now
	if br := m.Backend.Breaker; br != nil {
		s := br.Snapshot()
		t = s.ReadyAt(now)
		if s.State == breaker.Open && !s.RetryAt.IsZero() && s.RetryAt.Before(t) {
			t = later(s.RetryAt, now)
		}
		if next, ok := probedAt(m.Backend, s, now); ok && next.Before(t) {
			t = next
		}
	}
	for _, a := range rep.Attempts {
		if a.Backend == m.Backend.Name && a.RetryAfter > 0 {
			if ra := a.Start.Add(a.RetryAfter); ra.After(t) {
				t = ra
			}
		}
	}
	for _, h := range rep.OutOfQuota {
		if h.Backend == m.Backend.Name && h.Until.After(t) {
			t = h.Until
		}
	}
	return t
}

// probedAt is when the recovery probe will next have checked b, whose
// breaker is in state s, at the latest (now plus b.ProbeInterval), and
// whether a probe will: only while the breaker is open for a failure. Not
// for a bench for quota (its Retry-After says when it ends), one an
// operator or a health probe forced (nothing probes it at that cadence),
// nor a misconfiguration (probed once a minute once a probe was refused).
func probedAt(b *Backend, s breaker.Snapshot, now time.Time) (time.Time, bool) {
	if b.ProbeInterval <= 0 || s.State != breaker.Open || s.Throttled {
		return time.Time{}, false
	}
	switch s.Kind {
	case breaker.KindManual, breaker.KindHealthProbe, breaker.KindMisconfigured, breaker.KindQuotaExhausted:
		return time.Time{}, false
	}
	return now.Add(b.ProbeInterval), true
}

// soonestWait is retryAfter without its one-second floor, for a request
// waiting in the pool's queue: at least a millisecond.
func (p *Pool) soonestWait(rep *Report, now time.Time) time.Duration {
	d := p.retryAfter(rep, now)
	if d > time.Second {
		return d
	}
	var soonest time.Time
	for _, h := range rep.OutOfQuota {
		if soonest.IsZero() || h.Until.Before(soonest) {
			soonest = h.Until
		}
	}
	if soonest.IsZero() {
		return d
	}
	return max(soonest.Sub(now), time.Millisecond)
}

// allDrained reports whether an operator has drained every member.
func (p *Pool) allDrained() bool {
	for _, m := range p.Members {
		if !m.Backend.Drained() {
			return false
		}
	}
	return len(p.Members) > 0
}

// allThrottled reports whether every member that is not drained is
// benched because it refused for quota.
func (p *Pool) allThrottled(now time.Time) bool {
	n := 0
	for _, m := range p.Members {
		b := m.Backend
		if b.Drained() {
			continue
		}
		if b.Breaker == nil {
			return false
		}
		s := b.Breaker.Snapshot()
		if s.State != breaker.Open || !s.Throttled || !now.Before(s.Until) {
			return false
		}
		n++
	}
	return n > 0
}

// all reports whether every attempt of the report failed for reason.
func (rep *Report) all(reason Reason) bool {
	for _, a := range rep.Attempts {
		if a.Reason != reason {
			return false
		}
	}
	return len(rep.Attempts) > 0
}

func (a *Attempt) describe() string {
	if a.Status != 0 {
		return strconv.Itoa(a.Status) + " " + string(a.Reason)
	}
	return string(a.Reason)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// unanswered is the pool's answer when no member answered r: rep says
// what was tried. A request for an operation no member serves is
// refused as such (operationUnsupported); one every member skipped is
// refused as unsupported; one for state on a single backend (Request.Owner) fails
// with an OwnerUnavailableError saying why the owner could not take it;
// any other gets the pool's exhausted answer, with lastHeader, the relayed
// headers of the last failure.
func (p *Pool) unanswered(r *Request, rep *Report, lastHeader http.Header) (*http.Response, *Report, error) {
	if p.servesNone(r, rep) {
		return p.operationUnsupported(r, rep), rep, nil
	}
	if len(rep.Attempts) == 0 && len(rep.Skipped) > 0 {
		if r.Owner != "" {
			return nil, rep, &OwnerUnavailableError{Owner: r.Owner, Pool: p.Name, Why: "it cannot take this call: " + rep.Skipped[0].Reason}
		}
		return p.unsupported(r, rep), rep, nil
	}
	if r.Owner != "" {
		if len(rep.Attempts) == 0 {
			return nil, rep, p.ownerBenched(r.Owner)
		}
		a := rep.Attempts[len(rep.Attempts)-1]
		why := "its call failed: " + string(a.Reason)
		if a.Status != 0 {
			why = fmt.Sprintf("its call failed: %d %s", a.Status, a.Reason)
		}
		now := p.now()
		wait := clientWait(p.readyAt(p.Member(r.Owner), rep, now).Sub(now))
		return nil, rep, &OwnerUnavailableError{Owner: r.Owner, Pool: p.Name, Why: why, RetryAfter: wait}
	}
	return p.exhausted(r, rep, lastHeader), rep, nil
}

// clientError is the pool's own error body (OpenAI's shape) in r's
// client's format: Anthropic's (its request_id r's id), Gemini's, else as
// it is.
func clientError(r *Request, status int, body []byte) []byte {
	switch r.format() {
	case translate.Anthropic:
		return translate.ErrorToAnthropicID(translate.OpenAI, status, body, r.id())
	case translate.Gemini:
		return translate.ErrorToGemini(translate.OpenAI, status, body)
	}
	return body
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
