package notify

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Clock tells the time. breaker.Clock and the test fake clock satisfy it.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Member is one pool member's state at an instant.
type Member struct {
	Backend  string
	Priority int // lower is preferred; the best tier is the lowest number
	// Usable is true when the member may take traffic: its breaker lets
	// calls through and no operator drained it.
	Usable bool
}

// TrackerSettings configure a Tracker. The zero value is valid: it tracks
// and decides with the defaults below but sends nothing (Notify is nil).
type TrackerSettings struct {
	// Clock is read by Run for its periodic Tick. Update, Failover and Tick
	// take the instant as an argument. Nil means the wall clock.
	Clock Clock
	// FlapWindow is how soon a return to the previous active set counts as
	// flapping, how long a flapping pool must stay unchanged to be settled,
	// and the least time between two flapping notifications. Default 2m.
	// Longer windows collapse more changes into one message but delay the
	// settled message by as much.
	FlapWindow time.Duration
	// StormThreshold is how many failovers within StormWindow a pool may
	// have before a storm notification: it is sent when the count exceeds
	// the threshold. Default 50. Negative disables storm notifications.
	StormThreshold int
	// StormWindow is the sliding window of the storm count. Default 5m.
	StormWindow time.Duration
	// StormFor, if set, gives a pool its own storm threshold and window; a
	// zero result falls back to StormThreshold or StormWindow. It is called
	// without any lock held when the tracker first sees the pool (Forget
	// the pool to have it called again); goroutines racing on a new pool
	// may call it more than once, so it must give consistent answers.
	StormFor func(pool string) (threshold int, window time.Duration)
	// Notify receives every notification, in the order the tracker decided
	// them, never with a lock held and never by two goroutines at once. It
	// runs on the goroutine of the Update, Failover, Tick or Send that made
	// the notification (or of a concurrent one), so it must not block:
	// [Dispatcher.Enqueue] fits. Nil means notifications are discarded.
	Notify func(Notification)
}

// Defaults for the zero TrackerSettings.
const (
	DefaultFlapWindow     = 2 * time.Minute
	DefaultStormThreshold = 50
	DefaultStormWindow    = 5 * time.Minute
)

func (s TrackerSettings) withDefaults() TrackerSettings {
	if s.Clock == nil {
		s.Clock = wallClock{}
	}
	if s.FlapWindow <= 0 {
		s.FlapWindow = DefaultFlapWindow
	}
	if s.StormThreshold == 0 {
		s.StormThreshold = DefaultStormThreshold
	}
	if s.StormWindow <= 0 {
		s.StormWindow = DefaultStormWindow
	}
	return s
}

// Tracker follows, per pool, which members take the traffic and turns
// changes into notifications, following the rules in the package
// documentation. It is safe for concurrent use; state is kept per pool, so
// pools do not contend with each other beyond a shared read lock.
type Tracker struct {
	s TrackerSettings

	mu    sync.RWMutex
	pools map[string]*poolState

	outMu    sync.Mutex
	out      []Notification
	flushing bool
}

// NewTracker returns a tracker with no pools.
func NewTracker(s TrackerSettings) *Tracker {
	return &Tracker{s: s.withDefaults(), pools: make(map[string]*poolState)}
}

// set is a set of backends, in the order they were given, with a key that
// does not depend on that order.
type set struct {
	names []string
	key   string
}

func newSet(names []string) set {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	return set{names: names, key: strings.Join(sorted, "\x00")}
}

func (a set) equal(b set) bool { return len(a.names) == len(b.names) && a.key == b.key }

// sets computes the active and primary sets of members.
func sets(members []Member) (active, primary set) {
	best, bestUsable := 0, 0
	anyMember, anyUsable := false, false
	for _, m := range members {
		if !anyMember || m.Priority < best {
			best, anyMember = m.Priority, true
		}
		if m.Usable && (!anyUsable || m.Priority < bestUsable) {
			bestUsable, anyUsable = m.Priority, true
		}
	}
	var a, p []string
	for _, m := range members {
		if anyMember && m.Priority == best && !slices.Contains(p, m.Backend) {
			p = append(p, m.Backend)
		}
		if anyUsable && m.Usable && m.Priority == bestUsable && !slices.Contains(a, m.Backend) {
			a = append(a, m.Backend)
		}
	}
	return newSet(a), newSet(p)
}

// poolState is one pool's state. Its fields are guarded by mu.
type poolState struct {
	mu sync.Mutex

	started bool
	primary set
	cur     set
	since   time.Time // when cur became active
	prev    set       // the set active before cur, if hasPrev
	hasPrev bool
	reason  string      // reason of the last change
	changes []time.Time // instants of changes within the flap window

	flapping     bool
	flapSince    time.Time // when the first change of the episode happened
	flapNotified time.Time // last flapping notification
	flapChanges  int       // changes in the episode
	flapSets     []set     // distinct sets seen in the episode

	stormThreshold int
	stormWindow    time.Duration
	storm          window
	stormArmed     bool
}

