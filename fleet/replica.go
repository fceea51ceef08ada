package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
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
	started time.Time
	seq     atomic.Uint64

	mu        sync.Mutex
	probes    map[string]time.Time // backend -> end of the trip whose probe lease this replica holds
	elsewhere map[string]time.Time // backend -> until when another replica holds its trip's probe lease
	quota     map[string]*Message  // backend -> figures waiting to be published
	quotaAt   map[string]time.Time // backend -> when its figures were last published
	failovers map[string]int       // pool -> failovers not yet published
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
		quota: map[string]*Message{}, quotaAt: map[string]time.Time{}, failovers: map[string]int{}}
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
// its updates.
const downAfter = 3

// health records whether the store answered a call, logging and reporting
// changes: it is out after downAfter failures in a row.
func (r *Replica) health(ok bool, err error) { r.setHealth(ok, err, false) }

// setHealth is health; now marks the store out at once (a subscription
// that was lost).
func (r *Replica) setHealth(ok bool, err error, now bool) {
	if ok {
		r.fails.Store(0)
	} else if n := r.fails.Add(1); n < downAfter && !now {
		return
	}
	if r.up.Swap(ok) == ok {
		return
	}
	if ok {
		r.log.Info("fleet store is back: sharing state again", "replica", r.id)
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

// subscribe follows the fleet's messages, subscribing again whenever the
// subscription is lost, and reconciles with what the store keeps each
// time.
func (r *Replica) subscribe(ctx context.Context) {
	for ctx.Err() == nil {
		var ch <-chan []byte
		err := r.call(ctx, func(c context.Context) error {
			var err error
			ch, err = r.store.Subscribe(ctx) // lives past c: bounded by ctx
			return err
		})
		if err != nil {
			r.sleep(ctx, r.o.Heartbeat)
			continue
		}
		r.reconcile(ctx)
		r.joined.Store(true)
		for raw := range ch {
			r.handle(raw)
		}
		r.joined.Store(false)
		if ctx.Err() == nil {
			r.setHealth(false, errors.New("subscription lost"), true)
			r.sleep(ctx, r.o.Heartbeat)
		}
	}
}

// reconcile applies what the store keeps (trips in force, operator
// actions) and publishes this replica's own open trips, after a
// (re)subscription: what was missed while away.
func (r *Replica) reconcile(ctx context.Context) {
	var kept map[string][]byte
	if r.call(ctx, func(c context.Context) error {
		var err error
		kept, err = r.store.List(c, "")
		return err
	}) != nil {
		return
	}
	for k, v := range kept {
		switch {
		case strings.HasPrefix(k, keyTrip), strings.HasPrefix(k, keyAction):
			r.handle(v)
		}
	}
	// What this replica benched while the others could not hear it (or
	// that a store which lost its keys no longer holds) goes to them now.
	for _, name := range r.host.Backends() {
		br := r.host.Breaker(name)
		if br == nil {
			continue
		}
		if s := br.Snapshot(); s.State == breaker.Open && len(kept[keyTrip+name]) == 0 {
			r.Transition(breaker.Transition{Name: name, To: breaker.Open, At: r.clk.Now(), Until: s.Until, RetryAt: s.RetryAt,
				Throttled: s.Throttled, Class: s.Class, NoProbe: s.NoProbe, Kind: s.Kind,
				Cause: "benched while the fleet could not hear (" + name + ")"})
		}
	}
}

// beat renews the replica's heartbeat and its notification lease, and
// publishes the failovers it counted, every Heartbeat.
func (r *Replica) beat(ctx context.Context) {
	for {
		r.heartbeat(ctx)
		if !r.sleep(ctx, r.o.Heartbeat) {
			return
		}
	}
}

func (r *Replica) heartbeat(ctx context.Context) {
	now := r.clk.Now()
	hb, _ := json.Marshal(ReplicaStatus{ID: r.id, Version: r.o.Version, Started: r.started, Seen: now, InFlight: r.host.InFlight()})
	r.call(ctx, func(c context.Context) error { return r.store.Put(c, keyReplica+r.id, hb, replicaTTL) })
	var lead bool
	if r.call(ctx, func(c context.Context) error {
		var err error
		lead, err = r.store.Acquire(c, keyLeader, r.id, leaderTTL)
		return err
	}) == nil {
		r.leader.Store(lead)
	}
	r.mu.Lock()
	counts := r.failovers
	r.failovers = map[string]int{}
	r.mu.Unlock()
	for pool, n := range counts {
		r.send(Message{Kind: kindFailovers, Pool: pool, N: n, At: now})
	}
	r.flushQuota(now, true)
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
			if err := r.host.Apply(*m.Action); err != nil {
				r.log.Warn("fleet: an operator action from another replica could not be applied", "replica", m.Replica, "action", m.Action.Kind, "error", err)
			}
		}
	case kindFailovers:
		r.host.Failovers(m.Pool, m.N, m.At)
	}
}

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
	br.Adopt(breaker.Snapshot{State: breaker.Open, Until: until, RetryAt: m.RetryAt, Throttled: m.Throttled, Class: m.Class},
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
			Throttled: t.Throttled, Class: t.Class, Cause: t.Cause, CauseKind: t.Kind, NoProbe: t.NoProbe}
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
			br.Adopt(breaker.Snapshot{State: breaker.Open, Until: m.Until.Add(r.o.ProbeGrace), RetryAt: m.RetryAt, Throttled: m.Throttled, Class: m.Class},
				m.CauseKind, "fleet: another replica probes "+m.Backend)
		}
	}
	raw, _ := json.Marshal(m)
	if err := r.store.Put(c, keyTrip+m.Backend, raw, ttl); err != nil {
		return err
	}
	return r.store.Publish(c, raw)
}

