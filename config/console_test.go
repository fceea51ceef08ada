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

func TestSSO(t *testing.T) {
	const base = "keys: [{name: app, key: app-key-0123456789abcdef0123456789}]\n" +
		"backends:\n  - {name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}\n" +
		"pools:\n  - {name: p, members: [{backend: a}]}\n" +
		"admin:\n  listen: 127.0.0.1:8081\n  key: admin-key-0123456789\n  allowed_hosts: [gw.example.com]\n  sso:\n"
	const entra = "    name: Entra ID\n" +
		"    issuer: https://login.microsoftonline.com/7d2c1a6e-0000-4000-8000-000000000001/v2.0\n" +
		"    client_id: 3f1e0000-0000-4000-8000-00000000c0de\n" +
		"    client_secret: ${SSO_SECRET}\n" +
		"    redirect_url: https://gw.example.com/console/sso/callback\n"
	env := func(k string) (string, bool) {
		if k == "SSO_SECRET" {
			return "sso-client-secret-0123456789", true
		}
		return "", false
	}
	cases := []struct {
		name string
		sso  string
		want []string // each must appear in the error; none: valid
	}{
		{"entra with app roles", entra + "    roles_claim: roles\n    admin: [Switchover.Admin]\n    operator: [Switchover.Operator]\n", nil},
		{"default role only", entra + "    default_role: viewer\n", nil},
		{"local provider over http", "    issuer: http://127.0.0.1:5556/dex\n    client_id: c\n    redirect_url: http://127.0.0.1:8081/console/sso/callback\n    viewer: [g]\n", nil},
		{"no issuer, client or redirect", "    viewer: [g]\n", []string{
			"c.yaml:11: admin.sso.issuer: single sign-on needs the provider's issuer URL",
			"admin.sso.client_id: single sign-on needs the console's client id",
			"admin.sso.redirect_url: single sign-on needs the console's callback URL"}},
		{"http issuer elsewhere", "    issuer: http://idp.example.com\n    client_id: c\n    redirect_url: https://gw.example.com/console/sso/callback\n    viewer: [g]\n",
			[]string{`c.yaml:11: admin.sso.issuer: "http://idp.example.com" is not an https URL`}},
		{"wrong callback path", "    issuer: https://idp.example.com\n    client_id: c\n    redirect_url: https://gw.example.com/callback\n    viewer: [g]\n",
			[]string{`c.yaml:13: admin.sso.redirect_url: the path must be /console/sso/callback`}},
		{"callback host not answered", "    issuer: https://idp.example.com\n    client_id: c\n    redirect_url: https://other.example.com/console/sso/callback\n    viewer: [g]\n",
			[]string{`c.yaml:13: admin.sso.redirect_url: the admin listener does not answer to "other.example.com": add it to admin.allowed_hosts`}},
		{"nobody mapped", entra, []string{"admin.sso: nobody could sign in"}},
		{"admin by default", entra + "    default_role: admin\n", []string{"c.yaml:16: admin.sso.default_role: admin cannot be the default role"}},
		{"unknown default", entra + "    default_role: root\n", []string{`c.yaml:16: admin.sso.default_role: "root" is not viewer, operator or none`}},
		{"empty value", entra + "    operator: [ops, \"\"]\n", []string{"c.yaml:16: admin.sso.operator[1]: an empty value would match nothing"}},
		{"scope of two words", entra + "    scopes: [openid, \"a b\"]\n    viewer: [g]\n", []string{"c.yaml:16: admin.sso.scopes[1]: a scope is one word"}},
		{"unknown field", entra + "    group_claim: groups\n", []string{"group_claim"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("c.yaml", []byte(base+c.sso), env)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Admin.SSO == nil || cfg.Admin.SSO.Issuer == "" {
					t.Fatalf("sso %+v", cfg.Admin.SSO)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "sso-client-secret") {
				t.Errorf("error shows the client secret: %v", err)
			}
		})
	}
}

func TestSSOWarnsOfPlainHTTP(t *testing.T) {
	const base = "keys: [{name: app, key: app-key-0123456789abcdef0123456789}]\n" +
		"backends:\n  - {name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}\n" +
		"pools:\n  - {name: p, members: [{backend: a}]}\n" +
		"admin:\n  listen: 0.0.0.0:8081\n  key: admin-key-0123456789\n  allowed_hosts: [gw.example.com]\n  sso:\n" +
		"    issuer: https://idp.example.com\n    client_id: c\n    viewer: [g]\n"
	for _, tc := range []struct {
		redirect string
		warn     bool
	}{
		{"http://gw.example.com:8081/console/sso/callback", true},
		{"https://gw.example.com:8081/console/sso/callback", false},
		{"http://127.0.0.1:8081/console/sso/callback", false},
	} {
		cfg, err := config.Parse("c.yaml", []byte(base+"    redirect_url: "+tc.redirect+"\n"), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range cfg.Warnings() {
			got = append(got, w.String())
		}
		warned := strings.Contains(strings.Join(got, "\n"), "c.yaml:14: admin.sso.redirect_url: the callback is plain http on gw.example.com")
		if warned != tc.warn {
			t.Errorf("%s: warnings %q, want a warning: %v", tc.redirect, got, tc.warn)
		}
	}
}
