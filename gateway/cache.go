package gateway

import (
	"fmt"
	"net/http"

	"github.com/switchover-gw/switchover/cache"
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

// purgeCache serves POST /admin/cache/purge: the body {"pool": …,
// "key": …, "team": …} selects the entries to remove (every field given
// must match; {} removes all) from this replica's in-process cache. It
// answers {"purged": N}. Behind the admin API's guard (guardAdmin: its
// Host and Origin checks and its key), as every admin call.
func (g *Gateway) purgeCache(w http.ResponseWriter, r *http.Request) {
	var f cache.Filter
	if err := decode(r, &f); err != nil {
		writeJSON(w, http.StatusBadRequest, apiErr(err))
		return
	}
	n := 0
	if st := g.state.Load(); st != nil && st.Routes != nil && st.Routes.Cache != nil && st.Routes.Cache.Store != nil {
		n = st.Routes.Cache.Store.Purge(f)
	}
	g.admin("cache_purge", f.Pool, "", fmt.Sprintf("purged %d response cache entries (pool %q, key %q, team %q)", n, f.Pool, f.Key, f.Team), "", g.actor(r))
	writeJSON(w, http.StatusOK, map[string]int{"purged": n})
}