// Failure counts a failure of backend across the fleet; when the fleet's
// count within the breaker's window reaches its threshold and the local
// breaker is still closed, it opens it (and so the fleet's).
func (r *Replica) Failure(backend string, o breaker.Outcome, _ time.Time) {
	r.countFailure(backend, o, fmt.Sprintf("%s:%d", r.id, r.seq.Add(1)), 0)
}

// failureTries bounds the calls that count one failure: a count that timed
// out may have been recorded without this replica hearing the total, and
// the failure that reached the threshold would then open nothing. Counting
// is idempotent by id, so a second call only reads the total again.
const failureTries = 2

func (r *Replica) countFailure(backend string, o breaker.Outcome, id string, try int) {
	r.enqueue(func(c context.Context) error {
		br := r.host.Breaker(backend)
		if br == nil {
			return nil
		}
		s := br.Settings()
		// Counted at the time it reaches the store, not when it happened:
		// each count then sees every failure counted before it, whatever
		// the replicas' queues delayed (the last of five sees five).
		n, err := r.store.Count(c, keyFail+backend, id, r.clk.Now(), s.Window)
		if err != nil {
			if try+1 < failureTries {
				r.countFailure(backend, o, id, try+1)
			}
			return err
		}
		if n >= s.Failures && br.Snapshot().State == breaker.Closed {
			cause := fmt.Sprintf("%d failures across the fleet in %s, last %s", n, s.Window, o.Cause)
			br.Force(breaker.Open, time.Time{}, o.Kind, cause) // a transition of this replica's: published
		}
		return nil
	})
}

// Observed publishes an answer's quota figures: a refusal at once, other
// figures at most every 200 ms per backend (the latest).
func (r *Replica) Observed(backend string, now, sent time.Time, status int, h http.Header) {
	m := &Message{Kind: kindQuota, At: now, Backend: backend, Sent: sent, Status: status, Header: rateHeaders(h)}
	if len(m.Header) == 0 {
		return
	}
	r.mu.Lock()
	r.quota[backend] = m
	r.mu.Unlock()
	if status == http.StatusTooManyRequests {
		r.flushQuota(now, true)
		return
	}
	r.flushQuota(now, false)
}

// flushQuota publishes the figures waiting, those of backends last
// published quotaEvery ago or all.
func (r *Replica) flushQuota(now time.Time, all bool) {
	r.mu.Lock()
	var out []Message
	for b, m := range r.quota {
		if all || now.Sub(r.quotaAt[b]) >= quotaEvery {
			out = append(out, *m)
			delete(r.quota, b)
			r.quotaAt[b] = now
		}
	}
	r.mu.Unlock()
	for _, m := range out {
		r.send(m)
	}
}

// rateHeaders are the headers of h a quota reads: rate limits and
// Retry-After, nothing else.
func rateHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		lk := strings.ToLower(k)
		if len(v) > 0 && (strings.HasPrefix(lk, "x-ratelimit-") || strings.HasPrefix(lk, "anthropic-ratelimit-") || lk == "retry-after" || lk == "retry-after-ms") {
			out[k] = v[0]
		}
	}
	return out
}

