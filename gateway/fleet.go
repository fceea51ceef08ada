package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/cache/rediscache"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// joinFleet makes the gateway a replica of the fleet the configuration's
// state block (or Options.Store) names, before its backends are built
// (their quotas and breakers report to it); without either it keeps
// everything in the process. fleetMember.run starts it once the backends
// are in force.
func (g *Gateway) joinFleet(cfg *config.Config) error {
	store := g.opts.Store
	sc := cfg.State
	if store == nil && sc.Redis != nil {
		// A call's reads and writes are bounded by its timeout too.
		s, err := redisstore.New(redisstore.Options{URL: sc.Redis.URL.Value(), Cluster: sc.Redis.Cluster, Prefix: sc.Redis.Prefix,
			IOTimeout: sc.Redis.Timeout.D()})
		if err != nil {
			return fmt.Errorf("state.redis: %w", err)
		}
		store = s
	}
	if store == nil {
		return nil
	}
	var timeout time.Duration
	if sc.Redis != nil {
		timeout = sc.Redis.Timeout.D()
	}
	r, err := fleet.New(fleet.Options{
		Store: store, Host: fleetHost{g}, ID: sc.Replica, Version: g.opts.Version, Clock: g.opts.Clock,
		Logger: g.Logger, Timeout: timeout, Heartbeat: g.opts.FleetHeartbeat,
		OnHealth: g.Metrics.FleetStore,
		OnDrop:   g.Metrics.FleetDropped,
	})
	if err != nil {
		store.Close()
		return err
	}
	g.fleet = &fleetMember{Replica: r, store: store, log: g.Logger}
	g.shareCache(sc) // cache.go
	g.Metrics.FleetStore(true)
	return nil
}

// fleetMember is the gateway's membership of a fleet: its replica, the
// store they share, and the end of the replica's work.
type fleetMember struct {
	*fleet.Replica
	store fleet.Store
	log   *slog.Logger // nil: none
	// done is closed when the replica's work (Run) has ended; nil until
	// it starts.
	done chan struct{}
	// cache is the response cache in store (Redis), which the replicas
	// share; nil when store is not Redis. responses is its state for the
	// engines (engine.Deps.Cache).
	cache     *rediscache.Store
	responses *proxy.ResponseCache
}

// What the gateway tells its fleet. A gateway alone has a nil
// *fleetMember, on which each of these does what a fleet of one would:
// nothing to share, every notification its own.

// run starts the replica's work with the store, until ctx ends.
func (f *fleetMember) run(ctx context.Context) {
	if f == nil {
		return
	}
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		f.Run(ctx)
	}()
}

// stop leaves the fleet: waits for the replica's work to end (its
// context must be done), and closes the store's connections. Operator
// actions taken here while the store was out, and still waiting for it,
// never reach the other replicas: that is logged as an error, not lost
// silently.
func (f *fleetMember) stop() {
	if f == nil {
		return
	}
	if f.done != nil {
		<-f.done
	}
	if n := f.PendingActions(); n > 0 && f.log != nil {
		f.log.Error("fleet: operator actions taken on this replica while the shared store was out never reached the other replicas: they are lost as it stops; take them again on a running replica",
			"replica", f.ID(), "actions", n)
	}
	if f.cache != nil {
		f.cache.Close() // its writes in flight, before their connections close
	}
	f.store.Close()
}

// act hands an operator's action to the other replicas.
func (f *fleetMember) act(a fleet.Action) {
	if f != nil {
		f.Act(a)
	}
}

// transition publishes a breaker transition decided here.
func (f *fleetMember) transition(t breaker.Transition) {
	if f != nil {
		f.Transition(t)
	}
}

// failover counts a failover of pool for the fleet's storm alert.
func (f *fleetMember) failover(pool string) {
	if f != nil {
		f.Failover(pool)
	}
}

// record adds an event that happened here to the fleet's history.
func (f *fleetMember) record(e Event) {
	if f != nil {
		f.Record(fleet.Event{At: e.At, Kind: e.Kind, Pool: e.Pool, Backend: e.Backend, Detail: e.Detail})
	}
}

// sends reports whether this replica sends n: the changes of a pool's
// active set are sent by the replica that holds the notification lease;
// an operator's action and a budget's alert by the replica where they
// happened (a budget's after its own lease, see leaseOnce).
func (f *fleetMember) sends(n notify.Notification) bool {
	return f == nil || n.Kind == notify.KindAdmin || n.Kind == notify.KindBudget || f.Leader()
}

// tripEnd is when the trip that holds backend's breaker open until until
// ends: until itself, except for a trip adopted from the replica that
// probes it, which this one holds open past its end (by the probe grace)
// while it waits for that replica's verdict. waits tells which.
func (f *fleetMember) tripEnd(backend string, until time.Time) (end time.Time, waits bool) {
	if f != nil {
		if end, ok := f.AdoptedEnd(backend, until); ok {
			return end, true
		}
	}
	return until, false
}

