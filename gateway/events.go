package gateway

import (
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/notify"
)

// Event is something an operator wants to see in the admin API's recent
// history: a breaker transition, an operator action, a reload, a
// notification.
type Event struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Pool    string    `json:"pool,omitempty"`
	Backend string    `json:"backend,omitempty"`
	Detail  string    `json:"detail"`
	// Opened is, for a breaker transition to open, what opened it (the
	// transition's cause), so that no reader parses Detail for it.
	Opened string `json:"opened,omitempty"`
	// Replica is where it happened, in a fleet's history.
	Replica string `json:"replica,omitempty"`
}

// history keeps the most recent events. It is safe for concurrent use.
type history struct {
	mu   sync.Mutex
	evs  []Event
	next int
	full bool
}

func newHistory(n int) *history { return &history{evs: make([]Event, n)} }

func (h *history) add(e Event) {
	h.mu.Lock()
	h.evs[h.next] = e
	h.next = (h.next + 1) % len(h.evs)
	h.full = h.full || h.next == 0
	h.mu.Unlock()
}

// list returns the events, oldest first.
func (h *history) list() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Event(nil), h.evs[:h.next]...)
	}
	return append(append([]Event(nil), h.evs[h.next:]...), h.evs[:h.next]...)
}

// reasonOf says why a breaker transition changed what a pool can use, in
// the words of the published active-region notifications: 429 quota, 5xx,
// timeout, …; the transition's Cause follows in brackets.
func reasonOf(t breaker.Transition) string {
	var kind string
	switch {
	case t.To == breaker.Closed:
		kind = "recovered"
	default:
		switch t.Kind {
		case breaker.KindManual:
			kind = "manual"
		case breaker.KindQuotaExhausted:
			kind = "quota exhausted (insufficient_quota)"
		case breaker.KindHealthProbe:
			kind = "health probe"
		case breaker.KindThrottled:
			kind = "429 quota"
		case breaker.KindTimeout, breaker.KindUnresponsive:
			kind = "timeout"
		case breaker.KindConnection:
			kind = "connection errors"
		case breaker.KindServerError:
			kind = "5xx"
		default:
			kind = "breaker " + t.To.String()
		}
	}
	return kind + " (" + t.Name + ": " + t.Cause + ")"
}

// updateActive tells the tracker about every pool that has backend as a
// member.
func (g *Gateway) updateActive(backend, reason string) {
	st := g.state.Load()
	if st == nil {
		return
	}
	for _, p := range st.Config.Pools {
		for _, m := range p.Members {
			if m.Backend == backend {
				g.updatePool(st, p.Name, reason)
				break
			}
		}
	}
}

// updatePool gives the tracker the pool's member states and exports its
// active set.
func (g *Gateway) updatePool(st *engine.Engine, pool, reason string) {
	p := st.Pools[pool]
	if p == nil {
		return
	}
	now := g.now()
	members := make([]notify.Member, 0, len(p.Members))
	names := make([]string, 0, len(p.Members))
	for _, m := range p.Members {
		// A half-open backend has not come back yet: its probe (a request
		// or a recovery probe) decides, so a failed probe is not told as a
		// failback and a failover again.
		usable := m.Backend.Usable(now) && (m.Backend.Breaker == nil || m.Backend.Breaker.Snapshot().State != breaker.HalfOpen)
		members = append(members, notify.Member{Backend: m.Backend.Name, Priority: max(m.Priority, 1), Usable: usable})
		names = append(names, m.Backend.Name)
	}
	active := map[string]bool{}
	if g.notes.tracker != nil {
		g.notes.tracker.Update(pool, members, reason, now)
		set, _ := g.notes.tracker.Active(pool)
		for _, b := range set {
			active[b] = true
		}
	}
	g.Metrics.Active(pool, names, active)
}
