package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// build turns cfg into a state. Backends configured exactly as in old are
// reused (breaker, connection pool, model version and all); a backend whose
// identity (name, type, URL, credentials) is unchanged but whose settings
// changed gets a new object carrying its breaker state and drain over. The
// breakers a new state replaces are retired when it is published; on an
// error, the breakers build made are retired at once.
// Requires g.mu held, or no other user of g yet.
func (g *Gateway) build(cfg *config.Config, old *state) (*state, error) {
	st := &state{cfg: cfg, backends: map[string]*route.Backend{}, bcfg: map[string]config.Backend{}, pools: map[string]*route.Pool{}}
	for _, bc := range cfg.Backends {
		st.bcfg[bc.Name] = bc
		var ob *route.Backend
		if old != nil {
			ob = old.backends[bc.Name]
			if ob != nil && old.bcfg[bc.Name].Equal(bc) {
				st.backends[bc.Name] = ob
				continue
			}
		}
		b, err := g.newBackend(bc)
		if err != nil {
			for name, nb := range st.backends {
				if old == nil || old.backends[name] != nb {
					retire(nb)
				}
			}
			return nil, fmt.Errorf("backend %s: %w", bc.Name, err)
		}
		if ob != nil {
			same := old.bcfg[bc.Name].SameIdentity(bc)
			if same && ob.Breaker != nil && b.Breaker != nil && reflect.DeepEqual(old.bcfg[bc.Name].Breaker, bc.Breaker) {
				// Only settings outside the breaker changed (a timeout, a
				// header): keep the breaker itself, with its failure count,
				// its half-open probe and its timers.
				retire(b)
				b.Breaker = ob.Breaker
			} else {
				st.retire = append(st.retire, ob)
			}
			if same {
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
			} else {
				st.renewed = append(st.renewed, bc.Name)
			}
		}
		st.backends[bc.Name] = b
	}
	for _, pc := range cfg.Pools {
		st.pools[pc.Name] = g.newPool(pc, st.backends)
	}
	for _, pc := range cfg.Pools {
		p := st.pools[pc.Name]
		p.Fallback, p.ContextFallback = st.pools[pc.Fallback], st.pools[pc.ContextFallback]
	}
	return st, nil
}

// retire stops the timers and transition events of b's breaker, for a
// backend another has replaced (or that was never published).
func retire(b *route.Backend) {
	if br, ok := b.Breaker.(*breaker.Breaker); ok {
		br.Retire()
	}
}

// newPool builds a pool, with operators' overrides applied. Requires
// g.mu held (or no other user of g yet).
func (g *Gateway) newPool(pc config.Pool, backends map[string]*route.Backend) *route.Pool {
	p := &route.Pool{
		Name:     pc.Name,
		Attempts: pc.Retry.Attempts,
		RetryOn:  statusSet(pc.Retry.On),
		// How long retries may go on.
		TryDuration: pc.Retry.Budget.D(),
		Observer:    g.observer,
		Clock:       g.opts.Clock,
	}
	p.MaxWait, p.MaxWaitLimit, p.MaxQueue = pc.Queue.MaxWait.D(), pc.Queue.MaxWaitLimit.D(), pc.Queue.MaxLength
	if rb := pc.RetryBudget; !rb.Disabled {
		p.RetryBudget = &route.RetryBudget{Ratio: rb.Ratio, MinPerSecond: rb.MinPerSecond, Window: rb.Window.D()}
	}
	if h := pc.Hedge; h != nil {
		p.Hedge = &route.Hedge{Delay: h.After.Delay, Quantile: h.After.Quantile, Share: h.Share}
	}
	if pc.Strategy != "" && pc.Strategy != route.StrategyPriority {
		sel, err := route.NewStrategy(pc.Strategy)
		if err == nil {
			if h, ok := sel.(*route.Headroom); ok {
				h.Remaining = func(b *route.Backend) (float64, bool) {
					if q, ok := b.Quota.(interface {
						Headroom(time.Time) (float64, bool)
					}); ok {
						return q.Headroom(clock.Or(g.opts.Clock).Now())
					}
					return 0, false
				}
			}
			p.Selector = sel
		}
	}
	for _, mc := range pc.Members {
		m := &route.Member{Backend: backends[mc.Backend], Priority: mc.Priority, Weight: mc.Weight, Deployment: mc.Model, MaxTokens: mc.MaxTokens}
		if o, ok := g.overrides[memberKey{pc.Name, mc.Backend}]; ok {
			if o.priority > 0 {
				m.Priority = o.priority
			}
			if o.weight > 0 {
				m.Weight = o.weight
			}
		}
		p.Members = append(p.Members, m)
	}
	return p
}

