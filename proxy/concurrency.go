package proxy

import "sync/atomic"

// holdSlot is the stage that takes one of the server.max_concurrent_requests
// slots for the request, given back when it ends; at the cap it gets 503
// too_many_concurrent_requests with Retry-After: 1, its body unread. Such
// a refusal is counted (Refusals) but not logged.
func holdSlot(x *exchange) error {
	if !x.h.inflight.acquire(x.rt.MaxConcurrentRequests) {
		x.logged = false
		return gatewayBusy(codeTooManyRequests, "switchover: the gateway is serving as many requests as it may at once (server.max_concurrent_requests); retry shortly")
	}
	x.slot = true
	return nil
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
