package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/route"
)

// Defaults of a Replica's settings.
const (
	// DefaultTimeout bounds each call to the store.
	DefaultTimeout = 100 * time.Millisecond
	// DefaultProbeGrace is how long past a trip's end a replica that does
	// not hold the probe lease waits for the prober's verdict before it
	// probes itself (the prober may have died).
	DefaultProbeGrace = 10 * time.Second
	// DefaultHeartbeat is how often a replica says it is alive, renews
	// its leases and, while the store is out, tries it again.
	DefaultHeartbeat = time.Second
	// leaderTTL is how long the notification lease lasts without
	// renewal: another replica takes over within this after its holder
	// dies.
	leaderTTL = 5 * time.Second
	// replicaTTL is how long a replica's heartbeat is shown after its
	// last.
	replicaTTL = 10 * time.Second
	// eventLogSize is how many events the fleet's history keeps.
	eventLogSize = 1000
	// queueSize bounds the work waiting for the store; past it, work is
	// dropped (and counted) rather than held.
	queueSize = 4096
	// quotaEvery is the most often one backend's quota figures are
	// published, refusals aside (those go at once).
	quotaEvery = 200 * time.Millisecond
)

// Keys and logs in the store.
const (
	keyTrip    = "trip/"    // + backend: the open decision in force
	keyProbe   = "probe/"   // + backend: the probe lease of a trip
	keyFail    = "fail/"    // + backend: the fleet's failures, a window
	keyAction  = "action/"  // + what: an operator action in force
	keyUndone  = "undone/"  // + what: the action that undid it, for a while
	keyReplica = "replica/" // + id: a replica's heartbeat
	keyLeader  = "leader/notify"
	logEvents  = "events"
)

// Host is the gateway a Replica acts for: where what other replicas
// decided is applied. Its methods must be safe for concurrent use and must
// not call back into the Replica synchronously.
type Host interface {
	// Breaker is backend's breaker, nil when it has none or is unknown.
	Breaker(backend string) *breaker.Breaker
	// Quota is backend's quota, nil when it is not tracked.
	Quota(backend string) *route.LocalQuota
	// Apply performs an operator action taken on another replica, or kept
	// in the store, without publishing it again.
	Apply(a Action) error
	// Failovers adds n failovers counted by other replicas in pool, for
	// the storm threshold.
	Failovers(pool string, n int, at time.Time)
	// InFlight is the replica's requests in flight per backend, for the
	// fleet's status.
	InFlight() map[string]int
	// Backends names the backends in force.
	Backends() []string
}

// Options configure a Replica.
type Options struct {
	// Store is what the fleet shares. Required.
	Store Store
	// Host is the gateway the replica acts for. Required.
	Host Host
	// ID names the replica in the fleet; default the host name, the
	// process id and a random suffix.
	ID string
	// Version is shown in the fleet's status.
	Version string
	// Clock is read for the times published and runs the replica's
	// timers; nil means the wall clock.
	Clock clock.Clock
	// Logger gets the store's outages and returns; nil discards.
	Logger *slog.Logger
	// Timeout bounds each call to the store (DefaultTimeout).
	Timeout time.Duration
	// ProbeGrace is DefaultProbeGrace when zero.
	ProbeGrace time.Duration
	// Heartbeat is DefaultHeartbeat when zero.
	Heartbeat time.Duration
	// OnHealth, if set, is called when the store goes out (false) and
	// comes back (true), for metrics.
	OnHealth func(up bool)
	// OnDrop, if set, is called for work dropped because the store is
	// not keeping up, for metrics.
	OnDrop func()
}

// Replica is this gateway's membership of a fleet: it publishes what the
// gateway decides (breaker trips, quota figures, operator actions,
// failover counts, events) and applies what the others publish. Every
// call to the store runs on the replica's own goroutines, bounded by
// Options.Timeout; a request never waits for one.
type Replica struct {
	o     Options
	store Store
	host  Host
	id    string
	clk   clock.Clock
	log   *slog.Logger

	work    chan func(context.Context) error
	up      atomic.Bool  // the store answered its last call
	leader  atomic.Bool  // this replica holds the notification lease
	joined  atomic.Bool  // subscribed to the fleet's messages, and reconciled
	fails   atomic.Int32 // calls to the store failed in a row
	oks     atomic.Int32 // calls to the store answered in a row
	started time.Time
	seq     atomic.Uint64

	mu        sync.Mutex
	probes    map[string]time.Time           // backend -> end of the trip whose probe lease this replica holds
	elsewhere map[string]time.Time           // backend -> until when another replica holds its trip's probe lease
	quota     map[string]*Message            // backend -> figures waiting to be published
	quotaAt   map[string]time.Time           // backend -> when its figures were last published
	failovers map[string]int                 // pool -> failovers not yet published
	pending   map[string]Message             // action subject -> the action taken here, not yet in the store
	acted     map[string]time.Time           // action subject -> when the action in force here was taken
	unheard   map[string]map[string]*unheard // backend -> failure id -> a failure whose count was not answered
}

// New returns a Replica; Run starts it.
func New(o Options) (*Replica, error) {
	if o.Store == nil || o.Host == nil {
		return nil, errors.New("fleet: a replica needs a store and a host")
	}
	if o.ID == "" {
		o.ID = defaultID()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ProbeGrace <= 0 {
		o.ProbeGrace = DefaultProbeGrace
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Replica{o: o, store: o.Store, host: o.Host, id: o.ID, clk: clock.Or(o.Clock), log: log,
		work: make(chan func(context.Context) error, queueSize), probes: map[string]time.Time{},
		quota: map[string]*Message{}, quotaAt: map[string]time.Time{}, failovers: map[string]int{},
		pending: map[string]Message{}, acted: map[string]time.Time{}, unheard: map[string]map[string]*unheard{}}
	r.started = r.clk.Now()
	r.up.Store(true) // until a call fails; the first heartbeat settles the lease
	return r, nil
}

func defaultID() string {
	host, _ := os.Hostname()
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ID is the replica's name in the fleet.
func (r *Replica) ID() string { return r.id }

// Up reports whether the store answered the replica's last call.
func (r *Replica) Up() bool { return r.up.Load() }

// Joined reports whether the replica hears the fleet: it is subscribed
// to its messages and has applied what the store keeps.
func (r *Replica) Joined() bool { return r.joined.Load() }

// Leader reports whether this replica sends the fleet's notifications:
// it holds the notification lease, or the store is out and it carries on
// alone.
func (r *Replica) Leader() bool { return r.leader.Load() || !r.up.Load() }

// Run runs the replica until ctx ends: the worker that talks to the store,
// the subscription, and the heartbeat.
func (r *Replica) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { r.worker(ctx) })
	wg.Go(func() { r.subscribe(ctx) })
	wg.Go(func() { r.beat(ctx) })
	wg.Wait()
}
