package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/config"
)

func TestViewers(t *testing.T) {
	const base = "keys: [{name: app, key: app-key-0123456789abcdef0123456789}]\n" +
		"backends:\n  - {name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}\n" +
		"pools:\n  - {name: p, members: [{backend: a}]}\n" +
		"admin:\n  listen: 127.0.0.1:8081\n  key: admin-key-0123456789\n  viewers:\n"
	cases := []struct {
		name    string
		viewers string
		want    []string // each must appear in the error; none: valid
	}{
		{"two viewers", "    - {name: alice, key: alice-key-0123456789}\n    - {name: bob, key: bob-key-0123456789xx}\n", nil},
		{"no name", "    - {key: alice-key-0123456789}\n", []string{"admin.viewers[0].name: a viewer needs a name"}},
		{"the admin's name", "    - {name: admin, key: alice-key-0123456789}\n", []string{"admin.viewers[0].name: the name admin is the admin key's"}},
		{"name twice", "    - {name: alice, key: alice-key-0123456789}\n    - {name: alice, key: bob-key-0123456789xx}\n",
			[]string{`admin.viewers[1].name: viewer name "alice" is used twice`}},
		{"no key", "    - {name: alice}\n", []string{"admin.viewers[0].key: a viewer needs a key"}},
		{"short key", "    - {name: alice, key: short}\n", []string{"admin.viewers[0].key: key is shorter than 16 characters"}},
		{"the admin key", "    - {name: alice, key: admin-key-0123456789}\n", []string{"admin.viewers[0].key: key is the same as admin.key"}},
		{"a key twice", "    - {name: alice, key: alice-key-0123456789}\n    - {name: bob, key: alice-key-0123456789}\n",
			[]string{"admin.viewers[1].key: key is the same as admin.viewers[0].key"}},
		{"an operator", "    - {name: alice, key: alice-key-0123456789, role: operator}\n", nil},
		{"a viewer by its role", "    - {name: alice, key: alice-key-0123456789, role: viewer}\n", nil},
		{"an unknown role", "    - {name: alice, key: alice-key-0123456789}\n    - {name: bob, key: bob-key-0123456789xx, role: root}\n",
			[]string{`c.yaml:11: admin.viewers[1].role: role "root" is not viewer or operator`}},
		{"the admin role", "    - {name: alice, key: alice-key-0123456789, role: admin}\n",
			[]string{`c.yaml:10: admin.viewers[0].role: role "admin" is not viewer or operator`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("c.yaml", []byte(base+c.viewers), func(string) (string, bool) { return "", false })
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if n := len(cfg.Admin.Viewers); n == 0 || cfg.Admin.Viewers[0].Name != "alice" {
					t.Fatalf("viewers %+v", cfg.Admin.Viewers)
				}
				return
			}
			var ps config.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("err %v, want problems", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
			for _, k := range []string{"alice-key-0123456789", "admin-key-0123456789"} {
				if strings.Contains(err.Error(), k) {
					t.Errorf("error shows a key: %v", err)
				}
			}
		})
	}
}