// publish makes st the state in force: the handler's routes, metrics,
// probes and the notification tracker follow. Requires g.mu held (or no
// other user of g yet).
func (g *Gateway) publish(st *state, reason string) {
	cfg := st.cfg
	routes := &proxy.Routes{Pools: map[string]*route.Pool{}, MaxBody: int64(cfg.Server.MaxBody),
		MaxBodyMemory: int64(cfg.Server.MaxBodyMemory), MaxConcurrentRequests: cfg.Server.MaxConcurrentRequests}
	for _, pc := range cfg.Pools {
		p := st.pools[pc.Name]
		routes.Pools[pc.Name] = p
		for _, a := range pc.Aliases {
			routes.Pools[a] = p
		}
	}
	for _, k := range cfg.Keys {
		routes.Keys = append(routes.Keys, proxy.NewKey(k.Name, k.Key.Value()))
	}
	if g.ten != nil {
		g.configureTenancy(cfg)
	}
	for _, pc := range cfg.Pinned {
		p := g.pinnedPool(pc.Backend, pc.Pool, st)
		for _, path := range pc.Paths {
			routes.Pinned = append(routes.Pinned, proxy.Pinned{Path: config.PinnedPath(path), Pool: p})
		}
	}
	if u := cfg.UnknownPaths; u != nil {
		routes.Unknown = g.pinnedPool(u.Backend, "", st)
	}
	old := g.state.Load()
	// The replaced breakers go quiet first: their timers would go on
	// ending trips and emitting transitions for backends that are no
	// longer theirs. A backend whose identity changed starts afresh, in
	// the metrics and in the order of its transitions.
	for _, b := range st.retire {
		retire(b)
	}
	st.retire = nil
	for _, name := range st.renewed {
		g.Metrics.RemoveBackend(name)
		g.seqs.Forget(name)
	}
	st.renewed = nil
	g.state.Store(st)
	g.Handler.Update(routes)
	if old != nil {
		for name := range old.backends {
			if _, ok := st.backends[name]; !ok {
				g.Metrics.RemoveBackend(name)
				g.seqs.Forget(name)
				retire(old.backends[name])
			}
		}
		for name := range old.pools {
			if _, ok := st.pools[name]; !ok {
				g.Metrics.RemovePool(name)
			}
		}
	}
	for _, bc := range cfg.Backends {
		g.Metrics.AddBackend(bc.Name, bc.Region, bc.Type)
		g.Metrics.Drained(bc.Name, st.backends[bc.Name].Drained())
	}
	g.syncProbes(st)
	for _, pc := range cfg.Pools {
		g.updatePool(st, pc.Name, reason)
	}
}

