package scaleconf_test

import (
	"fmt"
	"testing"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/scaleconf"
)

// TestShapesAreValidAndSized: each shape is a configuration the gateway
// accepts, with as many members, pools, aliases and keys as it says, the
// members in tiers or flat as asked and each member's model as given.
func TestShapesAreValidAndSized(t *testing.T) {
	opts := scaleconf.Options{
		Head:       "listen: 127.0.0.1:0\n",
		AppKey:     "${TEST_APP_KEY}",
		BackendKey: func(i int) string { return fmt.Sprintf("upstream-key-%d", i) },
	}
	env := func(name string) (string, bool) {
		return map[string]string{"TEST_APP_KEY": "app-key-0123456789abcdef0123456789"}[name], name == "TEST_APP_KEY"
	}
	for _, tc := range []struct {
		s     scaleconf.Shape
		model string
		prios []int // of the first members
	}{
		{scaleconf.Shape{Members: 1, Pools: 1, Keys: 1}, "", []int{1}},
		{scaleconf.Shape{Members: 6, Pools: 3, Aliases: 2, Keys: 5}, "gpt-4o", []int{1, 2, 3, 4, 5, 2}},
		{scaleconf.Shape{Members: 4, Flat: true, Pools: 1, Aliases: 1, Keys: 1}, "", []int{1, 1, 1, 1}},
	} {
		o := opts
		o.MemberModel = tc.model
		y := tc.s.YAML("http://127.0.0.1:9", o)
		cfg, err := config.Parse("scale.yaml", []byte(y), env)
		if err != nil {
			t.Fatalf("%+v: %v\n%s", tc.s, err, y)
		}
		if len(cfg.Keys) != tc.s.Keys || len(cfg.Pools) != tc.s.Pools || len(cfg.Backends) != tc.s.Backends() {
			t.Errorf("%+v: %d keys, %d pools, %d backends", tc.s, len(cfg.Keys), len(cfg.Pools), len(cfg.Backends))
		}
		p := cfg.Pools[0]
		if p.Name != "chat-prod" || len(p.Aliases) != tc.s.Aliases || len(p.Members) != tc.s.Members {
			t.Errorf("%+v: pool %s with %d aliases and %d members", tc.s, p.Name, len(p.Aliases), len(p.Members))
		}
		if m := tc.s.Model(); m != "chat-prod" && m != p.Aliases[len(p.Aliases)-1] {
			t.Errorf("%+v: model %q is not the last alias", tc.s, m)
		}
		for i, want := range tc.prios {
			m := p.Members[i]
			if m.Priority != want || m.Model != tc.model {
				t.Errorf("%+v: member %d at priority %d with model %q, want %d and %q", tc.s, i, m.Priority, m.Model, want, tc.model)
			}
			if tc.s.Flat && m.Weight != 1+i%3 {
				t.Errorf("%+v: member %d weighs %d", tc.s, i, m.Weight)
			}
		}
		if k := cfg.Backends[1].APIKey; k != "upstream-key-1" {
			t.Errorf("%+v: backend 1's key %q", tc.s, k)
		}
	}
}
