package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// failureTries bounds the calls that count one failure at once: a count
// that timed out may have been recorded without this replica hearing the
// total, and the failure that reached the threshold would then open
// nothing. Counting is idempotent by id, so a second call only reads the
// total again. A failure whose count is still unheard after these is
// counted again at each heartbeat (recount).
const failureTries = 2

// unheardMax bounds the failures per backend whose count this replica
// keeps asking for; past it the oldest is given up.
const unheardMax = 64

// unheard is a failure of this replica's whose count's answer it has not
// heard yet: its call is queued, failed, timed out or was dropped.
type unheard struct {
	o    breaker.Outcome
	at   time.Time // when it was first counted, on the replica's clock
	sent time.Time // when its count was last queued
}

// Failure counts a failure of backend across the fleet; when the fleet's
// count within the breaker's window reaches its threshold and the local
// breaker is still closed, it opens it (and so the fleet's). A count
// whose answer is lost (the store is slow or out) is asked again at the
// next heartbeats until it is heard or its failure has left the window.
func (r *Replica) Failure(backend string, o breaker.Outcome, _ time.Time) {
	id := fmt.Sprintf("%s:%d", r.id, r.seq.Add(1))
	now := r.clk.Now()
	r.mu.Lock()
	m := r.unheard[backend]
	if m == nil {
		m = map[string]*unheard{}
		r.unheard[backend] = m
	}
	if len(m) >= unheardMax {
		oldest := ""
		for k, u := range m {
			if oldest == "" || u.at.Before(m[oldest].at) {
				oldest = k
			}
		}
		delete(m, oldest)
	}
	m[id] = &unheard{o: o, at: now, sent: now}
	r.mu.Unlock()
	r.countFailure(backend, id, o, 0)
}

func (r *Replica) countFailure(backend, id string, o breaker.Outcome, try int) {
	r.enqueue(func(c context.Context) error {
		br := r.host.Breaker(backend)
		if br == nil {
			r.heard(backend, id)
			return nil
		}
		s := br.Settings()
		// Counted at the time it first reaches the store, not when it
		// happened: each count then sees every failure counted before
		// it, whatever the replicas' queues delayed (the last of five
		// sees five).
		n, err := r.store.Count(c, keyFail+backend, id, r.clk.Now(), s.Window)
		if err != nil {
			if try+1 < failureTries {
				r.resent(backend, id)
				r.countFailure(backend, id, o, try+1)
			}
			return err
		}
		r.heard(backend, id)
		if n >= s.Failures && br.Snapshot().State == breaker.Closed {
			cause := fmt.Sprintf("%d failures across the fleet in %s, last %s", n, s.Window, o.Cause)
			br.Force(breaker.Open, time.Time{}, o.Kind, cause) // a transition of this replica's: published
		}
		return nil
	})
}

// heard forgets failure id of backend: its count was answered.
func (r *Replica) heard(backend, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.unheard[backend]; m != nil {
		delete(m, id)
		if len(m) == 0 {
			delete(r.unheard, backend)
		}
	}
}

// resent notes that failure id of backend was queued again now.
func (r *Replica) resent(backend, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.unheard[backend][id]; u != nil {
		u.sent = r.clk.Now()
	}
}

// recount, at a heartbeat while the store answers, counts again each
// failure whose count has gone unheard for longer than its tries may
// take, and gives up those that have left their breaker's window (they
// could no longer count). The regression TestFleetOpensWhenEveryTryOfACountIsLost
// shows why: three replicas whose failures the store held in full, none
// of them opened, because both tries of the last count timed out.
func (r *Replica) recount(now time.Time) {
	r.mu.Lock()
	backends := make([]string, 0, len(r.unheard))
	for b := range r.unheard {
		backends = append(backends, b)
	}
	r.mu.Unlock()
	wait := failureTries * r.o.Timeout
	for _, backend := range backends {
		var window time.Duration
		br := r.host.Breaker(backend)
		if br != nil {
			window = br.Settings().Window
		}
		type again struct {
			id string
			o  breaker.Outcome
		}
		var todo []again
		r.mu.Lock()
		for id, u := range r.unheard[backend] {
			switch {
			case br == nil || !now.Before(u.at.Add(window)):
				delete(r.unheard[backend], id)
			case now.Sub(u.sent) >= wait:
				u.sent = now
				todo = append(todo, again{id, u.o})
			}
		}
		if len(r.unheard[backend]) == 0 {
			delete(r.unheard, backend)
		}
		r.mu.Unlock()
		for _, a := range todo {
			r.countFailure(backend, a.id, a.o, failureTries-1)
		}
	}
}