// probedElsewhere reports whether another replica probes backend's trip.
func (f *fleetMember) probedElsewhere(backend string) bool {
	return f != nil && f.ProbedElsewhere(backend)
}

// leaseOnce reports whether this replica is the one to act once for the
// fleet on key (it took the lease, for ttl); true when alone, and when
// the store does not answer in time (better twice than never).
func (f *fleetMember) leaseOnce(ctx context.Context, key string, ttl time.Duration) bool {
	if f == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	mine, err := f.store.Acquire(ctx, key, f.ID(), ttl)
	return err != nil || mine
}

// fleetHost is the gateway as the fleet's replica sees it.
type fleetHost struct{ g *Gateway }

func (h fleetHost) Breaker(backend string) *breaker.Breaker {
	if b := h.g.Backend(backend); b != nil {
		br, _ := b.Breaker.(*breaker.Breaker)
		return br
	}
	return nil
}

func (h fleetHost) Quota(backend string) *route.LocalQuota {
	if b := h.g.Backend(backend); b != nil {
		if q, ok := b.Quota.(*fleetQuota); ok {
			return q.LocalQuota
		}
	}
	return nil
}

func (h fleetHost) Apply(a fleet.Action) error { return h.g.applyAs(a, a.Replica, a.By) }

func (h fleetHost) Failovers(pool string, n int, at time.Time) {
	if h.g.notes.tracker != nil {
		for range min(n, 10000) {
			h.g.notes.tracker.Failover(pool, at)
		}
	}
}

func (h fleetHost) Backends() []string {
	var out []string
	if st := h.g.state.Load(); st != nil {
		for name := range st.Backends {
			out = append(out, name)
		}
	}
	return out
}

func (h fleetHost) InFlight() map[string]int {
	out := map[string]int{}
	if st := h.g.state.Load(); st != nil {
		for name, b := range st.Backends {
			if n := b.InFlight(); n > 0 {
				out[name] = int(n)
			}
		}
	}
	return out
}

// fleetQuota is a backend's quota whose figures the fleet shares: what
// this replica hears is published, what the others hear is observed as
// if heard here (LocalQuota.Observe, from the fleet's messages).
type fleetQuota struct {
	*route.LocalQuota
	backend string
	fleet   *fleet.Replica
}

// Observe implements route.Quota.
func (q *fleetQuota) Observe(now, sent time.Time, status int, h http.Header) {
	q.LocalQuota.Observe(now, sent, status, h)
	q.fleet.Observed(q.backend, now, sent, status, h)
}

// addEvent records an event in the history; shared, with a fleet, adds
// it to the fleet's too (an event that happened here, not one applied
// from another replica).
func (g *Gateway) addEvent(e Event, shared bool) {
	g.notes.events.add(e)
	if shared {
		g.fleet.record(e)
	}
}

// FleetStatus is the fleet as the admin API shows it.
type FleetStatus struct {
	// Replica is this replica's name; StoreUp whether the shared store
	// answered its last call (when not, every replica decides alone).
	Replica string `json:"replica"`
	StoreUp bool   `json:"store_up"`
	// Joined is true while this replica hears the other replicas (it is
	// subscribed to their messages).
	Joined bool `json:"joined"`
	// Notifier is true when this replica sends the fleet's
	// notifications.
	Notifier bool `json:"notifier"`
	// PendingActions counts the operator actions taken here that have
	// not reached the store yet (taken while it was out): they hold on
	// this replica only until it answers again, and then go to the
	// fleet unless an action on the same thing taken elsewhere since is
	// newer.
	PendingActions int `json:"pending_actions"`
	// Replicas are those whose heartbeat is recent.
	Replicas []fleet.ReplicaStatus `json:"replicas"`
}

// fleetStatus is the fleet's part of Status, and the fleet's events; nil
// without a fleet, and the events nil when the store does not answer.
func (g *Gateway) fleetStatus() (*FleetStatus, []Event) {
	if g.fleet == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fs := &FleetStatus{Replica: g.fleet.ID(), Notifier: g.fleet.Leader(), Joined: g.fleet.Joined()}
	fs.Replicas, _ = g.fleet.Replicas(ctx)
	evs, err := g.fleet.Events(ctx, 200)
	fs.StoreUp = g.fleet.Up()
	fs.PendingActions = g.fleet.PendingActions()
	if err != nil {
		return fs, nil
	}
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, Event{At: e.At, Kind: e.Kind, Pool: e.Pool, Backend: e.Backend, Detail: e.Detail, Replica: e.Replica})
	}
	return fs, out
}

// mergeEvents is the fleet's history followed by this replica's own
// events newer than its last entry: those still on their way to the store,
// and those kept here only (breaker states adopted from the others).
func mergeEvents(fleetEvs, local []Event, replica string) []Event {
	var last time.Time
	if n := len(fleetEvs); n > 0 {
		last = fleetEvs[n-1].At
	}
	for _, e := range local {
		if e.At.After(last) {
			e.Replica = replica
			fleetEvs = append(fleetEvs, e)
		}
	}
	return fleetEvs
}
