// Package cache keeps answers of LLM calls for replay, and joins identical
// calls in flight into one: the exact response cache and request
// coalescing of the gateway.
//
// An answer is stored under a Key, the hash of a canonical form of
// everything that changes it (Canon), scoped to a tenant: the caller's
// team, or its key when it has none, unless the pool shares its entries.
// A Store keeps entries; Memory is the in-process one, bounded in bytes.
// Flights joins identical calls in flight: the first (the leader) makes
// the call, the others (followers) wait for its answer, for a bounded
// time.
//
// The package knows nothing of HTTP serving or configuration: proxy
// decides what is cacheable and feeds it, the gateway wires the store.
package cache

import (
	"net/http"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// Key names one answer: a SHA-256 of its canonical request and scope.
type Key [32]byte

// Entry is one stored answer: what the client was sent, who may have it
// back (Pool, Scope) and what it cost to make (Usage, Backend). An entry
// is immutable once stored: Get returns it shared, and nothing may change
// it.
type Entry struct {
	// Status is the answer's HTTP status (2xx: only those are stored).
	Status int
	// Header is the answer's header, without the headers that belong to
	// one response (StoredHeader).
	Header http.Header
	// Body is the answer's body as the client got it: JSON, or a whole
	// event stream.
	Body []byte
	// Stored is when the answer was stored, TTL how long it may be
	// replayed after.
	Stored time.Time
	TTL    time.Duration
	// Pool is the pool that answered; Scope whose entry it is ("t:team",
	// "k:key", "" shared); Key the key that made the call ("" without
	// keys). Purge selects on them.
	Pool, Scope, Key string
	// Backend answered the call, and Usage is what it reported: what a
	// hit saves.
	Backend string
	Usage   route.Usage
}

// Size is what the entry weighs against a store's memory bound: its body,
// its header and a fixed overhead.
func (e *Entry) Size() int {
	n := len(e.Body) + 256 + len(e.Pool) + len(e.Scope) + len(e.Key) + len(e.Backend)
	for k, vv := range e.Header {
		n += len(k)
		for _, v := range vv {
			n += len(v) + 16
		}
	}
	return n
}

// Fresh reports whether e may still be replayed at now.
func (e *Entry) Fresh(now time.Time) bool {
	return now.Before(e.Stored.Add(e.TTL)) && !now.Before(e.Stored.Add(-time.Minute))
}

// Age is e's age at now, in whole seconds, for the Age header.
func (e *Entry) Age(now time.Time) int64 {
	d := now.Sub(e.Stored)
	if d < 0 {
		return 0
	}
	return int64(d / time.Second)
}

// Filter selects entries to purge: every non-empty field must match. The
// zero Filter selects every entry.
type Filter struct {
	Pool string `json:"pool"`
	// Team selects the entries scoped to a team; Key those a key made,
	// whatever their scope.
	Team string `json:"team"`
	Key  string `json:"key"`
}

// Match reports whether f selects e.
func (f Filter) Match(e *Entry) bool {
	return (f.Pool == "" || f.Pool == e.Pool) &&
		(f.Team == "" || e.Scope == "t:"+f.Team) &&
		(f.Key == "" || f.Key == e.Key)
}

// Store keeps entries. A store that fails (a server down) answers Get as
// a miss and drops a Set: a cache outage is never an error of the call.
// Implementations are safe for concurrent use.
type Store interface {
	// Get returns the entry under k if one is fresh at now.
	Get(k Key, now time.Time) (*Entry, bool)
	// Set stores e under k, replacing any entry there. e must not be
	// changed after.
	Set(k Key, e *Entry)
	// Purge removes the entries f selects and returns how many.
	Purge(f Filter) int
}

// StoredHeader returns the part of an answer's header h that is kept with
// it: without the headers that belong to one response, its ids, dates and
// rate-limit figures, its cookies and the gateway's per-request headers
// (those a hit sets afresh).
func StoredHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vv := range h {
		if dropped(k) {
			continue
		}
		out[k] = append([]string(nil), vv...)
	}
	return out
}

// droppedHeaders are the canonical names of the headers StoredHeader
// drops; droppedPrefixes the lowercase prefixes of those families.
var droppedHeaders = map[string]bool{
	"X-Request-Id": true, "Request-Id": true, "Date": true, "Age": true, "Content-Length": true,
	"Set-Cookie": true, "Retry-After": true, "X-Switchover-Cache": true, "X-Switchover-Trace": true,
	"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Trailer": true,
	"Openai-Processing-Ms": true, "X-Envoy-Upstream-Service-Time": true, "Apim-Request-Id": true, "X-Ms-Request-Id": true,
	// What the gateway says of the call that made the answer, not of a
	// hit, which made none (X-Switchover-Backend and -Region, who made
	// the answer, are kept).
	"X-Switchover-Attempts": true, "X-Switchover-Failover": true, "X-Switchover-Hedge": true, "X-Switchover-Queue-Wait-Ms": true,
}

var droppedPrefixes = []string{"x-ratelimit-", "anthropic-ratelimit-"}

func dropped(k string) bool {
	if droppedHeaders[k] {
		return true
	}
	lk := strings.ToLower(k)
	for _, p := range droppedPrefixes {
		if strings.HasPrefix(lk, p) {
			return true
		}
	}
	return false
}

// NoStore reports whether a Cache-Control header value forbids storing
// the answer (no-store, or private: this is a cache shared by a team).
func NoStore(cacheControl []string) bool {
	for _, v := range cacheControl {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if i := strings.IndexByte(d, '='); i >= 0 {
				d = d[:i]
			}
			if d == "no-store" || d == "private" {
				return true
			}
		}
	}
	return false
}
