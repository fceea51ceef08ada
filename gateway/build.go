package gateway

import (
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/route"
)

// build turns cfg into an engine, against old (the engine in force, or
// nil) for a reload. Requires g.mu held, or no other user of g yet.
func (g *Gateway) build(cfg *config.Config, old *engine.Engine) (*engine.Engine, error) {
	return engine.Build(cfg, old, g.deps())
}

// deps are what the engines the gateway builds report to and draw on: its
// observer and transition handler, the operators' overrides, the key
// directory and limiter of its tenancy (the request pipeline's hooks)
// and, with a fleet, the failures counted and the quota figures shared
// across replicas.
func (g *Gateway) deps() engine.Deps {
	obs := multiObserver{g.Metrics, route.ObserverFunc(g.observe), g.tracer}
	if g.opts.Observer != nil {
		obs = append(obs, g.opts.Observer)
	}
	d := engine.Deps{Clock: g.opts.Clock, Observer: obs, OnTransition: g.onTransition, Entra: g.opts.Entra, Override: g.override, Probed: true, Index: g.index,
		CacheObserver: g.Metrics}
	if t := g.ten; t != nil {
		d.Resolver, d.Admission = notingResolver{t.dir}, t.lim
	}
	if f := g.fleet; f != nil {
		d.OnFailure = func(backend string) func(breaker.Outcome, time.Time) {
			return func(o breaker.Outcome, at time.Time) { f.Failure(backend, o, at) }
		}
		d.Quota = func(backend string, q *route.LocalQuota) route.Quota {
			return &fleetQuota{LocalQuota: q, backend: backend, fleet: f.Replica}
		}
		d.Cache = f.responses // nil without Redis: each engine's in process
	}
	return d
}

// override is an operator's change to a member, for engine.Deps.Override.
// Requires g.mu held.
func (g *Gateway) override(pool, backend string) (priority, weight int) {
	o := g.overrides[memberKey{pool, backend}]
	return o.priority, o.weight
}

// publish makes e the engine in force: the handler's routes, metrics,
// probes and the notification tracker follow. Requires g.mu held (or no
// other user of g yet).
func (g *Gateway) publish(e *engine.Engine, reason string) {
	cfg := e.Config
	if g.ten != nil {
		g.configureTenancy(cfg)
	}
	// The replaced breakers go quiet first: their timers would go on
	// ending trips and emitting transitions for backends that are no
	// longer theirs. A backend whose identity changed starts afresh, in
	// the metrics and in the order of its transitions.
	e.Replace()
	for _, name := range e.Reload.Renewed {
		g.Metrics.RemoveBackend(name)
		g.notes.seqs.Forget(name)
	}
	g.state.Store(e)
	g.Handler.Update(e.Routes)
	for _, name := range e.Reload.Removed {
		g.Metrics.RemoveBackend(name)
		g.notes.seqs.Forget(name)
	}
	for _, name := range e.Reload.RemovedPools {
		g.Metrics.RemovePool(name)
	}
	for _, bc := range cfg.Backends {
		g.Metrics.AddBackend(bc.Name, bc.Region, bc.Type)
		g.Metrics.Drained(bc.Name, e.Backends[bc.Name].Drained())
	}
	g.syncProbes(e)
	for _, pc := range cfg.Pools {
		g.updatePool(e, pc.Name, reason)
	}
}
