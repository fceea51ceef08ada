package config

import (
	"fmt"
	"time"
)

// Warnings are things in a valid configuration that will probably not do
// what was meant, such as an alias that an Azure member will send as a
// deployment name nobody configured. `switchover check` prints them; the
// gateway logs them at start and on reload. Each names its line.
func (c *Config) Warnings() Problems { return c.warnings }

// warn finds the warnings of a defaulted, valid configuration. Lines are
// filled in by Load.
func (c *Config) warn() Problems {
	var ws Problems
	types := map[string]string{}
	for _, b := range c.Backends {
		types[b.Name] = b.Type
	}
	for i, p := range c.Pools {
		for j, m := range p.Members {
			if m.Model != "" || types[m.Backend] != TypeAzure {
				continue
			}
			// An Azure member without a model asks for the deployment the
			// caller named: the pool's name, or any alias.
			for k, a := range p.Aliases {
				ws = append(ws, Problem{
					Path: fmt.Sprintf("pools[%d].aliases[%d]", i, k),
					Msg: fmt.Sprintf("a request for %q is sent to azure backend %s as deployment %q, since pools[%d].members[%d] sets no model; set its model to the deployment's name",
						a, m.Backend, a, i, j),
				})
			}
		}
	}
	if u := c.UnknownPaths; u != nil && len(u.Paths) == 0 {
		ws = append(ws, Problem{Path: "unknown_paths",
			Msg: fmt.Sprintf("no paths are listed, so backend %s takes none (it used to take every path); list those to forward in unknown_paths.paths, such as [assistants, threads], or [\"*\"] for all but the provider's admin APIs, realtime sub-paths and stored chat completions", u.Backend)})
	}
	ws = append(ws, c.warnTenancy()...)
	ws = append(ws, c.warnEndUserBudgets()...)
	ws = append(ws, c.warnEndUserRatesPerReplica()...)
	ws = append(ws, c.warnModels()...)
	ws = append(ws, c.warnSSO()...)
	return append(ws, c.warnReplicasWithoutState()...)
}

// warnReplicasWithoutState warns of a shared store (PostgreSQL, so
// probably several replicas) without state.redis: budgets and limits are
// then shared late or not at all.
func (c *Config) warnReplicasWithoutState() Problems {
	if c.Store == nil || c.Store.Postgres == "" || c.State.Redis != nil {
		return nil
	}
	refresh := c.Store.Refresh.D()
	if refresh <= 0 {
		refresh = 5 * time.Second
	}
	return Problems{{Path: "store.postgres",
		Msg: fmt.Sprintf("without state.redis, replicas sharing this store see each other's spend only when they read it back (store.refresh, %s): "+
			"a budget can overshoot by what the other replicas spend in that time plus their requests in flight "+
			"(two busy replicas took a $0.05 budget to $0.082), and rpm and tpm hold per replica (N replicas admit N times each); "+
			"add state.redis to share limits and budgets (see docs/operations.md, \"Several replicas\"), or ignore this with one replica", refresh)}}
}
