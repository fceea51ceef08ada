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
	status, code := http.StatusServiceUnavailable, "no_backend_available"
	msg := fmt.Sprintf("switchover: no backend of pool %q is available", p.Name)
	if n := len(rep.Attempts); n > 0 {
		last := rep.Attempts[n-1]
		code = "backends_exhausted"
		switch {
		case last.Status != 0:
			status = last.Status
		case last.Reason == ReasonTimeout || last.Reason == ReasonFirstByteTimeout:
			status = http.StatusGatewayTimeout
		default:
			status = http.StatusBadGateway
		}
		var parts []string
		for _, a := range rep.Attempts {
			parts = append(parts, a.Backend+": "+a.describe())
		}
		msg = fmt.Sprintf("switchover: every attempt for pool %q failed (%s)", p.Name, strings.Join(parts, "; "))
	}
	if len(rep.Skipped) > 0 {
		msg += "; " + skipped(rep)
	}
	wait := p.retryAfter(rep, now)

	type attempt struct {
		Backend    string `json:"backend"`
		Region     string `json:"region,omitempty"`
		Status     int    `json:"status,omitempty"`
		Reason     Reason `json:"reason"`
		Message    string `json:"message,omitempty"`
		DurationMS int64  `json:"duration_ms"`
	}
	var e struct {
		Error struct {
			Message  string    `json:"message"`
			Type     string    `json:"type"`
			Param    *string   `json:"param"`
			Code     string    `json:"code"`
			Attempts []attempt `json:"attempts"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type, e.Error.Code = msg, "switchover_error", code
	e.Error.Attempts = make([]attempt, 0, len(rep.Attempts))
	for _, a := range rep.Attempts {
		e.Error.Attempts = append(e.Error.Attempts, attempt{a.Backend, a.Region, a.Status, a.Reason, a.Message, a.Duration.Milliseconds()})
	}
	body, _ := json.Marshal(e)
	if r.format() == translate.Anthropic {
		body = translate.ErrorToAnthropic(translate.OpenAI, status, body)
	}

	h := http.Header{}
	for k, vv := range lastHeader {
		if strings.HasPrefix(k, "X-Ratelimit-") {
			h[k] = vv
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(wait.Milliseconds(), 10))
	h.Set(HeaderAttempts, itoa(len(rep.Attempts)))
	h.Set(HeaderFailover, boolString(len(rep.Attempts) > 1))
	return newResponse(status, h, body)
}

// unsupported is the answer when no member of the pool can honour the
// request: 400, saying what each one lacks.
func (p *Pool) unsupported(r *Request, rep *Report) *http.Response {
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
	body, _ := json.Marshal(e)
	if r.format() == translate.Anthropic {
		body = translate.ErrorToAnthropic(translate.OpenAI, http.StatusBadRequest, body)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(HeaderAttempts, "0")
	h.Set(HeaderFailover, "false")
	return newResponse(http.StatusBadRequest, h, body)
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

// retryAfter is how long until the soonest member of the pool will take a
// call: its breaker's reopening, or for a member tried in this request, the
// Retry-After it sent if later. At least one second.
func (p *Pool) retryAfter(rep *Report, now time.Time) time.Duration {
	var soonest time.Time
	for _, m := range p.Members {
		t := now
		if br := m.Backend.Breaker; br != nil {
			t = br.Snapshot().ReadyAt(now)
		}
		for _, a := range rep.Attempts {
			if a.Backend == m.Backend.Name && a.RetryAfter > 0 {
				if ra := a.Start.Add(a.RetryAfter); ra.After(t) {
					t = ra
				}
			}
		}
		if soonest.IsZero() || t.Before(soonest) {
			soonest = t
		}
	}
	return max(soonest.Sub(now), time.Second)
}

func (a *Attempt) describe() string {
	if a.Status != 0 {
		return strconv.Itoa(a.Status) + " " + string(a.Reason)
	}
	return string(a.Reason)
}
