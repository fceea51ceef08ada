package engine

import (
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// routes is what the request pipeline serves from e: every pool by name
// and alias, the configuration's keys, the tenancy hooks of d, the pinned
// routes, the pools of conversations, the pool of unknown paths, and the
// body and concurrency limits.
func (e *Engine) routes(d Deps, prev *Engine) *proxy.Routes {
	cfg := e.Config
	r := &proxy.Routes{Pools: map[string]*route.Pool{}, MaxBody: int64(cfg.Server.MaxBody),
		MaxBodyMemory: int64(cfg.Server.MaxBodyMemory), MaxConcurrentRequests: cfg.Server.MaxConcurrentRequests,
		MaxConcurrentPerKey: cfg.Server.MaxConcurrentRequestsPerKey, MaxBodyMemoryPerKey: int64(cfg.Server.MaxBodyMemoryPerKey),
		MinBodyRate: int64(cfg.Server.MinBodyRate),
		Resolver:    d.Resolver, Admission: d.Admission, Signer: route.NewSigner(cfg.ObjectSecrets()...), Index: d.Index}
	for _, pc := range cfg.Pools {
		p := e.Pools[pc.Name]
		r.Pools[pc.Name] = p
		for _, a := range pc.Aliases {
			r.Pools[a] = p
		}
	}
	for _, k := range cfg.Keys {
		r.Keys = append(r.Keys, proxy.NewKey(k.Name, k.Key.Value()))
	}
	for _, pc := range cfg.Pinned {
		p := e.pinnedPool(pc.Backend, pc.Pool, d)
		for _, path := range pc.Paths {
			r.Pinned = append(r.Pinned, proxy.Pinned{Path: config.PinnedPath(path), Pool: p})
		}
	}
	r.Conversations = e.conversationPools(d)
	if u := cfg.UnknownPaths; u != nil {
		r.Unknown = e.pinnedPool(u.Backend, "", d)
		for _, p := range u.Paths {
			r.UnknownAllow = append(r.UnknownAllow, config.UnknownPath(p))
		}
	}
	r.Cache = e.cacheRoutes(d, prev)
	r.Bodies = bodyRoutes(e.Config)
	return r
}

// pinnedPool is the pool of a pinned route: the backend alone, or the
// pool's members, with one attempt either way (a create is never sent
// twice; calls on an object go to its owner).
func (e *Engine) pinnedPool(backend, pool string, d Deps) *route.Pool {
	p := &route.Pool{Attempts: 1, Observer: d.Observer, Clock: d.Clock}
	if backend != "" {
		p.Name = "pinned:" + backend
		p.Members = []*route.Member{{Backend: e.Backends[backend], Priority: 1}}
		return p
	}
	src := e.Pools[pool]
	p.Name, p.Members = src.Name, src.Members
	return p
}

// conversationPools are the pools where conversations are made and
// reached when no pinned route takes them (proxy.Routes.Conversations):
// for each pool, in the configuration's order, its members that can keep
// them (openai and azure backends whose responses_api is not false), with
// one attempt as for a pinned pool, under the pool's name. Pools with none
// are left out.
func (e *Engine) conversationPools(d Deps) []*route.Pool {
	able := map[string]bool{}
	for _, bc := range e.Config.Backends {
		able[bc.Name] = (bc.Type == config.TypeOpenAI || bc.Type == config.TypeAzure) &&
			(bc.ResponsesAPI == nil || *bc.ResponsesAPI)
	}
	var out []*route.Pool
	for _, pc := range e.Config.Pools {
		src := e.Pools[pc.Name]
		var members []*route.Member
		for _, m := range src.Members {
			if able[m.Backend.Name] {
				members = append(members, m)
			}
		}
		if len(members) > 0 {
			out = append(out, &route.Pool{Name: src.Name, Members: members, Attempts: 1, Observer: d.Observer, Clock: d.Clock})
		}
	}
	return out
}
