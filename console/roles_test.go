package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
)

// operatorKey is an admin.viewers key with role operator, added to the
// test configuration by withOperator.
const operatorKey = "operator-key-0123456789ab"

// withOperator adds olga, an operator, to e's configuration.
func withOperator(e *env) {
	e.gw.mu.Lock()
	defer e.gw.mu.Unlock()
	e.gw.cfg.Admin.Viewers = append(e.gw.cfg.Admin.Viewers, config.Viewer{Name: "olga", Key: operatorKey, Role: config.RoleOperator})
}

// Every state-changing route, for each role: a viewer acts on nothing,
// an operator on the pools only, an admin on everything; no session is
// 401 and another origin 403 whatever the role.
func TestRolesOnEveryActionRoute(t *testing.T) {
	e := newKeyEnv(t)
	withOperator(e.env)
	k, _, err := ledger.NewKey(t.Context(), e.gw.store, ledger.Key{Name: "laptop", RPM: 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	type route struct {
		path string
		form url.Values
		need string
	}
	act := func(kind string) route {
		return route{"/console/actions", url.Values{"action": {kind}, "pool": {"chat"}, "backend": {"uksouth"}, "priority": {"2"}}, RoleOperator}
	}
	routes := []route{
		act(ActDrain), act(ActRestore), act(ActOpen), act(ActClose), act(ActSetMember), act(ActResetMember),
		{"/console/actions", url.Values{"action": {ActReload}}, RoleAdmin},
		{"/console/keys/create", url.Values{"name": {"new"}}, RoleAdmin},
		{"/console/keys/edit", url.Values{"id": {k.ID}, "rpm": {"20"}}, RoleAdmin},
		{"/console/teams/put", url.Values{"name": {"core"}}, RoleAdmin},
		{"/console/keys/rotate", url.Values{"id": {k.ID}}, RoleAdmin},
		{"/console/keys/revoke", url.Values{"id": {k.ID}}, RoleAdmin},
	}
	type signedIn struct {
		role string
		c    *http.Client
		csrf string
	}
	var users []signedIn
	for _, u := range []struct{ role, key string }{{RoleViewer, viewerKey}, {RoleOperator, operatorKey}, {RoleAdmin, adminKey}} {
		c, csrf := e.login(u.key)
		if _, page := e.do(c, "GET", "/console/", nil); !strings.Contains(page, `<span class="role">`+u.role+`</span>`) {
			t.Fatalf("%s signed in with another role:\n%s", u.role, page)
		}
		users = append(users, signedIn{u.role, c, csrf})
	}
	for _, rt := range routes {
		name := rt.path + " " + rt.form.Get("action")
		with := func(csrf string) url.Values {
			f := url.Values{"csrf": {csrf}}
			for k, v := range rt.form {
				f[k] = v
			}
			return f
		}
		admin := users[2]
		if resp, _ := e.do(e.client(), "POST", rt.path, with(admin.csrf)); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a session: %d, want 401", name, resp.StatusCode)
		}
		for _, u := range users {
			if resp, _ := e.do(u.c, "POST", rt.path, with(u.csrf), "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s by %s from another origin: %d, want 403", name, u.role, resp.StatusCode)
			}
		}
		for _, u := range users {
			resp, body := e.do(u.c, "POST", rt.path, with(u.csrf))
			want := http.StatusSeeOther
			if !allows(u.role, rt.need) {
				want = http.StatusForbidden
			}
			if resp.StatusCode != want {
				t.Errorf("%s by %s: %d, want %d\n%s", name, u.role, resp.StatusCode, want, body)
			}
		}
	}
	// What reached the gateway: the operator's and the admin's pool
	// actions, the admin's reload; nothing of the viewer's.
	got := strings.Join(e.gw.actions(), "\n")
	for _, who := range []string{"olga", "admin"} {
		for _, kind := range []string{ActDrain, ActRestore, ActOpen, ActClose, ActSetMember, ActResetMember} {
			if !strings.Contains(got, who+" "+kind+" ") {
				t.Errorf("no %s by %s in\n%s", kind, who, got)
			}
		}
	}
	if strings.Contains(got, "alice") || strings.Contains(got, "olga reload") || !strings.Contains(got, "admin reload") {
		t.Errorf("actions taken:\n%s", got)
	}
	for _, a := range e.kg.audit() {
		if !strings.HasSuffix(a, "| admin in the console from 127.0.0.1") {
			t.Errorf("a key change not by the admin: %s", a)
		}
	}
	if len(e.kg.audit()) != 5 {
		t.Errorf("key changes %q, want the admin's 5", e.kg.audit())
	}
	// Logout is for every role.
	for _, u := range users {
		if resp, _ := e.do(u.c, "POST", "/console/logout", url.Values{"csrf": {u.csrf}}); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("logout of %s: %d", u.role, resp.StatusCode)
		}
	}
}

// An operator's pages offer the pool actions and nothing an admin's
// role is needed for: no reload, no key forms.
func TestOperatorSeesPoolActionsOnly(t *testing.T) {
	e := newKeyEnv(t)
	withOperator(e.env)
	c, _ := e.login(operatorKey)
	if _, page := e.do(c, "GET", "/console/", nil); !strings.Contains(page, `data-act="drain"`) || strings.Contains(page, "signed in as a viewer") {
		t.Fatalf("an operator's overview has no drain button:\n%s", page)
	}
	if _, page := e.do(c, "GET", "/console/config", nil); strings.Contains(page, `data-act="reload"`) {
		t.Fatal("an operator's config page has the reload button")
	}
	if _, page := e.do(c, "GET", "/console/keys", nil); strings.Contains(page, "key-create") || strings.Contains(page, "team-put") {
		t.Fatal("an operator's keys page has key forms")
	}
}
