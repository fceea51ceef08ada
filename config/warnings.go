package config

import "fmt"

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
	return append(ws, c.warnTenancy()...)
}