func (t *Tracker) pool(name string) *poolState {
	t.mu.RLock()
	p := t.pools[name]
	t.mu.RUnlock()
	if p != nil {
		return p
	}
	threshold, win := t.s.StormThreshold, t.s.StormWindow
	if t.s.StormFor != nil {
		if th, w := t.s.StormFor(name); th != 0 || w > 0 {
			if th != 0 {
				threshold = th
			}
			if w > 0 {
				win = w
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p = t.pools[name]; p == nil {
		p = &poolState{stormThreshold: threshold, stormWindow: win, storm: newWindow(win), stormArmed: true}
		t.pools[name] = p
	}
	return p
}

// Update tells the tracker a pool's current member states after something
// changed, with why (such as "429 quota: 5 failures in 30s, last 429",
// "manual: drained by admin" or "breaker closed: probe succeeded") and when.
// The first Update of a pool sets its baseline silently; later ones send
// what the package documentation describes. Calling it with unchanged
// states is cheap and sends nothing.
func (t *Tracker) Update(pool string, members []Member, reason string, at time.Time) {
	active, primary := sets(members)
	p := t.pool(pool)
	p.mu.Lock()
	p.update(t, pool, active, primary, reason, at)
	p.mu.Unlock()
	t.flush()
}

// update applies a new state. Requires p.mu held.
func (p *poolState) update(t *Tracker, pool string, active, primary set, reason string, at time.Time) {
	w := t.s.FlapWindow
	if !p.started {
		p.started, p.cur, p.since, p.primary = true, active, at, primary
		return
	}
	p.settle(t, pool, at) // what became due before this update, with the primary of then
	p.primary = primary
	if p.cur.equal(active) {
		return
	}
	p.changes = append(prune(p.changes, at.Add(-w)), at)
	from := p.cur
	switch {
	case p.flapping:
		p.flapChanges++
		if !slices.ContainsFunc(p.flapSets, active.equal) {
			p.flapSets = append(p.flapSets, active)
		}
		if at.Sub(p.flapNotified) >= w {
			p.flapNotified = at
			t.post(p.flappingNotification(pool, from, active, reason, at, w))
		}
	case p.hasPrev && p.prev.equal(active) && at.Sub(p.since) < w && len(p.changes) >= 3:
		// Back to the set before, a second time within the window
		// (A -> B -> A -> B). One round trip, an outage and its recovery,
		// is a failover and a failback, told as such.
		p.flapping = true
		p.flapSince = p.changes[0]
		p.flapNotified = at
		p.flapChanges = len(p.changes)
		p.flapSets = []set{active, from}
		t.post(p.flappingNotification(pool, from, active, reason, at, w))
	default:
		t.post(p.changeNotification(pool, from, active, reason, at))
	}
	p.prev, p.hasPrev = from, true
	p.cur, p.since, p.reason = active, at, reason
}

// settle ends flapping if the active set has been stable for the flap
// window at at. Requires p.mu held.
func (p *poolState) settle(t *Tracker, pool string, at time.Time) {
	w := t.s.FlapWindow
	if !p.flapping || at.Sub(p.since) < w {
		return
	}
	n := p.changeNotification(pool, p.prev, p.cur, p.reason, p.since.Add(w))
	n.Details = map[string]string{
		DetailSettled:       "true",
		DetailChanges:       itoa(p.flapChanges),
		DetailFlappingSince: stamp(p.flapSince),
		DetailPrimary:       setName(p.primary.names),
		DetailWindow:        shortDuration(w),
	}
	n.Text = composeText(n)
	t.post(n)
	p.flapping, p.flapSets, p.flapChanges = false, nil, 0
}

func (p *poolState) changeNotification(pool string, from, to set, reason string, at time.Time) Notification {
	n := Notification{
		Kind:    classify(from, to, p.primary),
		Pool:    pool,
		From:    from.names,
		To:      to.names,
		Reason:  reason,
		At:      at,
		Details: map[string]string{DetailPrimary: setName(p.primary.names)},
	}
	n.Text = composeText(n)
	return n
}

func (p *poolState) flappingNotification(pool string, from, to set, reason string, at time.Time, w time.Duration) Notification {
	n := Notification{
		Kind:   KindFlapping,
		Pool:   pool,
		From:   from.names,
		To:     to.names,
		Reason: reason,
		At:     at,
		Details: map[string]string{
			DetailChanges: itoa(len(p.changes)),
			DetailWindow:  shortDuration(w),
			DetailSets:    alternation(p.flapSets),
			DetailPrimary: setName(p.primary.names),
		},
	}
	n.Text = composeText(n)
	return n
}

// prune drops the instants at or before cutoff from the sorted ts.
func prune(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	if i == 0 {
		return ts
	}
	return append(ts[:0], ts[i:]...)
}

// Failover counts one request answered by another backend than a healthy
// pool would have used, for the storm notification. It is cheap enough to
// call for every request: no allocation once the pool is known.
func (t *Tracker) Failover(pool string, at time.Time) {
	p := t.pool(pool)
	p.mu.Lock()
	if p.stormThreshold < 0 {
		p.mu.Unlock()
		return
	}
	if !p.stormArmed && p.storm.count(at) < p.stormThreshold {
		p.stormArmed = true
	}
	c := p.storm.add(at)
	fire := p.stormArmed && c > p.stormThreshold
	if fire {
		p.stormArmed = false
		n := Notification{
			Kind:   KindStorm,
			Pool:   pool,
			From:   p.primary.names,
			To:     p.cur.names,
			Reason: "failover storm",
			At:     at,
			Details: map[string]string{
				DetailFailovers: itoa(c),
				DetailWindow:    shortDuration(p.stormWindow),
				DetailThreshold: itoa(p.stormThreshold),
				DetailPrimary:   setName(p.primary.names),
			},
		}
		n.Text = composeText(n)
		t.post(n)
	}
	p.mu.Unlock()
	if fire {
		t.flush()
	}
}

// Tick sends what has become due by at without an Update: the settled
// notification of a pool that stopped flapping. Call it periodically (Run
// does) so that a pool that settles, and so receives no more Updates, is
// reported.
func (t *Tracker) Tick(at time.Time) {
	t.mu.RLock()
	ps := make([]*poolState, 0, len(t.pools))
	names := make([]string, 0, len(t.pools))
	for name, p := range t.pools {
		ps = append(ps, p)
		names = append(names, name)
	}
	t.mu.RUnlock()
	for i, p := range ps {
		p.mu.Lock()
		if p.started {
			p.settle(t, names[i], at)
		}
		p.mu.Unlock()
	}
	t.flush()
}

// Run calls Tick with the Clock's time every interval (default 1s) until
// ctx ends. The interval bounds how late a settled notification is sent
// (its At is exact).
func (t *Tracker) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Second
	}
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t.Tick(t.s.Clock.Now())
		}
	}
}

