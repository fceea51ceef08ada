package gateway

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/route"
)

// ProbeStatus is a backend's latest health probe, for the admin API.
type ProbeStatus struct {
	Kind    string        `json:"kind"`
	At      time.Time     `json:"at"`
	Up      bool          `json:"up"`
	Result  string        `json:"result"`
	Error   string        `json:"error,omitempty"`
	Latency time.Duration `json:"latency_ns"`
	// Failures is the number of failed probes in a row.
	Failures int `json:"failures"`
}

// errProbeTimeout ends a probe that took longer than its timeout.
var errProbeTimeout = errors.New("switchover: probe timed out")

// prober probes one backend on an interval until stopped.
type prober struct {
	g       *Gateway
	backend *route.Backend
	cfg     config.Probe
	model   string
	cancel  context.CancelFunc
	done    chan struct{}
	// wake, of one slot, wakes run before its time (wakeProbers).
	wake chan struct{}

	mu       sync.Mutex
	status   ProbeStatus
	openedBy bool // the probe forced the breaker open
	recovery bool // the last probe was a recovery probe (recover)
	// pools are the pools of poolsOf (the engine they were read from)
	// that have the backend as a member (awaited).
	pools   []*route.Pool
	poolsOf *engine.Engine
}

// emptyPoolProbeEvery is how often a benched backend is probed while a
// pool it is a member of is short of members (awaited): that pool's
// callers are refused, or their failures relayed, until one comes back,
// so a second of its recovery unseen costs that pool's calls, where
// recovery_interval (and twice that after a failed probe) is for a
// backend whose pool still has others to call.
const emptyPoolProbeEvery = time.Second

// syncProbes starts probes for backends that have one configured and stops
// those whose backend or probe settings changed. Requires g.mu held (or no
// other user of g yet).
func (g *Gateway) syncProbes(st *engine.Engine) {
	want := map[string]bool{}
	for _, bc := range st.Config.Backends {
		if bc.Probe == nil {
			continue
		}
		want[bc.Name] = true
		b := st.Backends[bc.Name]
		if p, ok := g.probes.byBackend[bc.Name]; ok && p.backend == b && reflect.DeepEqual(p.cfg, *bc.Probe) {
			continue
		}
		if p, ok := g.probes.byBackend[bc.Name]; ok {
			p.stop()
		}
		p := &prober{g: g, backend: b, cfg: *bc.Probe, model: probeModel(st.Config, bc.Name), done: make(chan struct{}), wake: make(chan struct{}, 1)}
		var ctx context.Context
		ctx, p.cancel = context.WithCancel(g.life.bg)
		g.probes.byBackend[bc.Name] = p
		g.probes.wake.Store(bc.Name, p.wake)
		go p.run(ctx)
	}
	for name, p := range g.probes.byBackend {
		if !want[name] {
			p.stop()
			delete(g.probes.byBackend, name)
			g.probes.wake.Delete(name)
		}
	}
}

// wakeProbers wakes the probers of the members of the pool named (the
// engine found it short of members: route.EventShort), so that a benched
// member is probed now, as its pool waits on it (notYet), rather than at
// its prober's next round. It never blocks: a prober already woken, or
// probing, is left as it is.
func (g *Gateway) wakeProbers(pool string) {
	eng := g.state.Load()
	if eng == nil {
		return
	}
	pl := eng.Pools[pool]
	if pl == nil {
		return
	}
	for _, m := range pl.Members {
		if ch, ok := g.probes.wake.Load(m.Backend.Name); ok {
			select {
			case ch.(chan struct{}) <- struct{}{}:
			default:
			}
		}
	}
}

// probeModel is the model a chat probe asks a backend for: its model in the
// first pool that has it.
func probeModel(cfg *config.Config, backend string) string {
	for _, p := range cfg.Pools {
		for _, m := range p.Members {
			if m.Backend == backend {
				if m.Model != "" {
					return m.Model
				}
				return p.Name
			}
		}
	}
	return ""
}

func (p *prober) stop() {
	p.cancel()
	<-p.done
}

// run probes until ctx ends. It wakes every recovery_interval: while the
// backend's breaker is open for a failure that health checks may end (not
// for quota, whose Retry-After says when it returns, not by an operator,
// not for a brownout unless a pool of it is short) it probes, and enough
// passing probes end the trip (see breaker.Breaker.Checked), so failback
// waits neither for the trip nor for a lucky request; while the backend
// is healthy it probes every
// interval, when one is set. The first recovery probe of a trip waits
// recovery_interval from its start (the failure that opened it is
// fresh), and after a failed one the next waits twice as long, so a long
// outage costs a probe every 10 s rather than every 5 (each is a call
// the region counts), except while a pool of the backend is short of
// members (awaited): then it is probed every emptyPoolProbeEvery, and a
// benched backend wakes its prober that often to see whether that has
// come to pass, and at once when the engine finds a pool of it short
// (wakeProbers). Waits run on the gateway's clock.
func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	clk := clock.Or(p.g.opts.Clock)
	if p.cfg.Interval > 0 {
		p.once(ctx)
	}
	d := p.wait()
	for {
		if p.benched() {
			d = min(d, emptyPoolProbeEvery)
		}
		wake := make(chan struct{})
		t := clk.AfterFunc(d, func() { close(wake) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-p.wake:
			t.Stop()
		}
		if d = p.notYet(); d > 0 {
			continue
		}
		p.tick(ctx)
		d = p.wait()
	}
}

