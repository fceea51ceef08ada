package fleet

import (
	"context"
	"time"
)

// enqueue queues work for the store; it never blocks.
func (r *Replica) enqueue(f func(context.Context) error) {
	select {
	case r.work <- f:
	default:
		if r.o.OnDrop != nil {
			r.o.OnDrop()
		}
	}
}

// worker makes the queued calls to the store. While the store is out
// (its last call failed) queued work is dropped at once rather than each
// item waiting out its timeout: the store's own breaker, closed again by
// the first heartbeat or subscription that gets through.
func (r *Replica) worker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-r.work:
			if !r.up.Load() {
				if r.o.OnDrop != nil {
					r.o.OnDrop()
				}
				continue
			}
			r.call(ctx, f)
		}
	}
}

// call runs f with the store's timeout and notes whether the store
// answered.
func (r *Replica) call(ctx context.Context, f func(context.Context) error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	err := f(cctx)
	cancel()
	if ctx.Err() != nil {
		return err
	}
	r.health(err == nil, err)
	return err
}

// downAfter is how many calls in a row must fail before the store counts
// as out: one slow answer on a busy machine does not make a replica drop
// its updates. upAfter is how many must succeed in a row before a store
// that was out counts as back: a Redis client whose pool still refuses
// to dial for a second after the server returned, while a new
// subscription gets through, made replicas say "back", "unreachable" and
// "back" again within a second.
const (
	downAfter = 3
	upAfter   = 3
)

// health records whether the store answered a call, logging and reporting
// changes: it is out after downAfter failures in a row, and back after
// upAfter answers in a row.
func (r *Replica) health(ok bool, err error) { r.setHealth(ok, err, false) }

// setHealth is health; now marks the store out at once (a subscription
// that was lost).
func (r *Replica) setHealth(ok bool, err error, now bool) {
	if ok {
		r.fails.Store(0)
		if r.oks.Add(1) < upAfter && !r.up.Load() {
			return
		}
	} else {
		r.oks.Store(0)
		if r.fails.Add(1) < downAfter && !now {
			return
		}
	}
	if r.up.Swap(ok) == ok {
		return
	}
	if ok {
		r.log.Info("fleet store is back: sharing state again", "replica", r.id)
		r.enqueue(r.publishUnheardTrips)
	} else {
		r.log.Warn("fleet store unreachable: this replica carries on with its own state", "replica", r.id, "error", err)
	}
	if r.o.OnHealth != nil {
		r.o.OnHealth(ok)
	}
}

// sleep waits d on the replica's clock, or until ctx ends.
func (r *Replica) sleep(ctx context.Context, d time.Duration) bool {
	ch := make(chan struct{})
	t := r.clk.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