// Active returns the pool's current active set, in the order its members
// were given to Update, and since when it has been active. It returns nil
// and the zero time for a pool never updated.
func (t *Tracker) Active(pool string) (backends []string, since time.Time) {
	t.mu.RLock()
	p := t.pools[pool]
	t.mu.RUnlock()
	if p == nil {
		return nil, time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		return nil, time.Time{}
	}
	return slices.Clone(p.cur.names), p.since
}

// Unchanged reports whether the pool's active set is still the one its
// first Update gave (its baseline): Active's since is then when the
// tracker began following the pool (the start, or the reload that added
// it), not when the set became active, which is unknown.
func (t *Tracker) Unchanged(pool string) bool {
	t.mu.RLock()
	p := t.pools[pool]
	t.mu.RUnlock()
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started && !p.hasPrev
}

// Forget drops a pool's state, for a pool removed from the configuration.
// The next Update of that name sets a new baseline silently.
func (t *Tracker) Forget(pool string) {
	t.mu.Lock()
	delete(t.pools, pool)
	t.mu.Unlock()
}

// Send passes an operator's notification (Kind "admin", or any other) to
// Notify in order with the tracker's own. An empty Text is composed from
// Kind, Pool, Reason and At; a zero At is the Clock's time.
func (t *Tracker) Send(n Notification) {
	if n.At.IsZero() {
		n.At = t.s.Clock.Now()
	}
	if n.Text == "" {
		n.Text = composeText(n)
	}
	t.post(n)
	t.flush()
}

// post queues n for Notify. It may be called with a pool's lock held: the
// lock order is pool, then outMu.
func (t *Tracker) post(n Notification) {
	if t.s.Notify == nil {
		return
	}
	t.outMu.Lock()
	t.out = append(t.out, n)
	t.outMu.Unlock()
}

// flush calls Notify for the queued notifications, outside every lock. If
// another goroutine is flushing, it will deliver ours too, in order.
func (t *Tracker) flush() {
	if t.s.Notify == nil {
		return
	}
	t.outMu.Lock()
	if t.flushing || len(t.out) == 0 {
		t.outMu.Unlock()
		return
	}
	t.flushing = true
	done := false
	defer func() {
		if !done { // Notify panicked: let the next caller flush
			t.outMu.Lock()
			t.flushing = false
			t.outMu.Unlock()
		}
	}()
	for {
		batch := t.out
		t.out = nil
		t.outMu.Unlock()
		for _, n := range batch {
			t.s.Notify(n)
		}
		t.outMu.Lock()
		if len(t.out) == 0 {
			t.flushing, done = false, true
			t.outMu.Unlock()
			return
		}
	}
}
