package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// scaleYAML is a configuration with keys keys, pools pools (one member
// each) and aliases aliases on its first pool, over two backends.
func scaleYAML(keys, pools, aliases int) []byte {
	var y strings.Builder
	y.WriteString("listen: 127.0.0.1:0\nkeys:\n")
	for i := range keys {
		fmt.Fprintf(&y, "  - {name: key-%d, key: scale-key-%08d-0123456789abcdef0123}\n", i, i)
	}
	y.WriteString("backends:\n")
	for i := range 2 {
		fmt.Fprintf(&y, "  - {name: aoai-%d, type: azure, url: https://aoai-%d.openai.azure.com, api_key: secret-%d-abcdef, region: r%d}\n", i, i, i, i)
	}
	y.WriteString("pools:\n  - name: chat-prod\n    aliases: [")
	for i := range aliases {
		if i > 0 {
			y.WriteString(", ")
		}
		fmt.Fprintf(&y, "alias-%d", i)
	}
	y.WriteString("]\n    members: [{backend: aoai-0, priority: 1, model: gpt-4o}, {backend: aoai-1, priority: 2, model: gpt-4o}]\n")
	for i := 1; i < pools; i++ {
		fmt.Fprintf(&y, "  - {name: pool-%d, members: [{backend: aoai-%d, model: gpt-4o}]}\n", i, i%2)
	}
	return []byte(y.String())
}

// BenchmarkParseScale is the load of a configuration file (parse,
// defaults, validation) as it grows: keys, pools, aliases. What
// `switchover check` and a reload spend before building anything.
func BenchmarkParseScale(b *testing.B) {
	for _, tc := range []struct {
		name                 string
		keys, pools, aliases int
	}{
		{"base", 10, 1, 1},
		{"keys=100000", 100000, 1, 1},
		{"pools=10000", 10, 10000, 1},
		{"aliases=10000", 10, 1, 10000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			data := scaleYAML(tc.keys, tc.pools, tc.aliases)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("scale.yaml", data, os.LookupEnv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
