package proxy

import "sync/atomic"

// concurrency bounds the requests served at once. A request that finds
// it full is refused at once rather than queued: a queue would hold its
// connection and, soon, its body. A nil *concurrency never refuses. It is
// safe for concurrent use.
type concurrency struct {
	limit int64
	n     atomic.Int64
}

func newConcurrency(limit int) *concurrency {
	if limit <= 0 {
		return nil
	}
	return &concurrency{limit: int64(limit)}
}

// acquire takes a slot and reports whether one was free; release it when
// the request ends.
func (c *concurrency) acquire() bool {
	if c == nil {
		return true
	}
	for {
		n := c.n.Load()
		if n >= c.limit {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (c *concurrency) release() {
	if c != nil {
		c.n.Add(-1)
	}
}
