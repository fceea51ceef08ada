package engine

import (
	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/proxy"
)

// cacheRoutes are the response cache's settings for the pipeline
// (proxy.Routes.Cache): the policies of the pools and keys that set
// cache:, on d.Cache (the gateway's with state.redis: its store is the
// fleet's Redis, cache/rediscache), else on prev's cache, else on a new
// in-process one of cache.max_memory. Nil when no pool or key caches or
// coalesces and there is no key store (store:), whose keys may have a
// cache of their own (ledger.Key.Cache, on their tenant.Principal).
func (e *Engine) cacheRoutes(d Deps, prev *Engine) *proxy.CacheRoutes {
	cfg := e.Config
	cr := &proxy.CacheRoutes{Pools: map[string]*proxy.CachePolicy{}, Keys: map[string]*proxy.CachePolicy{}}
	for _, pc := range cfg.Pools {
		if pc.Cache.On() {
			cr.Pools[pc.Name] = cachePolicy(pc.Cache)
		}
	}
	for _, k := range cfg.Keys {
		if k.Cache != nil {
			cr.Keys[k.Name] = cachePolicy(k.Cache) // off too: a key's cache wins over its pools'
		}
	}
	if len(cr.Pools) == 0 && len(cr.Keys) == 0 && cfg.Store == nil {
		return nil // with a key store, a stored key's own cache: may turn it on
	}
	switch {
	case d.Cache != nil:
		cr.ResponseCache = d.Cache
	case prev != nil && prev.Routes != nil && prev.Routes.Cache != nil:
		cr.ResponseCache = prev.Routes.Cache.ResponseCache
	default:
		rc := &proxy.ResponseCache{Observer: d.CacheObserver, Clock: d.Clock}
		o := cache.MemoryOptions{MaxBytes: int64(cfg.Cache.MaxMemory)}
		if obs := d.CacheObserver; obs != nil {
			o.OnEvict = func(cause string, e *cache.Entry) { obs.CacheEvicted(e.Pool, cause) }
		}
		rc.Store = cache.NewMemory(o)
		cr.ResponseCache = rc
	}
	return cr
}

// cachePolicy is the pipeline's policy of a cache: section.
func cachePolicy(c *config.Cache) *proxy.CachePolicy { return c.Policy().Effective() }
