package route

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// DefaultMaxQueue bounds the requests a pool holds waiting for quota when
// Pool.MaxQueue is zero.
const DefaultMaxQueue = 1000

// errQueueFull says a patient request found the pool's queue full.
var errQueueFull = errors.New("switchover: the pool's queue of waiting requests is full")

// waitQueue holds a pool's patient requests (Request.MaxWait) while every
// member is out of quota, in arrival order: only the head tries again,
// when the soonest window resets; while it is still refused it stays the
// head, and once it is answered (or gives up) the next tries at once, so
// the window's room goes to the requests that came first, and no more are
// sent than quota admits. It is safe for concurrent use.
type waitQueue struct {
	mu    sync.Mutex
	queue []*ticket
}

// ticket is one request's place in the queue.
type ticket struct {
	q    *waitQueue
	head chan struct{} // closed when the ticket reaches the head
}

// join queues a request, or fails with errQueueFull past max waiting.
func (q *waitQueue) join(max int) (*ticket, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) >= max {
		return nil, errQueueFull
	}
	t := &ticket{q: q, head: make(chan struct{})}
	q.queue = append(q.queue, t)
	if len(q.queue) == 1 {
		close(t.head)
	}
	return t, nil
}

// len is how many requests wait.
func (q *waitQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// leave takes the ticket out of the queue; the next becomes the head.
// Safe to call more than once.
func (t *ticket) leave() {
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.queue {
		if x == t {
			q.queue = append(q.queue[:i], q.queue[i+1:]...)
			if i == 0 && len(q.queue) > 0 {
				close(q.queue[0].head)
			}
			return
		}
	}
}

// wait blocks until the ticket is the head of the queue and until has
// come, on clk. It returns an error when ctx ends or deadline comes first
// (context.DeadlineExceeded). Its timers are armed at those instants
// (clock.At), and the clock read once they are: one that has reached
// an instant by then does not wait for its timer.
func (t *ticket) wait(ctx context.Context, clk clock.Clock, until, deadline time.Time) error {
	expired := make(chan struct{})
	if !deadline.IsZero() {
		tm := clock.At(clk, deadline, func() { close(expired) })
		defer tm.Stop()
		if !clk.Now().Before(deadline) {
			return context.DeadlineExceeded
		}
	}
	select {
	case <-t.head:
	case <-expired:
		return context.DeadlineExceeded
	case <-ctx.Done():
		return ctx.Err()
	}
	ready := make(chan struct{})
	tm := clock.At(clk, until, func() { close(ready) })
	defer tm.Stop()
	if !until.After(clk.Now()) {
		return nil
	}
	select {
	case <-ready:
		return nil
	case <-expired:
		return context.DeadlineExceeded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DefaultMaxWaitLimit caps a request's wait for quota when
// Pool.MaxWaitLimit is zero.
const DefaultMaxWaitLimit = 5 * time.Minute

// outOfQuota reports whether the pool's answer is that no member had
// quota for the request: every member held or benched for it, or every
// attempt refused 429 (a window the gateway could not see was spent),
// and not a request too large for any limit (X-Should-Retry: false).
func outOfQuota(resp *http.Response, rep *Report) bool {
	if rep == nil || resp == nil || rep.Served != nil {
		return false
	}
	if rep.rateLimited {
		return true
	}
	return resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("X-Should-Retry") != "false" &&
		len(rep.Attempts) > 0 && rep.all(ReasonRateLimited)
}

// maxWait is how long r may wait in p's queue.
func (p *Pool) maxWait(r *Request) time.Duration {
	w := r.MaxWait
	if w <= 0 {
		w = p.MaxWait
	}
	limit := p.MaxWaitLimit
	if limit <= 0 {
		limit = DefaultMaxWaitLimit
	}
	return min(w, limit)
}

// maxQueue is p's bound on waiting requests.
func (p *Pool) maxQueue() int {
	if p.MaxQueue <= 0 {
		return DefaultMaxQueue
	}
	return p.MaxQueue
}

// HeaderQueueWait is set on the answer to a request that waited in the
// pool's queue for quota: how long, in milliseconds.
const HeaderQueueWait = "X-Switchover-Queue-Wait-Ms"
