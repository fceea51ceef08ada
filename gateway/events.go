package gateway

import (
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
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
// the words of the published active-region notifications: 429 quota, 5xx, timeout, …
func reasonOf(t breaker.Transition) string {
	c := t.Cause
	var kind string
	switch {
	case t.To == breaker.Closed:
		kind = "recovered"
	case strings.Contains(c, "manual") || strings.Contains(c, "admin"):
		kind = "manual"
	case strings.Contains(c, "insufficient_quota"):
		kind = "quota exhausted (insufficient_quota)"
	case strings.Contains(c, "health probe"):
		kind = "health probe"
	case strings.Contains(c, "429"):
		kind = "429 quota"
	case strings.Contains(c, "timeout"):
		kind = "timeout"
	case strings.Contains(c, "connect") || strings.Contains(c, "connection"):
		kind = "connection errors"
	case strings.Contains(c, "last 5") || strings.Contains(c, "failed: 5"):
		kind = "5xx"
	default:
		kind = "breaker " + t.To.String()
	}
	return kind + " (" + t.Name + ": " + c + ")"
}

// updateActive tells the tracker about every pool that has backend as a
// member.
func (g *Gateway) updateActive(backend, reason string) {
	st := g.state.Load()
	if st == nil {
		return
	}
	for _, p := range st.cfg.Pools {
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
func (g *Gateway) updatePool(st *state, pool, reason string) {
	p := st.pools[pool]
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
	if g.tracker != nil {
		g.tracker.Update(pool, members, reason, now)
		set, _ := g.tracker.Active(pool)
		for _, b := range set {
			active[b] = true
		}
	}
	g.Metrics.Active(pool, names, active)
}

// transitionOrder keeps, per backend, the Seq of the last breaker
// transition applied, to tell a late one. It is safe for concurrent use;
// the zero value is ready.
type transitionOrder struct {
	mu   sync.Mutex
	last map[string]uint64
}

// fresh reports whether t is newer than the last transition applied for its
// backend, and if so records it. A Seq of 0 (not numbered) is always fresh.
func (o *transitionOrder) fresh(t breaker.Transition) bool {
	if t.Seq == 0 {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.Seq <= o.last[t.Name] {
		return false
	}
	if o.last == nil {
		o.last = map[string]uint64{}
	}
	o.last[t.Name] = t.Seq
	return true
}

// forget drops what is known of backend, whose next breaker numbers its
// transitions afresh.
func (o *transitionOrder) forget(backend string) {
	o.mu.Lock()
	delete(o.last, backend)
	o.mu.Unlock()
}