// notYet is how long until the next recovery probe of the trip in force
// is due: the first recovery_interval after the breaker opened, the next
// as wait says after the last; either emptyPoolProbeEvery when a pool of
// the backend waits on it (awaited), unless its last probe was refused
// with a 4xx. Zero when it is due or there is nothing to probe.
func (p *prober) notYet() time.Duration {
	br := p.backend.Breaker
	if br == nil {
		return 0
	}
	s := br.Snapshot()
	if !s.Recoverable() && !s.Brownout() {
		return 0
	}
	awaited := p.awaited()
	if !s.Recoverable() && !awaited {
		return 0 // a brownout is probed only while a pool waits on it
	}
	ref, every := s.Since, p.cfg.RecoveryInterval.D()
	last := p.snapshot()
	if last.At.After(s.Since) {
		ref, every = last.At, p.wait()
	}
	if every > emptyPoolProbeEvery && last.Result != "4xx" && awaited {
		every = emptyPoolProbeEvery
	}
	return max(ref.Add(every).Sub(p.g.now()), 0)
}

// benched reports whether the backend's breaker is open for a trip that
// recovery probes may end, or a brownout's, which they end while a pool
// of the backend is short.
func (p *prober) benched() bool {
	if p.backend.Breaker == nil {
		return false
	}
	s := p.backend.Breaker.Snapshot()
	return s.Recoverable() || s.Brownout()
}

// awaited reports whether callers wait on the backend's recovery: a pool
// it is a member of is short of members (route.Pool.Short: none would
// take a call, each that would is under a health check, or a request of
// it just found no member to retry on), and so are the pools it falls
// back to.
func (p *prober) awaited() bool {
	eng := p.g.state.Load()
	if eng == nil {
		return false
	}
	p.mu.Lock()
	if p.poolsOf != eng {
		p.pools, p.poolsOf = poolsWith(eng, p.backend), eng
	}
	pools := p.pools
	p.mu.Unlock()
	now := p.g.now()
	for _, pl := range pools {
		if !servable(pl, now) {
			return true
		}
	}
	return false
}

// poolsWith is the pools of eng that have b as a member, each once (a
// pool is also listed under its aliases).
func poolsWith(eng *engine.Engine, b *route.Backend) []*route.Pool {
	seen := map[*route.Pool]bool{}
	var out []*route.Pool
	for _, pl := range eng.Pools {
		if seen[pl] {
			continue
		}
		seen[pl] = true
		for _, m := range pl.Members {
			if m.Backend == b {
				out = append(out, pl)
				break
			}
		}
	}
	return out
}

// maxFallbackHops bounds the walk along a pool's fallbacks.
const maxFallbackHops = 8

// servable reports whether pl, or a pool it falls back to, is not short
// of members at now (route.Pool.Short).
func servable(pl *route.Pool, now time.Time) bool {
	for hops := 0; pl != nil && hops < maxFallbackHops; hops++ {
		if !pl.Short(now) {
			return true
		}
		pl = pl.Fallback
	}
	return false
}

// misconfiguredProbeEvery is how often a backend whose last probe was
// refused with a 4xx (a revoked key, a deleted deployment) is probed
// again: it will not heal itself within seconds, and each probe is an
// upstream call.
const misconfiguredProbeEvery = time.Minute

// wait is how long until the next wake-up: recovery_interval; twice that
// after a failed recovery probe of a trip still in force;
// misconfiguredProbeEvery after a probe the backend refused with a 4xx.
func (p *prober) wait() time.Duration {
	d := p.cfg.RecoveryInterval.D()
	s := p.snapshot()
	switch {
	case !s.Up && s.Result == "4xx":
		d = max(d, misconfiguredProbeEvery)
	case !s.Up && p.recovering() && p.backend.Breaker.Snapshot().State != breaker.Closed:
		d *= 2
	}
	return d
}

// recovering reports whether the last probe was a recovery probe.
func (p *prober) recovering() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recovery
}

