package config

import (
	"fmt"
	"slices"
	"strings"
)

// StrategyNames returns the names pools[].strategy takes, the default
// first (route.Strategies has the same list; a gateway test checks they
// agree).
func StrategyNames() []string {
	return []string{"priority", "least_busy", "latency", "affinity", "headroom"}
}

// neverRetry are the caller's own errors, which another backend would
// answer the same way (and bill again).
var neverRetry = []int{400, 401, 403, 404, 413, 422}

// validatePools checks every pool. backends maps each backend's name to
// its type; pools holds every pool's name.
func (c *Config) validatePools(ps *Problems, backends map[string]string, pools map[string]bool) {
	models := map[string]string{} // model name -> the pool it selects
	for i, pl := range c.Pools {
		p := fmt.Sprintf("pools[%d]", i)
		pl.validateNames(ps, p, models)
		pl.validateMembers(ps, p, backends)
		pl.validateSettings(ps, p)
		pl.validateFallbacks(ps, p, pools)
		for _, code := range neverRetry {
			if pl.Retry.On.Has(code) {
				ps.add(p+".retry.on", "%d is the caller's own error and is never retried: another backend answers the same and bills again", code)
			}
		}
	}
}

// validateNames checks that the pool has a name and that neither it nor
// an alias already selects another pool; models maps the model names of
// the pools before it to their pool, and gets this pool's.
func (pl Pool) validateNames(ps *Problems, p string, models map[string]string) {
	if pl.Name == "" {
		ps.add(p+".name", "a pool needs a name (the model callers ask for)")
	}
	for j, n := range append([]string{pl.Name}, pl.Aliases...) {
		if n == "" {
			continue
		}
		path := p + ".name"
		if j > 0 {
			path = fmt.Sprintf("%s.aliases[%d]", p, j-1)
		}
		if other, dup := models[n]; dup {
			ps.add(path, "model name %q already selects pool %q", n, other)
		}
		models[n] = pl.Name
	}
}

// validateMembers checks the pool's members: at least one, each a
// configured backend (a key of backends) at most once, with a priority
// and a weight.
func (pl Pool) validateMembers(ps *Problems, p string, backends map[string]string) {
	if len(pl.Members) == 0 {
		ps.add(p+".members", "a pool needs at least one member")
	}
	inPool := map[string]bool{}
	for j, m := range pl.Members {
		mp := fmt.Sprintf("%s.members[%d]", p, j)
		if m.Backend == "" {
			ps.add(mp+".backend", "missing backend name")
		} else if _, known := backends[m.Backend]; !known {
			ps.add(mp+".backend", "no backend is named %q", m.Backend)
		} else if inPool[m.Backend] {
			ps.add(mp+".backend", "backend %q is in this pool twice", m.Backend)
		}
		inPool[m.Backend] = true
		if m.Priority < 1 {
			ps.add(mp+".priority", "must be 1 or more (1 is tried first)")
		}
		if m.Weight < 1 {
			ps.add(mp+".weight", "must be 1 or more")
		}
		if m.MaxTokens < 0 {
			ps.add(mp+".max_tokens", "must not be negative")
		}
	}
}

// validateSettings checks the pool's storm, retries, strategy, hedge,
// queue and retry budget.
func (pl Pool) validateSettings(ps *Problems, p string) {
	if pl.Storm.Failovers < 1 || pl.Storm.Window <= 0 {
		ps.add(p+".storm", "failovers and window must be positive")
	}
	if pl.Retry.Attempts < 1 {
		ps.add(p+".retry.attempts", "must be 1 or more (1 means no retry)")
	}
	if pl.Strategy != "" && !slices.Contains(StrategyNames(), pl.Strategy) {
		ps.add(p+".strategy", "%q is not a strategy: use one of %s", pl.Strategy, strings.Join(StrategyNames(), ", "))
	}
	if h := pl.Hedge; h != nil && (h.Share < 0 || h.Share > 1) {
		ps.add(p+".hedge.share", "%g is not a share in (0, 1]", h.Share)
	}
	if q := pl.Queue; q.MaxWait < 0 || q.MaxWaitLimit < 0 || q.MaxLength < 0 {
		ps.add(p+".queue", "max_wait, max_wait_limit and max_length must not be negative")
	} else if q.MaxWaitLimit > 0 && q.MaxWait > q.MaxWaitLimit {
		ps.add(p+".queue.max_wait", "%s is over max_wait_limit (%s)", q.MaxWait.D(), q.MaxWaitLimit.D())
	}
	if rb := pl.RetryBudget; rb.Ratio < 0 || rb.MinPerSecond < 0 || rb.Window < 0 {
		ps.add(p+".retry_budget", "ratio, min_per_second and window must not be negative")
	}
}

// validateFallbacks checks that fallback and context_fallback name another
// pool (one of pools).
func (pl Pool) validateFallbacks(ps *Problems, p string, pools map[string]bool) {
	for _, f := range []struct{ key, name string }{{"fallback", pl.Fallback}, {"context_fallback", pl.ContextFallback}} {
		switch {
		case f.name == "":
		case f.name == pl.Name:
			ps.add(p+"."+f.key, "a pool cannot fall back to itself")
		case !pools[f.name]:
			ps.add(p+"."+f.key, "no pool is named %q", f.name)
		}
	}
}
