// Package scaleconf writes the configurations that check that a
// request's cost does not grow with the configuration (issue 26): the
// README's "Use it" shape (azure backends, the first with its breaker and
// timeouts, a pool with retries, keys) grown in one dimension. The
// bench's scale rows (`switchover bench`) and the gateway's scale
// benchmarks and allocation test write theirs here, so that both measure
// the same shapes.
package scaleconf

import (
	"fmt"
	"strings"
)

// Shape is a configuration's size in each dimension.
type Shape struct {
	// Members of the pool called, chat-prod: the first at priority 1 and
	// the others at priorities 2 to 5 ("tiers"), or, when Flat, all at
	// priority 1 with weights 1 to 3. There are at least two backends.
	Members int
	Flat    bool
	// Pools in all, the called one included; each other has one member.
	Pools int
	// Aliases of the pool called: alias-0 to alias-(Aliases-1).
	Aliases int
	// Keys in all, the caller's (app-team) included.
	Keys int
}

// Options are what the users of a Shape write differently.
type Options struct {
	// Head is the file's start: listen, server, log, admin.
	Head string
	// AppKey is the caller's key (app-team's): a value or a ${VARIABLE}.
	AppKey string
	// BackendKey is backend i's api_key.
	BackendKey func(i int) string
	// MemberModel, if set, is the model each member of the pool called
	// sends.
	MemberModel string
}

// Backends is how many backends s has.
func (s Shape) Backends() int { return max(s.Members, 2) }

// Model is the called pool's last alias, or its name without aliases:
// what requests ask for, so that the lookup goes through the aliases.
func (s Shape) Model() string {
	if s.Aliases == 0 {
		return "chat-prod"
	}
	return fmt.Sprintf("alias-%d", s.Aliases-1)
}

// YAML is the configuration file of s, its backends at upstream.
func (s Shape) YAML(upstream string, o Options) string {
	var y strings.Builder
	y.WriteString(o.Head)
	fmt.Fprintf(&y, "keys:\n  - name: app-team\n    key: %s\n", o.AppKey)
	for i := 1; i < s.Keys; i++ {
		fmt.Fprintf(&y, "  - {name: key-%d, key: scale-key-%08d-0123456789abcdef0123}\n", i, i)
	}
	y.WriteString("backends:\n")
	for i := range s.Backends() {
		fmt.Fprintf(&y, "  - name: aoai-%04d\n    type: azure\n    url: %s\n    api_key: %s\n    region: region-%d\n", i, upstream, o.BackendKey(i), i)
		if i == 0 {
			y.WriteString("    first_byte_timeout: 60s\n    stream_first_byte_timeout: 10s\n")
			y.WriteString("    breaker: {failures: 5, window: 30s, statuses: [429, \"500-599\"], trip: 60s, accept_retry_after: true}\n")
		}
	}
	y.WriteString("pools:\n  - name: chat-prod\n")
	if s.Aliases > 0 {
		y.WriteString("    aliases: [")
		for i := range s.Aliases {
			if i > 0 {
				y.WriteString(", ")
			}
			fmt.Fprintf(&y, "alias-%d", i)
		}
		y.WriteString("]\n")
	}
	y.WriteString("    retry: {attempts: 3}\n    members:\n")
	model := ""
	if o.MemberModel != "" {
		model = ", model: " + o.MemberModel
	}
	for i := range s.Members {
		prio, weight := 1, 1
		switch {
		case s.Flat:
			weight = 1 + i%3
		case i > 0:
			prio = 2 + (i-1)%4
		}
		fmt.Fprintf(&y, "      - {backend: aoai-%04d, priority: %d, weight: %d%s}\n", i, prio, weight, model)
	}
	for i := 1; i < s.Pools; i++ {
		fmt.Fprintf(&y, "  - name: pool-%d\n    members: [{backend: aoai-%04d}]\n", i, i%s.Backends())
	}
	return y.String()
}
