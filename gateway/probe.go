package gateway

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
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
func (g *Gateway) syncProbes(st *state) {
	want := map[string]bool{}
	for _, bc := range st.cfg.Backends {
		if bc.Probe == nil {
			continue
		}
		want[bc.Name] = true
		b := st.backends[bc.Name]
		if p, ok := g.probes[bc.Name]; ok && p.backend == b && reflect.DeepEqual(p.cfg, *bc.Probe) {
			continue
		}
		if p, ok := g.probes[bc.Name]; ok {
			p.stop()
		}
		p := &prober{g: g, backend: b, cfg: *bc.Probe, model: probeModel(st.cfg, bc.Name), done: make(chan struct{})}
		var ctx context.Context
		ctx, p.cancel = context.WithCancel(g.bg)
		g.probes[bc.Name] = p
		go p.run(ctx)
	}
	for name, p := range g.probes {
		if !want[name] {
			p.stop()
			delete(g.probes, name)
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

func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval.D())
	defer t.Stop()
	for {
		p.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// once probes and acts on the result: after Failures failed probes in a
// row the breaker is forced open (when MarkUnavailable) until a probe
// passes; a passing probe closes a breaker the probe opened, and with
// EndTrip one that traffic opened.
func (p *prober) once(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout.D())
	began := time.Now()
	err := p.backend.Probe(pctx, route.ProbeKind(p.cfg.Kind), p.model)
	cancel()
	if ctx.Err() != nil {
		return // stopped: not the backend's fault
	}
	latency := time.Since(began)
	result := "ok"
	var pe *route.ProbeError
	if errors.As(err, &pe) {
		result = pe.Result
	}
	g, b := p.g, p.backend
	g.Metrics.Probe(b.Name, result, latency)

	p.mu.Lock()
	s := &p.status
	s.Kind, s.At, s.Up, s.Result, s.Latency = p.cfg.Kind, g.now(), err == nil, result, latency
	s.Error = ""
	if err != nil {
		s.Error = err.Error()
		s.Failures++
	} else {
		s.Failures = 0
	}
	failures, openedBy := s.Failures, p.openedBy
	p.mu.Unlock()

	br := b.Breaker
	if br == nil {
		return
	}
	state := br.Snapshot().State
	switch {
	case err != nil && *p.cfg.MarkUnavailable && failures >= p.cfg.Failures && state != breaker.Open:
		g.Logger.Warn("health probe failing: backend marked unavailable", "backend", b.Name, "failures", failures, "result", result)
		br.Force(breaker.Open, g.now().Add(2*p.cfg.Interval.D()), "health probe failed "+itoa(failures)+" times: "+result)
		p.setOpenedBy(true)
	case err != nil && openedBy && state == breaker.Open:
		// Still failing: keep it benched until the next probe.
		br.Force(breaker.Open, g.now().Add(2*p.cfg.Interval.D()), "health probe still failing: "+result)
	case err == nil && state != breaker.Closed && (openedBy || p.cfg.EndTrip):
		g.Logger.Info("health probe passed: breaker closed", "backend", b.Name)
		br.Force(breaker.Closed, time.Time{}, "health probe succeeded")
		p.setOpenedBy(false)
	case err == nil:
		p.setOpenedBy(false)
	}
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