func (g *Gateway) newBackend(bc config.Backend) (*route.Backend, error) {
	u, err := url.Parse(bc.URL)
	if err != nil {
		return nil, err
	}
	var hdr http.Header
	if len(bc.Headers) > 0 {
		hdr = http.Header{}
		for k, v := range bc.Headers {
			hdr.Set(k, v)
		}
	}
	b := &route.Backend{
		Name:                   bc.Name,
		Region:                 bc.Region,
		Transport:              route.NewTransport(route.TransportSettings{ConnectTimeout: bc.ConnectTimeout.D()}),
		Counts:                 statusSet(bc.Breaker.Statuses),
		FirstByteTimeout:       bc.FirstByteTimeout.D(),
		StreamFirstByteTimeout: bc.StreamFirstByteTimeout.D(),
		Timeout:                bc.Timeout.D(),
		IdleTimeout:            bc.IdleTimeout.D(),
	}
	if bc.Probe != nil {
		b.HealthCheck = route.ProbeKind(bc.Probe.Kind)
	}
	if bc.QuotaAware == nil || *bc.QuotaAware {
		q := &route.LocalQuota{Slice: bc.QuotaSlice.D()}
		b.Quota = q
		if g.fleet != nil {
			b.Quota = &fleetQuota{LocalQuota: q, backend: bc.Name, fleet: g.fleet}
		}
	}
	switch bc.Type {
	case config.TypeOpenAI, config.TypeOpenAICompatible:
		b.Provider = &route.OpenAI{BaseURL: u, APIKey: bc.APIKey.Value(), Organization: bc.Organization, Project: bc.Project, Header: hdr,
			NoResponses: bc.ResponsesAPI != nil && !*bc.ResponsesAPI, StreamUsage: bc.Type == config.TypeOpenAI}
	case config.TypeAzure:
		az := &route.Azure{Endpoint: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr,
			NoResponses: bc.ResponsesAPI != nil && !*bc.ResponsesAPI}
		if e := bc.Entra; e != nil {
			src, err := g.entra.Source(entra.Settings{
				TenantID: e.TenantID, ClientID: e.ClientID, ClientSecret: e.ClientSecret.Value(),
				FederatedTokenFile: e.FederatedTokenFile, ManagedIdentity: e.ManagedIdentity,
				Scope: e.Scope, AuthorityHost: e.AuthorityHost,
			})
			if err != nil {
				return nil, err
			}
			az.Token = src
		}
		b.Provider = az
	case config.TypeAnthropic:
		b.Provider = &route.Anthropic{BaseURL: u, APIKey: bc.APIKey.Value(), Version: bc.AnthropicVersion, Header: hdr}
	case config.TypeGemini:
		b.Provider = &route.Gemini{BaseURL: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr}
	default:
		return nil, fmt.Errorf("unknown type %q", bc.Type)
	}
	if !bc.Breaker.Disabled {
		b.Breaker = breaker.New(bc.Name, breaker.Settings{
			Failures:         bc.Breaker.Failures,
			Window:           bc.Breaker.Window.D(),
			Trip:             bc.Breaker.Trip.D(),
			AcceptRetryAfter: *bc.Breaker.AcceptRetryAfter,
			FollowRetryAfter: *bc.Breaker.FollowRetryAfter,
			MaxRetryAfter:    bc.Breaker.MaxRetryAfter.D(),
			Clock:            g.opts.Clock,
			OnTransition:     g.onTransition,
			OnFailure:        g.onFailure(bc.Name),
		})
	}
	return b, nil
}

func statusSet(l config.StatusList) *route.StatusSet {
	s := &route.StatusSet{}
	for _, r := range l {
		s.AddRange(r.Lo, r.Hi)
	}
	return s
}

// pinnedPool is the pool of a pinned route: the backend alone, or the
// pool's members, with one attempt either way (a create is never sent
// twice; calls on an object go to its owner).
func (g *Gateway) pinnedPool(backend, pool string, st *state) *route.Pool {
	p := &route.Pool{Attempts: 1, Observer: g.observer, Clock: g.opts.Clock}
	if backend != "" {
		p.Name = "pinned:" + backend
		p.Members = []*route.Member{{Backend: st.backends[backend], Priority: 1}}
		return p
	}
	src := st.pools[pool]
	p.Name, p.Members = src.Name, src.Members
	return p
}
