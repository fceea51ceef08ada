package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/cache/rediscache"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/proxy"
)

// spentCached records an answer the response cache gave (s.Cache "hit"
// or "coalesced"): a usage record at no cost and without tokens (no
// backend was called), and the cost of the call that made the answer,
// at list price, as switchover_cache_saved_usd_total and the record's
// Saved.
func (g *Gateway) spentCached(s proxy.Spend) (float64, bool) {
	saved := 0.0
	if u := s.Usage; u.Known {
		if price, ok := g.price(s.Backend, u.Model); ok {
			saved = price.Cost(u.Prompt, u.Cached, u.Completion)
			g.Metrics.CacheSaved(s.Pool, saved)
		}
	}
	rec := s
	rec.Usage.Prompt, rec.Usage.Completion, rec.Usage.Cached, rec.Usage.Reasoning = 0, 0, 0, 0
	rec.Usage.Estimated = false
	g.recordSaved(rec, 0, saved)
	return 0, true
}

// cacheRedisTimeout bounds each of the response cache's Redis calls,
// unless state.redis.timeout is shorter: past it a lookup is a miss.
const cacheRedisTimeout = 50 * time.Millisecond

// shareCache keeps the response cache's entries in the fleet's store when
// it is Redis (state.redis), on the store's connections and under its
// prefix, so that every replica reads what any one stored and a purge on
// one clears them all. A Redis that fails or is slow costs misses and
// dropped writes, never a call's error; the first failure after a
// success and the first success after a failure are logged. Coalescing
// stays in each replica (proxy.ResponseCache's flights).
func (g *Gateway) shareCache(sc config.State) {
	rs, ok := g.fleet.store.(*redisstore.Store)
	if !ok {
		return
	}
	timeout := cacheRedisTimeout
	if sc.Redis != nil && sc.Redis.Timeout > 0 {
		timeout = min(timeout, sc.Redis.Timeout.D())
	}
	log := g.Logger
	g.fleet.cache = rediscache.New(rediscache.Options{Client: rs.Client(), Prefix: rs.Prefix(), Timeout: timeout,
		OnError: g.Metrics.CacheStoreError,
		OnHealth: func(err error) {
			if err != nil {
				log.Warn("response cache: the shared state store (Redis) does not answer; cacheable calls are misses and answers are not stored until it does", "error", err)
			} else {
				log.Info("response cache: the shared state store (Redis) answers again; answers are shared by the fleet")
			}
		}})
	g.fleet.responses = &proxy.ResponseCache{Store: g.fleet.cache, Observer: g.Metrics, Clock: g.opts.Clock}
}

// purgeCache serves POST /admin/cache/purge: the body {"pool": …,
// "key": …, "team": …} selects the entries to remove (every field given
// must match; {} removes all) from the cache: this replica's in-process
// one, or the fleet's in Redis (state.redis), which every replica reads.
// It answers {"purged": N}, or 503 when Redis failed before the purge was
// done (the N entries counted in the admin log are gone; call again).
// Behind the admin API's guard (guardAdmin: its Host and Origin checks
// and its key), as every admin call.
func (g *Gateway) purgeCache(w http.ResponseWriter, r *http.Request) {
	var f cache.Filter
	if err := decode(r, &f); err != nil {
		writeJSON(w, http.StatusBadRequest, apiErr(err))
		return
	}
	n := 0
	var err error
	if st := g.state.Load(); st != nil && st.Routes != nil && st.Routes.Cache != nil && st.Routes.Cache.Store != nil {
		if p, ok := st.Routes.Cache.Store.(contextPurger); ok {
			n, err = p.PurgeContext(r.Context(), f)
		} else {
			n = st.Routes.Cache.Store.Purge(f)
		}
	}
	detail := fmt.Sprintf("purged %d response cache entries (pool %q, key %q, team %q)", n, f.Pool, f.Key, f.Team)
	if err != nil {
		g.Logger.Warn("response cache: a purge stopped short: the shared state store (Redis) failed", "purged", n, "error", err)
		detail += " before the shared store failed"
	}
	g.admin("cache_purge", f.Pool, "", detail, "", g.actor(r))
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, apiErr(fmt.Errorf("the shared cache store failed after %d entries were purged; call again", n)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}

// contextPurger is a store whose purge can fail (rediscache.Store).
type contextPurger interface {
	PurgeContext(ctx context.Context, f cache.Filter) (int, error)
}

var _ contextPurger = (*rediscache.Store)(nil)
