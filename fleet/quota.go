package fleet

import (
	"net/http"
	"strings"
	"time"
)

// Observed publishes an answer's quota figures: a refusal at once, other
// figures at most every 200 ms per backend (the latest).
func (r *Replica) Observed(backend string, now, sent time.Time, status int, h http.Header) {
	m := &Message{Kind: kindQuota, At: now, Backend: backend, Sent: sent, Status: status, Header: rateHeaders(h)}
	if len(m.Header) == 0 {
		return
	}
	r.mu.Lock()
	r.quota[backend] = m
	r.mu.Unlock()
	if status == http.StatusTooManyRequests {
		r.flushQuota(now, true)
		return
	}
	r.flushQuota(now, false)
}

// flushQuota publishes the figures waiting, those of backends last
// published quotaEvery ago or all.
func (r *Replica) flushQuota(now time.Time, all bool) {
	r.mu.Lock()
	var out []Message
	for b, m := range r.quota {
		if all || now.Sub(r.quotaAt[b]) >= quotaEvery {
			out = append(out, *m)
			delete(r.quota, b)
			r.quotaAt[b] = now
		}
	}
	r.mu.Unlock()
	for _, m := range out {
		r.send(m)
	}
}

// rateHeaders are the headers of h a quota reads: rate limits and
// Retry-After, nothing else.
func rateHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		if len(v) > 0 && (strings.HasPrefix(lk, "x-ratelimit-") || strings.HasPrefix(lk, "anthropic-ratelimit-") || lk == "retry-after" || lk == "retry-after-ms") {
			out[k] = v[0]
		}
	}
	return out
}
