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

	mu       sync.Mutex
	status   ProbeStatus
	openedBy bool // the probe forced the breaker open
}

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
		p := &prober{g: g, backend: b, cfg: *bc.Probe, model: probeModel(st.Config, bc.Name), done: make(chan struct{})}
		var ctx context.Context
		ctx, p.cancel = context.WithCancel(g.life.bg)
		g.probes.byBackend[bc.Name] = p
		go p.run(ctx)
	}
	for name, p := range g.probes.byBackend {
		if !want[name] {
			p.stop()
			delete(g.probes.byBackend, name)
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
// backend's breaker is open for a failure (not for quota, whose
// Retry-After says when it returns, and not by an operator) it probes, and
// a passing probe ends the trip, so failback waits neither for the trip
// nor for a lucky request; while the backend is healthy it probes every
// interval, when one is set. Waits run on the gateway's clock.
func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	clk := clock.Or(p.g.opts.Clock)
	if p.cfg.Interval > 0 {
		p.once(ctx)
	}
	for {
		wake := make(chan struct{})
		t := clk.AfterFunc(p.wait(), func() { close(wake) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		}
		p.tick(ctx)
	}
}

// misconfiguredProbeEvery is how often a backend whose last probe was
// refused with a 4xx (a revoked key, a deleted deployment) is probed
// again: it will not heal itself within seconds, and each probe is an
// upstream call.
const misconfiguredProbeEvery = time.Minute

// wait is how long until the next wake-up: recovery_interval, or
// misconfiguredProbeEvery after a probe the backend refused with a 4xx.
func (p *prober) wait() time.Duration {
	d := p.cfg.RecoveryInterval.D()
	if s := p.snapshot(); !s.Up && s.Result == "4xx" {
		d = max(d, misconfiguredProbeEvery)
	}
	return d
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
		benched := s.State == breaker.Open && !s.Throttled && !held && !p.openedByProbe()
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

// recover probes a benched backend; a pass closes its breaker. A backend
// whose streams failed is probed with a stream, so a plain answer does not
// put back a backend whose streams still stall.
func (p *prober) recover(ctx context.Context) {
	kind := route.ProbeKind(p.cfg.Kind)
	if kind == route.ProbeChat && p.backend.Breaker.Snapshot().Class == route.ClassStream {
		kind = route.ProbeStream
	}
	err, ok := p.probeKind(ctx, kind)
	if !ok || err != nil {
		return
	}
	g, b := p.g, p.backend
	if s := b.Breaker.Snapshot(); (s.State == breaker.Open && !s.Throttled) || (s.State == breaker.HalfOpen && !s.Probing) {
		g.Logger.Info("health probe passed: trip ended early", "backend", b.Name)
		b.Breaker.Force(breaker.Closed, time.Time{}, breaker.KindHealthProbe, "health probe passed: trip ended early")
	}
}

// probe runs one probe, bounded by the smaller of the configured timeout
// and the backend's learned check timeout, and records it. ok is false
// when ctx ended (the prober stopped).
func (p *prober) probe(ctx context.Context) (err error, ok bool) {
	return p.probeKind(ctx, route.ProbeKind(p.cfg.Kind))
}

// probeKind is probe with the kind given.
func (p *prober) probeKind(ctx context.Context, kind route.ProbeKind) (err error, ok bool) {
	timeout := p.backend.CheckTimeout()
	if p.cfg.Timeout > 0 {
		timeout = min(timeout, p.cfg.Timeout.D())
	}
	pctx, cancel := context.WithCancelCause(ctx)
	t := clock.Or(p.g.opts.Clock).AfterFunc(timeout, func() { cancel(errProbeTimeout) })
	began := time.Now()
	err = p.backend.Probe(pctx, kind, p.model)
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

// once is a health probe of the interval: after Failures failed probes in
// a row the breaker is forced open (when MarkUnavailable) until a probe
// passes; a passing probe closes a breaker the probe opened, and with
// EndTrip one that traffic opened.
func (p *prober) once(ctx context.Context) {
	err, ok := p.probe(ctx)
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
	case err == nil && state != breaker.Closed && !st.Throttled && (openedBy || *p.cfg.EndTrip):
		g.Logger.Info("health probe passed: breaker closed", "backend", b.Name)
		br.Force(breaker.Closed, time.Time{}, breaker.KindHealthProbe, "health probe succeeded")
		p.setOpenedBy(false)
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
