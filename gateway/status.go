package gateway

import (
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// Status is what the admin API's GET /admin/status answers: every pool
// with its members' state, and the recent events.
type Status struct {
	At     time.Time    `json:"at"`
	Path   string       `json:"config_file,omitempty"`
	Pools  []PoolStatus `json:"pools"`
	Events []Event      `json:"events"`
	// Fleet is the replicas sharing state with this one, when they do;
	// Events are then the fleet's (this replica's own while the store
	// does not answer).
	Fleet *FleetStatus `json:"fleet,omitempty"`
	// Store is the store of keys and usage, when one is configured.
	Store *StoreStatus `json:"store,omitempty"`
}

// PoolStatus is one pool.
type PoolStatus struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	// Active is the active set: the usable members of the best tier with
	// any usable member (empty when none is usable), and since when.
	// ActiveSinceStart is true when the set has not changed since this
	// gateway began following the pool (its start, or the reload that
	// added it): ActiveSince is then that instant, and when the set became
	// active is unknown.
	Active           []string       `json:"active"`
	ActiveSince      time.Time      `json:"active_since,omitzero"`
	ActiveSinceStart bool           `json:"active_since_start,omitempty"`
	Members          []MemberStatus `json:"members"`
}

// MemberStatus is one member of a pool and its backend.
type MemberStatus struct {
	Backend string `json:"backend"`
	Type    string `json:"type"`
	Region  string `json:"region,omitempty"`
	Model   string `json:"model,omitempty"`
	// Priority and Weight are in force; Overridden is true when an
	// operator changed them.
	Priority     int    `json:"priority"`
	Weight       int    `json:"weight"`
	Overridden   bool   `json:"overridden,omitempty"`
	Drained      bool   `json:"drained"`
	Usable       bool   `json:"usable"`
	ModelVersion string `json:"model_version,omitempty"`
	// Breaker's Until is when an open breaker's trip ends: for a trip
	// adopted from the replica that probes it, its end there (this
	// replica holds it open up to the probe grace longer, waiting for
	// that replica's verdict).
	Breaker struct {
		State    string    `json:"state"`
		Until    time.Time `json:"until,omitzero"`
		LeftMS   int64     `json:"left_ms,omitempty"`
		Failures int       `json:"failures"`
		Probing  bool      `json:"probing,omitempty"`
	} `json:"breaker"`
	Probe *ProbeStatus `json:"probe,omitempty"`
	// InFlight is the backend's attempts in flight on this replica.
	// Attempts and Errors count this member's attempts since the start
	// (errors: 429, 5xx, timeouts and connection failures), from which
	// the console computes rates by sampling.
	InFlight int64  `json:"in_flight"`
	Attempts uint64 `json:"attempts"`
	Errors   uint64 `json:"errors"`
	// Headroom is the share of its quota the backend last said it has
	// left (0 to 1), when it has said: of the window its figures count
	// (for Azure, of the slice's part of the per-minute limit; see
	// route.LocalQuota.Headroom).
	Headroom *float64 `json:"headroom,omitempty"`
	// FirstByte is the cumulative histogram of the backend's attempts'
	// times to first byte, for the console's p95 over a window.
	FirstByte []LatencyBucket `json:"-"`
}

// Status returns the state of every pool and the recent events.
func (g *Gateway) Status() Status {
	st := g.state.Load()
	now := g.now()
	s := Status{At: now, Path: g.opts.Path, Events: g.notes.events.list()}
	var fleetEvents []Event
	if s.Fleet, fleetEvents = g.fleetStatus(); fleetEvents != nil {
		s.Events = mergeEvents(fleetEvents, s.Events, s.Fleet.Replica)
	}
	s.Store = g.storeStatus()
	g.mu.Lock()
	probes := map[string]ProbeStatus{}
	for name, p := range g.probes.byBackend {
		probes[name] = p.snapshot()
	}
	overrides := map[memberKey]bool{}
	for k := range g.overrides {
		overrides[k] = true
	}
	g.mu.Unlock()
	counts, firstByte := g.attemptCounts()
	for _, pc := range st.Config.Pools {
		ps := PoolStatus{Name: pc.Name, Aliases: pc.Aliases, Active: []string{}}
		if g.notes.tracker != nil {
			if set, since := g.notes.tracker.Active(pc.Name); !since.IsZero() {
				// An empty set too: no member is usable, since then.
				ps.Active, ps.ActiveSince = append(ps.Active, set...), since
				ps.ActiveSinceStart = g.notes.tracker.Unchanged(pc.Name)
			}
		}
		for _, m := range st.Pools[pc.Name].Members {
			b := m.Backend
			bc := st.BackendConfigs[b.Name]
			ms := MemberStatus{Backend: b.Name, Type: bc.Type, Region: b.Region, Model: m.Deployment,
				Priority: max(m.Priority, 1), Weight: max(m.Weight, 1), Overridden: overrides[memberKey{pc.Name, b.Name}],
				Drained: b.Drained(), Usable: b.Usable(now), ModelVersion: b.Model()}
			ms.Breaker.State = "disabled"
			if br := b.Breaker; br != nil {
				snap := br.Snapshot()
				ms.Breaker.State, ms.Breaker.Failures, ms.Breaker.Probing = snap.State.String(), snap.Failures, snap.Probing
				if snap.State == breaker.Open {
					// A trip adopted from its prober: its own end, as
					// on the replica that decided it.
					ms.Breaker.Until, _ = g.fleet.tripEnd(b.Name, snap.Until)
					ms.Breaker.LeftMS = max(ms.Breaker.Until.Sub(now).Milliseconds(), 0)
				}
			}
			if p, ok := probes[b.Name]; ok && !p.At.IsZero() {
				ms.Probe = &p // a prober that has not probed yet has nothing to say
			}
			c := counts[memberKey{pc.Name, b.Name}]
			ms.InFlight, ms.Attempts, ms.Errors, ms.FirstByte = b.InFlight(), c[0], c[1], firstByte[b.Name]
			if q, ok := b.Quota.(interface {
				Headroom(time.Time) (float64, bool)
			}); ok {
				if h, known := q.Headroom(now); known {
					ms.Headroom = &h
				}
			}
			ps.Members = append(ps.Members, ms)
		}
		s.Pools = append(s.Pools, ps)
	}
	return s
}