// tick decides whether this wake-up probes, and how.
func (p *prober) tick(ctx context.Context) {
	br := p.backend.Breaker
	if br != nil {
		s := br.Snapshot()
		if s.State != breaker.Open {
			p.g.probes.held.Delete(p.backend.Name)
		}
		_, held := p.g.probes.held.Load(p.backend.Name)
		// A trip health checks cannot end (quota; a brownout, unless a
		// pool of the backend is short) is left to run its course:
		// probing it would only spend calls.
		benched := (s.Recoverable() || s.Brownout() && p.awaited()) && !held && !p.openedByProbe()
		// A trip that ended with no traffic leaves the breaker half-open:
		// a probe decides it, so an idle pool fails back too.
		idleHalfOpen := s.State == breaker.HalfOpen && !s.Probing
		if benched && p.g.fleet.probedElsewhere(p.backend.Name) {
			return // the replica that probes this trip checks it, and tells the fleet
		}
		if benched || idleHalfOpen {
			p.recover(ctx)
			return
		}
	}
	if p.cfg.Interval > 0 && !p.g.now().Before(p.snapshot().At.Add(p.cfg.Interval.D())) {
		p.once(ctx)
	}
}

// recover probes a benched backend and tells its breaker the verdict:
// enough passes in a row (one for a first trip, more for a backend found
// flapping; one, and for a brownout too, while a pool of it is short)
// close it. A backend whose streams failed is probed with a stream, so a
// plain answer does not put back a backend whose streams still stall. A
// 429 (up, out of quota) is no verdict.
func (p *prober) recover(ctx context.Context) {
	kind := route.CheckKind(route.ProbeKind(p.cfg.Kind), p.backend.Breaker.Snapshot().Class == route.ClassStream)
	err, ok := p.probeKind(ctx, kind, true)
	p.mu.Lock()
	p.recovery = true
	p.mu.Unlock()
	if !ok || p.snapshot().Result == "429" {
		return
	}
	g, b := p.g, p.backend
	if err != nil {
		b.Breaker.Checked(false, "")
		return
	}
	if b.Breaker.Checked(true, "health probe passed: trip ended early") {
		g.Logger.Info("health probe passed: trip ended early", "backend", b.Name)
		return
	}
	s := b.Breaker.Snapshot()
	if s.State != breaker.Open {
		return
	}
	if (s.Recoverable() || s.Brownout()) && p.awaited() {
		// The passes in a row a flapping backend owes, or a brownout's
		// whole trip, keep it out while others answer; with none to call
		// (awaited), a backend that answers is better than refusing or
		// relaying failures. It closes as after a probe, in its slow
		// start.
		const cause = "health probe passed while a pool of the backend is short of members: trip ended early"
		b.Breaker.Force(breaker.Closed, time.Time{}, breaker.KindHealthProbe, cause)
		g.Logger.Info(cause, "backend", b.Name, "passes", s.Passes, "needed", s.PassesNeeded, "level", s.Level)
		return
	}
	g.Logger.Info("health probe passed: more passes needed", "backend", b.Name, "passes", s.Passes, "needed", s.PassesNeeded, "level", s.Level)
}

// probe runs one probe, bounded by the smaller of the configured timeout
// and the backend's learned check timeout, and records it. ok is false
// when ctx ended (the prober stopped).
func (p *prober) probe(ctx context.Context) (err error, ok bool) {
	return p.probeKind(ctx, route.ProbeKind(p.cfg.Kind), false)
}

// probeKind is probe with the kind given; a recovery probe may be sent
// again beside itself (see call).
func (p *prober) probeKind(ctx context.Context, kind route.ProbeKind, recovery bool) (err error, ok bool) {
	timeout := p.backend.CheckTimeout()
	if p.cfg.Timeout > 0 {
		timeout = min(timeout, p.cfg.Timeout.D())
	}
	pctx, cancel := context.WithCancelCause(ctx)
	clk := clock.Or(p.g.opts.Clock)
	t := clk.AfterFunc(timeout, func() { cancel(errProbeTimeout) })
	began := time.Now()
	var resend time.Duration
	if recovery {
		resend = max(timeout/resendShare, minResendAfter)
	}
	err = p.call(pctx, clk, kind, resend)
	t.Stop()
	timedOut := context.Cause(pctx) == errProbeTimeout
	cancel(context.Canceled)
	if ctx.Err() != nil {
		return nil, false // stopped: not the backend's fault
	}
	latency := time.Since(began)
	result := "ok"
	var pe *route.ProbeError
	if errors.As(err, &pe) {
		result = pe.Result
		if timedOut {
			result = "timeout"
		}
	}
	g, b := p.g, p.backend
	g.Metrics.Probe(b.Name, result, latency)
	p.mu.Lock()
	s := &p.status
	s.Kind, s.At, s.Up, s.Result, s.Latency = p.cfg.Kind, g.now(), err == nil, result, latency
	s.Error = ""
	switch {
	case result == "429":
		// Up, but out of quota: its Retry-After, not the probe, says when
		// it takes calls again. Not a failure in a row.
		s.Up, s.Error = true, err.Error()
	case err != nil:
		s.Error = err.Error()
		s.Failures++
	default:
		s.Failures = 0
	}
	p.mu.Unlock()
	return err, true
}

