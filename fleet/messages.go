package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// subscribe follows the fleet's messages, subscribing again whenever the
// subscription is lost, and reconciles with what the store keeps each
// time.
func (r *Replica) subscribe(ctx context.Context) {
	for ctx.Err() == nil {
		var ch <-chan []byte
		sctx, cancel := context.WithCancel(ctx)
		err := r.call(ctx, func(c context.Context) error {
			var err error
			ch, err = r.store.Subscribe(sctx) // lives past c: bounded by sctx
			return err
		})
		if err == nil {
			err = r.reconcile(ctx)
		}
		if err != nil {
			// Not joined until what the store keeps is applied: a
			// subscription without it would miss what happened while
			// away.
			cancel()
			r.sleep(ctx, r.o.Heartbeat)
			continue
		}
		r.joined.Store(true)
		for raw := range ch {
			r.handle(raw)
		}
		cancel()
		r.joined.Store(false)
		if ctx.Err() == nil {
			r.setHealth(false, errors.New("subscription lost"), true)
			r.sleep(ctx, r.o.Heartbeat)
		}
	}
}

// reconcile applies what the store keeps (trips in force, operator
// actions) and publishes this replica's own open trips and the actions it
// took while away, after a (re)subscription: what was missed meanwhile.
// It fails when the store could not list what it keeps.
func (r *Replica) reconcile(ctx context.Context) error {
	var kept map[string][]byte
	if err := r.call(ctx, func(c context.Context) error {
		var err error
		kept, err = r.store.List(c, "")
		return err
	}); err != nil {
		return err
	}
	for k, v := range kept {
		if strings.HasPrefix(k, keyTrip) {
			r.handle(v)
		}
	}
	// Operator actions: the one kept on each thing, unless this replica
	// took a newer one while away, which goes to the fleet now.
	for subject, m := range actionsIn(kept) {
		r.applyKept(subject, m)
	}
	if r.PendingActions() > 0 {
		r.enqueue(r.flushActions)
	}
	r.publishUnheard(kept)
	return nil
}

// publishUnheard publishes this replica's open trips that kept (what the
// store keeps) lacks: what it benched while the others could not hear
// it, or what a store which lost its keys no longer holds.
func (r *Replica) publishUnheard(kept map[string][]byte) {
	for _, name := range r.host.Backends() {
		br := r.host.Breaker(name)
		if br == nil {
			continue
		}
		if s := br.Snapshot(); s.State == breaker.Open && len(kept[keyTrip+name]) == 0 {
			r.Transition(breaker.Transition{Name: name, To: breaker.Open, At: r.clk.Now(), Until: s.Until, RetryAt: s.RetryAt,
				Throttled: s.Throttled, Class: s.Class, NoProbe: s.NoProbe, Kind: s.Kind, Level: s.Level, Partial: s.Partial,
				Cause: "benched while the fleet could not hear (" + name + ")"})
		}
	}
}

// publishUnheardTrips lists the trips the store keeps and publishes this
// replica's open ones it lacks: run when the store is back after calls
// failed (a trip decided meanwhile was dropped) while the subscription
// held, so that no resubscription's reconcile sends them.
func (r *Replica) publishUnheardTrips(c context.Context) error {
	kept, err := r.store.List(c, keyTrip)
	if err != nil {
		return err
	}
	r.publishUnheard(kept)
	return nil
}

// Message kinds.
const (
	kindTrip      = "trip"
	kindClose     = "close"
	kindQuota     = "quota"
	kindAction    = "action"
	kindFailovers = "failovers"
)

// Message is what replicas tell each other.
type Message struct {
	Kind    string    `json:"kind"`
	Replica string    `json:"replica"`
	At      time.Time `json:"at"`
	Backend string    `json:"backend,omitempty"`
	// A trip: the open state, its cause, and the replica that holds its
	// probe lease ("" when none won it); NoProbe trips close on time
	// everywhere without a probe.
	Until     time.Time `json:"until,omitzero"`
	RetryAt   time.Time `json:"retry_at,omitzero"`
	Throttled bool      `json:"throttled,omitempty"`
	Class     string    `json:"class,omitempty"`
	Cause     string    `json:"cause,omitempty"`
	// CauseKind is the kind of the trip's or the close's cause (a
	// replica that does not send it is read as breaker.KindUnknown).
	CauseKind breaker.Kind `json:"cause_kind,omitempty"`
	Prober    string       `json:"prober,omitempty"`
	NoProbe   bool         `json:"no_probe,omitempty"`
	// Level and Partial are the trip's ejection level and whether it was
	// a brownout's (breaker.Snapshot): a replica that adopts it needs as
	// many passing checks to end it and brings the backend back as
	// slowly. A replica that does not send them is read as level 0 (no
	// slow start) and not partial, as before they existed.
	Level   int  `json:"level,omitempty"`
	Partial bool `json:"partial,omitempty"`
	// Quota figures: an answer's status and rate-limit headers, and when
	// its call was sent.
	Sent   time.Time         `json:"sent,omitzero"`
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	// An operator action.
	Action *Action `json:"action,omitempty"`
	// Failovers counted in Pool.
	Pool string `json:"pool,omitempty"`
	N    int    `json:"n,omitempty"`
}

// send publishes m in the background.
func (r *Replica) send(m Message) {
	m.Replica = r.id
	raw, err := json.Marshal(m)
	if err != nil {
		return
	}
	r.enqueue(func(c context.Context) error { return r.store.Publish(c, raw) })
}

// handle applies a message from the fleet.
func (r *Replica) handle(raw []byte) {
	var m Message
	if json.Unmarshal(raw, &m) != nil || m.Replica == r.id {
		return
	}
	switch m.Kind {
	case kindTrip:
		r.adoptTrip(m)
	case kindClose:
		r.mu.Lock()
		delete(r.elsewhere, m.Backend)
		r.mu.Unlock()
		if br := r.host.Breaker(m.Backend); br != nil && br.Snapshot().State != breaker.Closed {
			br.Adopt(breaker.Snapshot{State: breaker.Closed}, m.CauseKind, "fleet: "+m.Cause+" (on "+m.Replica+")")
		}
	case kindQuota:
		if q := r.host.Quota(m.Backend); q != nil {
			h := http.Header{}
			for k, v := range m.Header {
				h.Set(k, v)
			}
			q.Observe(m.At, m.Sent, m.Status, h)
		}
	case kindAction:
		if m.Action != nil {
			r.receiveAction(m)
		}
	case kindFailovers:
		r.host.Failovers(m.Pool, m.N, m.At)
	}
}
