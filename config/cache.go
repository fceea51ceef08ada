package config

import (
	"fmt"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
)

// Cache turns on the exact response cache and request coalescing for a
// pool (pools[].cache) or a key (keys[].cache, which wins over its
// pools'). Unset: off, the default. See docs/cache.md.
type Cache struct {
	// TTL is how long an answer is replayed after it was stored. Zero
	// (the default) stores nothing: with Coalesce, identical calls in
	// flight still share one answer. Risk: a cached answer is the same
	// answer every time, whatever the temperature; a TTL longer than
	// the freshness the callers expect replays stale answers.
	TTL Duration `yaml:"ttl"`
	// Coalesce makes identical calls that arrive while the first is in
	// flight wait for its answer instead of each calling a backend.
	// Default true.
	Coalesce *bool `yaml:"coalesce"`
	// MaxWait bounds a coalesced call's wait for the first call's
	// answer; past it, it calls for itself. Default 2m.
	MaxWait Duration `yaml:"max_wait"`
	// MaxEntry bounds one stored answer (and one shared with waiting
	// calls): a larger one is passed on and not kept. Default 1MiB.
	MaxEntry Size `yaml:"max_entry"`
	// Shared shares the pool's entries between every caller: a team's
	// answer is replayed to another team. Default false: entries are
	// scoped to the caller's team, or its key without a team. Risk: the
	// answers of one tenant's prompts reach another that sends the same
	// prompt. Only on a pool's cache.
	Shared bool `yaml:"shared"`
}

// CacheStore is the response cache's storage (cache: at the top level).
type CacheStore struct {
	// MaxMemory bounds the in-process cache's entries, in bytes. Default
	// 64MiB; entries past it are evicted, the least used first.
	MaxMemory Size `yaml:"max_memory"`
}

// Cache defaults.
const (
	DefaultCacheMaxWait   = cachepolicy.DefaultMaxWait
	DefaultCacheMaxEntry  = cachepolicy.DefaultMaxEntry
	DefaultCacheMaxMemory = 64 << 20
)

// Policy is c as the policy that the admin API's stored keys write too
// (internal/cachepolicy), which checks both alike; nil for a nil c.
func (c *Cache) Policy() *cachepolicy.Policy {
	if c == nil {
		return nil
	}
	return &cachepolicy.Policy{TTL: c.TTL.D(), Coalesce: c.Coalesce, MaxWait: c.MaxWait.D(), MaxEntry: int64(c.MaxEntry), Shared: c.Shared}
}

// CoalesceOn reports whether c coalesces identical calls in flight.
func (c *Cache) CoalesceOn() bool { return c.Policy().CoalesceOn() }

// On reports whether c stores or coalesces anything.
func (c *Cache) On() bool { return c.Policy().On() }

// validate checks a cache section at path p; onKey says it is a key's.
// The checks are cachepolicy's, the admin API's for stored keys.
func (c *Cache) validate(ps *Problems, p string, onKey bool) {
	for _, pr := range c.Policy().Check(onKey) {
		at := p
		if pr.Field != "" {
			at += "." + pr.Field
		}
		ps.add(at, "%s", pr.Message)
	}
}

// validateCache checks the cache sections of the pools and keys and the
// cache store.
func (c *Config) validateCache(ps *Problems) {
	for i := range c.Pools {
		c.Pools[i].Cache.validate(ps, fmt.Sprintf("pools[%d].cache", i), false)
	}
	for i := range c.Keys {
		c.Keys[i].Cache.validate(ps, fmt.Sprintf("keys[%d].cache", i), true)
	}
	max := c.Cache.MaxMemory
	if max == 0 {
		max = DefaultCacheMaxMemory
	}
	for i, pl := range c.Pools {
		if pl.Cache != nil && pl.Cache.TTL > 0 && pl.Cache.MaxEntry > max {
			ps.add(fmt.Sprintf("pools[%d].cache.max_entry", i), "%d bytes is over cache.max_memory (%d): no answer would be kept", pl.Cache.MaxEntry, max)
		}
	}
}