// The resending of a recovery probe (call).
const (
	// resendShare: a recovery probe is sent again once it has waited a
	// resendShare-th of its timeout, which is checkFactor times its
	// backend's usual (95th percentile) answer time, so about that time.
	resendShare = 4
	// minResendAfter is the least wait before a probe is sent again.
	minResendAfter = 500 * time.Millisecond
)

// call sends the probe and returns its verdict. When resend is set (a
// recovery probe) and the probe has waited that long with no answer while
// a pool of the backend waits on it (awaited: checked then, and again on
// each wakeProbers), it is sent once more beside the first, and the first
// pass counts (or the last failure when neither passes); the other call
// ends with ctx. A region that went dark and came back does not answer on
// the connection it dropped: a pool with no one else to call should not
// wait out the probe's timeout to learn it is back. Each call is told to
// the Observer as an EventProbe.
func (p *prober) call(ctx context.Context, clk clock.Clock, kind route.ProbeKind, resend time.Duration) error {
	results := make(chan error, 2)
	send := func() {
		err := p.backend.Probe(ctx, kind, p.model)
		if o := p.g.opts.Observer; o != nil {
			// A call no request made, told as the engine tells its own checks.
			o.Observe(route.Event{Kind: route.EventProbe, Backend: p.backend, Err: err})
		}
		results <- err
	}
	go send()
	if resend <= 0 {
		return <-results
	}
	due := make(chan struct{})
	t := clk.AfterFunc(resend, func() { close(due) })
	defer t.Stop()
	pending, sent, waited := 1, false, false
	for {
		select {
		case err := <-results:
			if pending--; err == nil || pending == 0 {
				return err
			}
			continue
		case <-due:
			due, waited = nil, true
		case <-p.wake:
		}
		if waited && !sent && p.awaited() {
			sent, pending = true, pending+1
			go send()
		}
	}
}

// once is a health probe of the interval: after Failures failed probes in
// a row the breaker is forced open (when MarkUnavailable) until a probe
// passes; a passing probe closes a breaker the probe opened, and with
// EndTrip one that traffic opened.
func (p *prober) once(ctx context.Context) {
	err, ok := p.probe(ctx)
	p.mu.Lock()
	p.recovery = false
	p.mu.Unlock()
	if !ok {
		return
	}
	g, b := p.g, p.backend
	snap := p.snapshot()
	failures, result, openedBy := snap.Failures, snap.Result, p.openedByProbe()
	if result == "429" {
		// Throttled: neither down nor a reason to close a bench early.
		return
	}

	br := b.Breaker
	if br == nil {
		return
	}
	st := br.Snapshot()
	state := st.State
	switch {
	case err != nil && *p.cfg.MarkUnavailable && failures >= p.cfg.Failures && state != breaker.Open:
		g.Logger.Warn("health probe failing: backend marked unavailable", "backend", b.Name, "failures", failures, "result", result)
		br.Force(breaker.Open, g.now().Add(2*p.cfg.Interval.D()), breaker.KindHealthProbe, "health probe failed "+itoa(failures)+" times: "+result)
		p.setOpenedBy(true)
	case err != nil && openedBy && state == breaker.Open:
		// Still failing: keep it benched until the next probe.
		br.Force(breaker.Open, g.now().Add(2*p.cfg.Interval.D()), breaker.KindHealthProbe, "health probe still failing: "+result)
	case err == nil && state != breaker.Closed && !st.Throttled && openedBy:
		g.Logger.Info("health probe passed: breaker closed", "backend", b.Name)
		br.Force(breaker.Closed, time.Time{}, breaker.KindHealthProbe, "health probe succeeded")
		p.setOpenedBy(false)
	case err == nil && state != breaker.Closed && !st.Throttled && *p.cfg.EndTrip:
		// A trip traffic opened ends as the breaker's rules say (enough
		// passes; never a brownout's).
		if br.Checked(true, "health probe succeeded") {
			g.Logger.Info("health probe passed: breaker closed", "backend", b.Name)
		}
	case err == nil:
		p.setOpenedBy(false)
	}
}

func (p *prober) openedByProbe() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.openedBy
}

func (p *prober) setOpenedBy(v bool) {
	p.mu.Lock()
	p.openedBy = v
	p.mu.Unlock()
}

func (p *prober) snapshot() ProbeStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

func itoa(n int) string { return strconv.Itoa(n) }
