package proxy

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/tenant"
)

// holdSlot is the stage that takes one of the
// server.max_concurrent_requests slots for the request and, when its
// caller's key is known, one of that key's places: both are given back
// when the request ends. It runs after authenticate and before the body
// is read, so a caller without a valid key holds none, and a request
// waiting for its body holds its key's place. At the server's cap a
// request gets 503 too_many_concurrent_requests with Retry-After: 1, its
// body unread (a refusal counted with Refusals but not logged). Past its
// key's max_concurrent, or the key's share of the slots
// (Routes.MaxConcurrentPerKey), it gets 429 rate_limit_exceeded
// (keyRefusal). Without keys every caller is one: only the server's cap
// applies.
func holdSlot(x *exchange) error {
	if !x.h.inflight.acquire(x.rt.MaxConcurrentRequests) {
		x.logged = false
		return gatewayBusy(codeTooManyRequests, "switchover: the gateway is serving as many requests as it may at once (server.max_concurrent_requests); retry shortly")
	}
	x.slot = true
	if x.lg.key == "" {
		return nil
	}
	own, share := 0, x.rt.MaxConcurrentPerKey
	if p := x.lg.who; p != nil {
		own = p.Limits.MaxConcurrent
	}
	limit := share
	if own > 0 && (share <= 0 || own <= share) {
		limit = own
	}
	hold, n, ok := x.h.keys.acquire(x.lg.key, limit)
	if ok {
		x.hold = hold
		return nil
	}
	now := x.h.now()
	if limit == own {
		return keyRefusal(x.lg.who.OverConcurrency(n, now))
	}
	return keyRefusal(&tenant.Refusal{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Subject: "key", Name: x.lg.key,
		Limit: "concurrent requests", Max: float64(limit), Used: float64(n), Reset: now.Add(time.Second), RetryAfter: time.Second,
		Message: fmt.Sprintf("switchover: key %s has %d requests in flight, its share of the gateway's (server.max_concurrent_requests_per_key); retry when one ends", x.lg.key, n)})
}

// concurrency counts the requests served at once, against a limit given
// with each request (the routes' in force, so a reload changes it). A
// request that finds it full is refused at once rather than queued: a
// queue would hold its connection and, soon, its body. The zero value is
// ready to use. It is safe for concurrent use.
type concurrency struct {
	n atomic.Int64
}

// acquire takes a slot if fewer than limit are taken (a limit of zero or
// less means none) and reports whether it did; release a slot taken when
// the request ends.
func (c *concurrency) acquire(limit int) bool {
	if limit <= 0 {
		c.n.Add(1)
		return true
	}
	for {
		n := c.n.Load()
		if n >= int64(limit) {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (c *concurrency) release() { c.n.Add(-1) }

// keyHolds is what each key's requests hold at once: how many are in
// flight, and the bytes their bodies reserved, so that one key cannot
// take every slot of the server or all the memory for bodies. The zero
// value is ready to use. It is safe for concurrent use.
type keyHolds struct {
	mu sync.Mutex
	m  map[string]*keyHold
}

// keyHold is one key's count. A request holds it from holdSlot to its
// end, and it stays in keyHolds while any does.
type keyHold struct {
	n      int          // requests in flight; guarded by keyHolds.mu
	memory atomic.Int64 // the bytes its bodies reserved (bodyMemory)
}

// idleKeys is how many keys with nothing in flight keyHolds keeps, so
// that a key's next request finds its count without an allocation;
// past it a key's count goes when its last request ends.
const idleKeys = 1024

// acquire counts one more request of key in flight if it has fewer than
// limit (zero or less: no limit), and returns the key's count, how many
// it had in flight before, and whether it counted this one. Release
// what it counted when the request ends.
func (k *keyHolds) acquire(key string, limit int) (*keyHold, int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.m[key]
	if h == nil {
		if k.m == nil {
			k.m = map[string]*keyHold{}
		}
		h = &keyHold{}
		k.m[key] = h
	}
	n := h.n
	if limit > 0 && n >= limit {
		return nil, n, false
	}
	h.n++
	return h, n, true
}

// release counts a request of key's as ended.
func (k *keyHolds) release(key string, h *keyHold) {
	k.mu.Lock()
	h.n--
	if h.n == 0 && len(k.m) > idleKeys {
		delete(k.m, key)
	}
	k.mu.Unlock()
}

// inFlight returns how many requests of key are in flight, and the bytes
// their bodies hold.
func (k *keyHolds) inFlight(key string) (int, int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h := k.m[key]; h != nil {
		return h.n, h.memory.Load()
	}
	return 0, 0
}
