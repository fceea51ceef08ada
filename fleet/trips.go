package fleet

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// adoptTrip applies another replica's open decision: until its end when
// the trip closes without a probe or its sender does not hold the probe
// lease, else past it by the probe grace, unless this replica holds the
// lease.
func (r *Replica) adoptTrip(m Message) {
	br := r.host.Breaker(m.Backend)
	if br == nil || !r.clk.Now().Before(m.Until) {
		return
	}
	until := m.Until
	if !m.NoProbe {
		if m.Prober == r.id || r.probing(m.Backend) {
			return
		}
		if m.Prober != "" {
			r.probedElsewhere(m.Backend, until.Add(r.o.ProbeGrace))
			// The prober's verdict is due after the trip's end: wait
			// for it. A trip sent by a replica that did not win the
			// lease says nothing of who probes (this replica may be
			// about to win it): adopted as it is.
			until = until.Add(r.o.ProbeGrace)
		}
	}
	br.Adopt(breaker.Snapshot{State: breaker.Open, Until: until, RetryAt: m.RetryAt, Throttled: m.Throttled, Class: m.Class, Level: m.Level, Partial: m.Partial},
		m.CauseKind, "fleet: "+m.Cause+" (on "+m.Replica+")")
}

// probedElsewhere notes that another replica holds the probe lease of
// backend's trip until until.
func (r *Replica) probedElsewhere(backend string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.elsewhere == nil {
		r.elsewhere = map[string]time.Time{}
	}
	r.elsewhere[backend] = until
}

// ProbedElsewhere reports whether another replica holds the probe lease
// of backend's trip in force while the store answers: that replica also
// sends the health checks that may end the trip early, and its verdict
// reaches this one, so the backend is not checked once per replica.
// False when the store is out: each replica then checks for itself.
func (r *Replica) ProbedElsewhere(backend string) bool {
	if !r.Up() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	until, ok := r.elsewhere[backend]
	return ok && r.clk.Now().Before(until)
}

// AdoptedEnd is the end of backend's trip as the replica that decided it
// set it, when this replica adopted it open until until and waits past
// that end, by the probe grace, for the prober's verdict; false for any
// other trip. For the log and the status, which should show when the trip
// ends, not when this replica would give up waiting and probe itself.
func (r *Replica) AdoptedEnd(backend string, until time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.elsewhere[backend]; ok && e.Equal(until) {
		return until.Add(-r.o.ProbeGrace), true
	}
	return time.Time{}, false
}

// probing reports whether this replica holds the probe lease of
// backend's trip in force.
func (r *Replica) probing(backend string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	end, ok := r.probes[backend]
	return ok && r.clk.Now().Before(end.Add(r.o.ProbeGrace))
}

// Transition publishes a breaker transition decided here (not one
// adopted from the fleet, nor an operator's, which goes as an Action): a
// trip, with the race for its probe lease, or a probe's verdict. The
// transition says all that is published. The caller gives it transitions
// in order: one that arrives after a later transition of the same
// breaker must be dropped first (breaker.Order).
func (r *Replica) Transition(t breaker.Transition) {
	if t.Adopted || t.Kind == breaker.KindManual {
		return
	}
	br := r.host.Breaker(t.Name)
	switch {
	case br == nil:
	case t.To == breaker.Open:
		m := Message{Kind: kindTrip, Replica: r.id, At: t.At, Backend: t.Name, Until: t.Until, RetryAt: t.RetryAt,
			Throttled: t.Throttled, Class: t.Class, Cause: t.Cause, CauseKind: t.Kind, NoProbe: t.NoProbe, Level: t.Level, Partial: t.Partial}
		r.enqueue(func(c context.Context) error { return r.publishTrip(c, br, m) })
	case t.To == breaker.Closed && t.From != breaker.Closed && t.Kind != breaker.KindRetryAfter:
		// A probe's verdict, or a health check's (a trip that closes on
		// its Retry-After closes on time everywhere by itself).
		r.mu.Lock()
		delete(r.probes, t.Name)
		delete(r.elsewhere, t.Name)
		r.mu.Unlock()
		m := Message{Kind: kindClose, Replica: r.id, At: t.At, Backend: t.Name, Cause: t.Cause, CauseKind: t.Kind}
		raw, _ := json.Marshal(m)
		r.enqueue(func(c context.Context) error {
			if err := r.store.Delete(c, keyTrip+t.Name); err != nil {
				return err
			}
			r.store.Release(c, keyProbe+t.Name, r.id)
			return r.store.Publish(c, raw)
		})
	}
}

// publishTrip races for the trip's probe lease, then keeps and publishes
// the trip; a replica that lost the race leaves the probe to the winner.
func (r *Replica) publishTrip(c context.Context, br *breaker.Breaker, m Message) error {
	ttl := m.Until.Sub(r.clk.Now())
	if ttl <= 0 {
		return nil
	}
	if !m.NoProbe {
		won, err := r.store.Acquire(c, keyProbe+m.Backend, r.id, ttl+r.o.ProbeGrace)
		if err != nil {
			return err // the store is out: this replica probes for itself
		}
		if won {
			m.Prober = r.id
			r.mu.Lock()
			r.probes[m.Backend] = m.Until
			r.mu.Unlock()
		} else {
			r.probedElsewhere(m.Backend, m.Until.Add(r.o.ProbeGrace))
			br.Adopt(breaker.Snapshot{State: breaker.Open, Until: m.Until.Add(r.o.ProbeGrace), RetryAt: m.RetryAt, Throttled: m.Throttled, Class: m.Class, Level: m.Level, Partial: m.Partial},
				m.CauseKind, "fleet: another replica probes "+m.Backend)
		}
	}
	raw, _ := json.Marshal(m)
	if err := r.store.Put(c, keyTrip+m.Backend, raw, ttl); err != nil {
		return err
	}
	return r.store.Publish(c, raw)
}
