// Package engine builds the routing engine's object graph from a
// configuration: the backends with their providers, transports, breakers and
// quota state; the pools with their strategies, retry budgets, queues and
// hedges; and the routes the request pipeline serves (pools by model name and
// alias, pinned routes, keys, body limits). The graph is what package route
// runs and package proxy serves; a gateway, the load tool's client-side
// strategies and the game day all build it here.
//
// Build is the one road from a config.Config to an engine. Given the graph
// in force it also computes the reload: which backends are kept as they are,
// which are rebuilt with their breaker state carried over, which start
// afresh, and which settings a reload cannot apply (RestartOnly). Nothing
// here serves, logs or starts background work: what the graph tells of (a
// breaker's transitions, a failure to count across replicas, a quota to
// share) goes to the hooks in Deps.
package engine

import (
	"fmt"
	"reflect"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/gcpauth"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// Engine is what one configuration built. It is immutable once built (its
// breakers, quotas and pools change state as they serve, its shape does
// not), and safe for concurrent use.
type Engine struct {
	// Config is the configuration it was built from.
	Config *config.Config
	// Backends and Pools by name (a pool's aliases are in Routes only).
	Backends map[string]*route.Backend
	Pools    map[string]*route.Pool
	// BackendConfigs are the backends' configurations by name.
	BackendConfigs map[string]config.Backend
	// Routes is what the request pipeline serves (proxy.Handler.Update).
	Routes *proxy.Routes
	// Reload is how it differs from the engine it replaces; zero for the
	// first.
	Reload Reload

	gcp *gcpauth.Registry // Deps.GCP as Build settled it, for the next Build
}

// Reload is what a rebuild changes, computed by Build against the engine
// in force.
type Reload struct {
	// Kept are the backends configured exactly as before: the same
	// object, breaker, connections and model version.
	Kept []string
	// Carried are the backends whose identity (name, type, URL,
	// credentials) is unchanged but whose settings changed: a new object
	// that carries the old one's breaker state (or the breaker itself,
	// when only settings outside it changed), quota figures and drain,
	// and its transport (its connections) unless connect_timeout or
	// http2 changed.
	Carried []string
	// Renewed are the backends whose identity changed: they start afresh
	// (breaker, metrics, the order of their transitions).
	Renewed []string
	// Added and Removed are backends new to, or gone from, the
	// configuration; RemovedPools the pools gone.
	Added, Removed, RemovedPools []string
	// RestartOnly names the settings that changed and that only a restart
	// applies (see RestartOnly).
	RestartOnly []string
	// retire are the breakers the new engine replaces: they go quiet when
	// it is put in force (Engine.Replace).
	retire []*route.Backend
}

// Build turns cfg, already validated, into an engine. prev is the engine in
// force, or nil: backends configured exactly as in prev are reused; a
// backend whose identity is unchanged but whose settings changed gets a new
// object carrying its breaker state and drain over. On an error, the
// breakers Build made are retired and prev is untouched.
func Build(cfg *config.Config, prev *Engine, d Deps) (*Engine, error) {
	e := &Engine{Config: cfg, Backends: map[string]*route.Backend{}, BackendConfigs: map[string]config.Backend{}, Pools: map[string]*route.Pool{}}
	if d.Entra == nil {
		d.Entra = &entra.Registry{} // one for this Build, as Deps.Entra says
	}
	if d.GCP == nil {
		d.GCP = &gcpauth.Registry{} // the engine before's, else one for this Build
		if prev != nil && prev.gcp != nil {
			d.GCP = prev.gcp
		}
	}
	e.gcp = d.GCP
	ts := transports{}
	ts.seed(prev)
	for _, bc := range cfg.Backends {
		if err := e.addBackend(bc, prev, d, ts); err != nil {
			for name, nb := range e.Backends {
				if prev == nil || prev.Backends[name] != nb {
					retire(nb)
				}
			}
			return nil, fmt.Errorf("backend %s: %w", bc.Name, err)
		}
	}
	for _, pc := range cfg.Pools {
		e.Pools[pc.Name] = newPool(pc, e.Backends, d)
	}
	for _, pc := range cfg.Pools {
		p := e.Pools[pc.Name]
		p.Fallback, p.ContextFallback = e.Pools[pc.Fallback], e.Pools[pc.ContextFallback]
	}
	e.Routes = e.routes(d, prev)
	if prev != nil {
		e.diff(prev)
	}
	return e, nil
}

// addBackend builds bc's backend into e, reusing or carrying over prev's.
func (e *Engine) addBackend(bc config.Backend, prev *Engine, d Deps, ts transports) error {
	e.BackendConfigs[bc.Name] = bc
	var ob *route.Backend
	var oc config.Backend
	if prev != nil {
		ob, oc = prev.Backends[bc.Name], prev.BackendConfigs[bc.Name]
		if ob != nil && oc.Equal(bc) {
			e.Backends[bc.Name] = ob
			e.Reload.Kept = append(e.Reload.Kept, bc.Name)
			return nil
		}
	}
	b, err := newBackend(bc, d, ts)
	if err != nil {
		return err
	}
	e.Backends[bc.Name] = b
	switch {
	case ob == nil:
		if prev != nil {
			e.Reload.Added = append(e.Reload.Added, bc.Name)
		}
	case oc.SameIdentity(bc):
		// Its transport is the one in force for its host and settings
		// (ts, seeded from prev's), so its connections stay; one with a
		// ca_file has a new one, the file read again.
		e.Reload.Carried = append(e.Reload.Carried, bc.Name)
		e.carry(b, ob, reflect.DeepEqual(oc.Breaker, bc.Breaker))
	default:
		e.Reload.Renewed = append(e.Reload.Renewed, bc.Name)
		e.Reload.retire = append(e.Reload.retire, ob)
	}
	return nil
}

// carry moves what ob, the backend b replaces under the same identity,
// knows onto b: its breaker itself when the breaker's settings are the same
// (its failure count, half-open probe and timers), else its breaker's
// state; its quota figures; its drain.
func (e *Engine) carry(b, ob *route.Backend, sameBreaker bool) {
	if sameBreaker && ob.Breaker != nil && b.Breaker != nil {
		// Only settings outside the breaker changed (a timeout, a
		// header): keep the breaker itself.
		retire(b)
		b.Breaker = ob.Breaker
	} else {
		e.Reload.retire = append(e.Reload.retire, ob)
	}
	if ob.Quota != nil && b.Quota != nil {
		b.Quota = ob.Quota // what the backend said of its quota still holds
	}
	if ob.Breaker != nil && b.Breaker != nil && b.Breaker != ob.Breaker {
		if nb, ok := b.Breaker.(*breaker.Breaker); ok {
			nb.Restore(ob.Breaker.Snapshot())
		}
	}
	if ob.Drained() {
		b.Drain()
	}
}

// diff completes e.Reload against prev: what is gone, and the settings
// only a restart applies.
func (e *Engine) diff(prev *Engine) {
	for _, bc := range prev.Config.Backends {
		if _, ok := e.Backends[bc.Name]; !ok {
			e.Reload.Removed = append(e.Reload.Removed, bc.Name)
			e.Reload.retire = append(e.Reload.retire, prev.Backends[bc.Name])
		}
	}
	for _, pc := range prev.Config.Pools {
		if _, ok := e.Pools[pc.Name]; !ok {
			e.Reload.RemovedPools = append(e.Reload.RemovedPools, pc.Name)
		}
	}
	e.Reload.RestartOnly = RestartOnly(prev.Config, e.Config)
}

// Replace puts e in force in place of the engine it was built against:
// the breakers it replaces (and those of removed backends) stop their
// timers and transitions, so that they no longer end trips or report for
// backends that are not theirs. Call it once, when e is published.
//
// The idle connections of a replaced backend's transport are closed, unless
// a backend of e still uses that transport (a carried backend keeps it):
// otherwise they linger until the transport's idle timeout, a thousand
// transports' worth after a reload that renews a thousand backends. Calls in
// flight on them finish.
func (e *Engine) Replace() {
	inUse := make(map[*route.Transport]bool, len(e.Backends))
	for _, b := range e.Backends {
		if t, ok := b.Transport.(*route.Transport); ok {
			inUse[t] = true
		}
	}
	for _, b := range e.Reload.retire {
		retire(b)
		if t, ok := b.Transport.(*route.Transport); ok && !inUse[t] {
			t.CloseIdleConnections()
		}
	}
}

// Close retires every breaker of e: no timer of theirs fires, and no
// transition is reported, from now on; and it stops the background work
// of e's in-process response cache (cache.Memory), which a reload hands
// on to the next engine and nothing else stops. For an engine going out
// of use (the gateway's Close, a client-side pool when its run ends); a
// Redis-backed cache (Deps.Cache) is its giver's to close.
func (e *Engine) Close() {
	for _, b := range e.Backends {
		retire(b)
	}
	if r := e.Routes; r != nil && r.Cache != nil && r.Cache.ResponseCache != nil {
		if m, ok := r.Cache.ResponseCache.Store.(*cache.Memory); ok {
			m.Close()
		}
	}
}

// Pool returns the pool a caller reaches by model name (a pool's name or
// one of its aliases), or nil.
func (e *Engine) Pool(model string) *route.Pool {
	if p := e.Pools[model]; p != nil {
		return p
	}
	return e.Routes.Pools[model]
}

// retire stops the timers and transition events of b's breaker, for a
// backend another has replaced (or that was never published).
func retire(b *route.Backend) {
	if br, ok := b.Breaker.(*breaker.Breaker); ok {
		br.Retire()
	}
}

// WithPool returns a copy of e whose pool name is built again (with
// Deps.Override as it is now), sharing everything else: an operator's
// change to a member takes effect without touching the other pools (their
// retry budgets, queues and latency figures). The copy replaces nothing:
// its Reload is zero. name must be a pool of e.
func (e *Engine) WithPool(name string, d Deps) *Engine {
	n := &Engine{Config: e.Config, Backends: e.Backends, BackendConfigs: e.BackendConfigs, Pools: make(map[string]*route.Pool, len(e.Pools))}
	for k, p := range e.Pools {
		n.Pools[k] = p
	}
	for _, pc := range e.Config.Pools {
		if pc.Name == name {
			p := newPool(pc, e.Backends, d)
			p.Fallback, p.ContextFallback = n.Pools[pc.Fallback], n.Pools[pc.ContextFallback]
			n.Pools[name] = p
		}
	}
	n.Routes = n.routes(d, e)
	return n
}
