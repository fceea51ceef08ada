package proxy

import "sync/atomic"

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