// Failover counts a failover in pool, published with the next heartbeat.
func (r *Replica) Failover(pool string) {
	r.mu.Lock()
	r.failovers[pool]++
	r.mu.Unlock()
}

// Action is an operator's change to the fleet.
type Action struct {
	Kind     string    `json:"kind"` // ActionDrain and the other Action* constants
	Backend  string    `json:"backend,omitempty"`
	Pool     string    `json:"pool,omitempty"`
	Until    time.Time `json:"until,omitzero"` // ActionForceOpen: when it ends (zero: the trip)
	Priority int       `json:"priority,omitempty"`
	Weight   int       `json:"weight,omitempty"`
	// Replica is where it was taken; By who took it ("admin", a console
	// viewer's name), when known.
	Replica string `json:"replica,omitempty"`
	By      string `json:"by,omitempty"`
}

// Action kinds.
const (
	ActionDrain       = "drain"
	ActionRestore     = "restore"
	ActionForceOpen   = "breaker_open"
	ActionForceClosed = "breaker_close"
	ActionSetMember   = "set_member"
	ActionResetMember = "reset_member"
)

// Act publishes an operator action taken on this replica, and keeps it
// (or removes what it undoes) so that a replica that starts later, or
// comes back, applies it too.
func (r *Replica) Act(a Action) {
	a.Replica = r.id
	m := Message{Kind: kindAction, Replica: r.id, At: r.clk.Now(), Action: &a}
	raw, _ := json.Marshal(m)
	key, keep, ttl := actionKey(a, m.At)
	r.enqueue(func(c context.Context) error {
		var err error
		if keep {
			err = r.store.Put(c, key, raw, ttl)
		} else {
			err = r.store.Delete(c, key)
		}
		if err != nil {
			return err
		}
		return r.store.Publish(c, raw)
	})
}

// actionKey is where an action is kept, whether it is kept (an undoing
// action removes its counterpart) and for how long.
func actionKey(a Action, now time.Time) (key string, keep bool, ttl time.Duration) {
	switch a.Kind {
	case ActionDrain, ActionRestore:
		return keyAction + "drain/" + a.Backend, a.Kind == ActionDrain, 0
	case ActionForceOpen, ActionForceClosed:
		if a.Kind == ActionForceOpen && !a.Until.IsZero() {
			ttl = max(a.Until.Sub(now), time.Millisecond)
		}
		return keyAction + "breaker/" + a.Backend, a.Kind == ActionForceOpen, ttl
	default:
		return keyAction + "member/" + a.Pool + "/" + a.Backend, a.Kind == ActionSetMember, 0
	}
}

// Event is an entry of the fleet's history.
type Event struct {
	At      time.Time `json:"at"`
	Replica string    `json:"replica"`
	Kind    string    `json:"kind"`
	Pool    string    `json:"pool,omitempty"`
	Backend string    `json:"backend,omitempty"`
	Detail  string    `json:"detail"`
}

// Record appends an event that happened on this replica to the fleet's
// history.
func (r *Replica) Record(e Event) {
	e.Replica = r.id
	raw, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.enqueue(func(c context.Context) error { return r.store.Append(c, logEvents, raw, eventLogSize) })
}

// Events returns up to n of the fleet's newest events, oldest first, or
// an error when the store does not answer in time.
func (r *Replica) Events(ctx context.Context, n int) ([]Event, error) {
	var raw [][]byte
	if err := r.call(ctx, func(c context.Context) error {
		var err error
		raw, err = r.store.Tail(c, logEvents, n)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(raw))
	for _, b := range raw {
		var e Event
		if json.Unmarshal(b, &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// ReplicaStatus is one replica as its heartbeat shows it.
type ReplicaStatus struct {
	ID       string         `json:"id"`
	Version  string         `json:"version,omitempty"`
	Started  time.Time      `json:"started"`
	Seen     time.Time      `json:"last_seen"`
	InFlight map[string]int `json:"in_flight,omitempty"`
}

// Replicas returns the replicas whose heartbeat is recent, or an error
// when the store does not answer in time.
func (r *Replica) Replicas(ctx context.Context) ([]ReplicaStatus, error) {
	var kept map[string][]byte
	if err := r.call(ctx, func(c context.Context) error {
		var err error
		kept, err = r.store.List(c, keyReplica)
		return err
	}); err != nil {
		return nil, err
	}
	var out []ReplicaStatus
	for _, v := range kept {
		var s ReplicaStatus
		if json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out, nil
}
