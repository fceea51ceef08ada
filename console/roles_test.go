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
			if resp, _ := e.do(u.c, "POST", rt.path, with("")); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s by %s without the CSRF token: %d, want 403", name, u.role, resp.StatusCode)
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

// An operator, like a viewer, sees no end users in the request log: not
// in the list, not in a request's page, not through the text search.
func TestOperatorSeesNoEndUsers(t *testing.T) {
	e, _ := requestLogEnv(t)
	withOperator(e)
	admin, _ := e.login(adminKey)
	if _, page := e.do(admin, "GET", "/console/requests/r07", nil); !strings.Contains(page, "alice@example.com") {
		t.Fatal("an admin does not see the end user: the test proves nothing")
	}
	if _, page := e.do(admin, "GET", "/console/requests?q=alice%40example.com", nil); len(rowIDs(page)) != 1 {
		t.Fatalf("an admin's search for the end user finds %v", rowIDs(page))
	}
	op, _ := e.login(operatorKey)
	for _, p := range []string{"/console/requests", "/console/requests/r07"} {
		resp, page := e.do(op, "GET", p, nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(page, "alice@example.com") {
			t.Errorf("%s: %d, shows the end user to an operator: %v", p, resp.StatusCode, strings.Contains(page, "alice@example.com"))
		}
	}
	// (The search's text is shown back in its field, which is no leak.)
	if _, page := e.do(op, "GET", "/console/requests?q=alice%40example.com", nil); len(rowIDs(page)) != 0 {
		t.Errorf("an operator's text search matches end users: %v", rowIDs(page))
	}
}

// Without a provider that answers, "Sign in with" says so on the login
// page (502) and the key form still works.
func TestSSOProviderDown(t *testing.T) {
	e := newSSOEnv(t)
	e.gw.mu.Lock()
	e.gw.cfg.Admin.SSO.Issuer = "http://127.0.0.1:1"
	e.gw.mu.Unlock()
	resp, page := e.do(e.client(), "GET", "/console/sso/start", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(page, "the identity provider did not answer") || !strings.Contains(page, `name="key"`) {
		t.Fatalf("start with the provider down: %d\n%s", resp.StatusCode, page)
	}
	for _, k := range resp.Cookies() {
		if k.Name == ssoCookie {
			t.Fatal("a sign-in is pending though the provider is down")
		}
	}
	if c, _ := e.login(adminKey); e.signedIn(c) != "admin admin" {
		t.Fatal("the admin key does not sign in while the provider is down")
	}
}

// A session is checked against the configuration in force at each
// request: a role changed in the file applies at once, a key removed or
// replaced ends the sessions it signed in, and so does a single sign-on
// removed or a person's groups no longer mapped.
func TestSessionFollowsTheConfiguration(t *testing.T) {
	e := newSSOEnv(t)
	withOperator(e.env)
	change := func(f func(a *config.Admin)) {
		e.gw.mu.Lock()
		defer e.gw.mu.Unlock()
		cfg := *e.gw.cfg
		a := *cfg.Admin
		a.Viewers = append([]config.Viewer(nil), a.Viewers...)
		if a.SSO != nil {
			sso := *a.SSO
			a.SSO = &sso
		}
		f(&a)
		cfg.Admin = &a
		e.gw.cfg = &cfg
	}
	olga, csrf := e.login(operatorKey)
	admin, _ := e.login(adminKey)
	otto, _, _ := e.signIn("otto")
	ada, _, _ := e.signIn("ada")

	change(func(a *config.Admin) { a.Viewers[1].Role = config.RoleViewer })
	if got := e.signedIn(olga); got != "olga viewer" {
		t.Fatalf("olga after her role became viewer: %q", got)
	}
	if resp, _ := e.do(olga, "POST", "/console/actions", url.Values{"action": {"drain"}, "backend": {"uksouth"}, "csrf": {csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("olga's drain as a viewer: %d, want 403", resp.StatusCode)
	}
	change(func(a *config.Admin) { a.Viewers = a.Viewers[:1] })
	if got := e.signedIn(olga); got != "" {
		t.Fatalf("olga's key was removed, and she is still signed in as %q", got)
	}
	if got := e.signedIn(admin); got != "admin admin" {
		t.Fatalf("the admin was signed out by another key's removal: %q", got)
	}
	change(func(a *config.Admin) { a.Key = "admin-key-rotated-0123456789" })
	if got := e.signedIn(admin); got != "" {
		t.Fatalf("admin.key was replaced, and its session is still signed in as %q", got)
	}
	if got := e.signedIn(otto); got != "otto@example.com operator" {
		t.Fatalf("otto: %q", got)
	}
	change(func(a *config.Admin) { a.SSO.Operator = nil; a.SSO.Viewer = append(a.SSO.Viewer, "g-oncall") })
	if got := e.signedIn(otto); got != "otto@example.com viewer" {
		t.Fatalf("otto after his group became viewer's: %q", got)
	}
	change(func(a *config.Admin) { a.SSO.Viewer = []string{"g-staff"} })
	if got := e.signedIn(otto); got != "" {
		t.Fatalf("otto's group maps to no role, and he is still signed in as %q", got)
	}
	if got := e.signedIn(ada); got != "ada@example.com admin" {
		t.Fatalf("ada: %q", got)
	}
	change(func(a *config.Admin) { a.SSO = nil })
	if got := e.signedIn(ada); got != "" {
		t.Fatalf("single sign-on was removed, and ada is still signed in as %q", got)
	}
}

// An open overview's event stream ends too when the configuration takes
// its key away.
func TestStreamEndsWhenTheKeyIsRemoved(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	ctx, resp := e.openStream(t, c)
	e.gw.mu.Lock()
	cfg := *e.gw.cfg
	a := *cfg.Admin
	a.Viewers = nil
	cfg.Admin = &a
	e.gw.cfg = &cfg
	e.gw.mu.Unlock()
	endsSignedOut(t, ctx, resp, "when the viewer's key was removed")
}
