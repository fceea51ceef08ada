package config

import (
	"fmt"
	"strings"

	"github.com/switchover-gw/switchover/models"
)

// Service is the name of the service a backend calls, for prices and
// reports: its preset (groq) if it has one, else its type (openai, azure,
// anthropic, gemini, foundry…).
func (b Backend) Service() string {
	if b.Preset != "" {
		return b.Preset
	}
	return b.Type
}

// warnModels warns of pools whose members serve known models that
// disagree on the context window or on tools, vision or thinking: a
// request one member takes may be refused by the member it fails over
// to. Each differing member is compared with the pool's first member
// whose model is known; members of unknown models are not compared.
func (c *Config) warnModels() Problems {
	var ws Problems
	for i, p := range c.Pools {
		first, firstAt := models.Model{}, -1
		for j, m := range p.Members {
			id := m.Model
			if id == "" {
				id = p.Name
			}
			got, ok := models.Lookup(id)
			if !ok {
				continue
			}
			if firstAt < 0 {
				first, firstAt = got, j
				continue
			}
			if diff := modelDiff(first, got); diff != "" {
				ws = append(ws, Problem{Path: fmt.Sprintf("pools[%d].members[%d]", i, j),
					Msg: fmt.Sprintf("model %s (%s) differs from pools[%d].members[%d]'s %s: %s; a request one member takes may be refused by the other",
						id, got.ID, i, firstAt, first.ID, diff)})
			}
		}
	}
	return ws
}

// modelDiff says how b differs from a, "" when it does not.
func modelDiff(a, b models.Model) string {
	var d []string
	if a.Context != b.Context {
		d = append(d, fmt.Sprintf("a context window of %d tokens, not %d", b.Context, a.Context))
	}
	for _, c := range []struct {
		name string
		a, b bool
	}{{"tools", a.Tools, b.Tools}, {"vision", a.Vision, b.Vision}, {"thinking", a.Thinking, b.Thinking}} {
		switch {
		case c.a && !c.b:
			d = append(d, "no "+c.name)
		case !c.a && c.b:
			d = append(d, c.name+" too")
		}
	}
	if len(d) == 0 {
		return ""
	}
	return strings.Join(d, ", ")
}
