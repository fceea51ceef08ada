package console

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/oidctest"
)

const (
	ssoClientID     = "switchover-console"
	ssoClientSecret = "sso-client-secret-0123456789abcdef"
)

// auditGateway is the fake gateway keeping what the console records by
// actor, as the gateway's audit trail does.
type auditGateway struct {
	*fakeGateway
	mu   sync.Mutex
	rows []string // kind | actor | detail
}

var _ ActorRecorder = (*auditGateway)(nil)

func (a *auditGateway) Record(kind, detail string) { a.RecordBy(kind, "", detail) }
func (a *auditGateway) RecordBy(kind, actor, detail string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rows = append(a.rows, kind+" | "+actor+" | "+detail)
}

func (a *auditGateway) audit() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.rows...)
}

// ssoEnv is a console with admin.sso pointing at a test provider.
type ssoEnv struct {
	*env
	ag   *auditGateway
	idp  *oidctest.Provider
	logs *syncBuffer
	// seen is every page and header the tests' clients were sent.
	seenMu sync.Mutex
	seen   strings.Builder
}

// The test provider's people: one per role, one the mapping does not
// know, and one whose roles come as a single string (Entra's app roles
// with one role assigned).
var ssoUsers = map[string]oidctest.User{
	"ada":   {Subject: "s-ada", Email: "ada@example.com", Claims: map[string]any{"groups": []string{"g-staff", "g-admins"}}},
	"otto":  {Subject: "s-otto", Email: "otto@example.com", Claims: map[string]any{"groups": []string{"g-oncall"}}},
	"vera":  {Subject: "s-vera", PreferredUsername: "vera@corp.example", Claims: map[string]any{"groups": []string{"g-staff"}}},
	"mallo": {Subject: "s-mallo", Email: "mallory@example.com", Claims: map[string]any{"groups": []string{"g-contractors"}}},
	"sam":   {Subject: "s-sam-0001", Claims: map[string]any{"groups": "g-oncall"}},
}

func newSSOEnv(t *testing.T) *ssoEnv {
	t.Helper()
	f := newFake(t)
	ag := &auditGateway{fakeGateway: f}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(t.Context(), ag, Options{Interval: 20 * time.Millisecond, Logger: log})
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	idp := oidctest.Start(t, ssoClientID, ssoClientSecret, srv.URL+"/console/sso/callback", ssoUsers)
	f.cfg.Admin.SSO = &config.SSO{Name: "Test IdP", Issuer: idp.Issuer, ClientID: ssoClientID, ClientSecret: ssoClientSecret,
		RedirectURL: srv.URL + "/console/sso/callback", Admin: []string{"g-admins"}, Operator: []string{"g-oncall"}, Viewer: []string{"g-staff"}}
	return &ssoEnv{env: &env{t: t, gw: f, c: c, srv: srv}, ag: ag, idp: idp, logs: logs}
}

// get is a GET of an absolute URL, its answer kept for the leak checks.
func (e *ssoEnv) get(c *http.Client, u string) (*http.Response, string) {
	e.t.Helper()
	path, _ := strings.CutPrefix(u, e.srv.URL)
	var resp *http.Response
	var body string
	if path != u {
		resp, body = e.do(c, "GET", path, nil)
	} else {
		r, err := c.Get(u)
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		resp, body = r, string(b)
	}
	e.seenMu.Lock()
	for k, v := range resp.Header {
		e.seen.WriteString(k + ": " + strings.Join(v, ", ") + "\n")
	}
	e.seen.WriteString(body)
	e.seenMu.Unlock()
	return resp, body
}

// toCallback starts a sign-in as user in c and returns the URL the
// provider sends the browser back to (not yet visited).
func (e *ssoEnv) toCallback(c *http.Client, user string) string {
	e.t.Helper()
	e.idp.SignInAs(user)
	resp, _ := e.get(c, e.srv.URL+"/console/sso/start")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), e.idp.Issuer+"/authorize?") {
		e.t.Fatalf("start: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q, _ := url.Parse(resp.Header.Get("Location"))
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if len(q.Query().Get(k)) < 32 {
			e.t.Fatalf("authorization request without a long %s: %s", k, q)
		}
	}
	if q.Query().Get("code_challenge_method") != "S256" || q.Query().Get("redirect_uri") != e.srv.URL+"/console/sso/callback" {
		e.t.Fatalf("authorization request %s", q)
	}
	resp, _ = e.get(c, resp.Header.Get("Location"))
	back := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(back, e.srv.URL+"/console/sso/callback?") {
		e.t.Fatalf("authorize: %d to %q", resp.StatusCode, back)
	}
	return back
}

// signIn signs in as user and returns the browser, the callback's answer
// and its page.
func (e *ssoEnv) signIn(user string) (*http.Client, *http.Response, string) {
	e.t.Helper()
	c := e.client()
	resp, page := e.get(c, e.toCallback(c, user))
	return c, resp, page
}

// signedIn reports the session's user and role from the overview, or
// "" if c has none.
func (e *ssoEnv) signedIn(c *http.Client) string {
	e.t.Helper()
	resp, page := e.get(c, e.srv.URL+"/console/")
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	_, after, _ := strings.Cut(page, `id="who">`)
	who, _, _ := strings.Cut(after, "</span></span>")
	return strings.Replace(who, ` <span class="role">`, " ", 1)
}

func TestSSOSignInPerRole(t *testing.T) {
	e := newSSOEnv(t)
	if _, page := e.get(e.client(), e.srv.URL+"/console/login"); !strings.Contains(page, `href="/console/sso/start"`) || !strings.Contains(page, "Sign in with Test IdP") || !strings.Contains(page, `name="key"`) {
		t.Fatalf("the login page lacks the sign-in with the provider or the key form:\n%s", page)
	}
	cases := []struct{ user, want string }{
		{"ada", "ada@example.com admin"},
		{"otto", "otto@example.com operator"},
		{"vera", "vera@corp.example viewer"}, // preferred_username without email
		{"sam", "sub:s-sam-0001 operator"},   // the claim as one string; no email or username
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			c, resp, page := e.signIn(tc.user)
			if resp.StatusCode != http.StatusOK || !strings.Contains(page, `http-equiv="refresh" content="0;url=/console/"`) {
				t.Fatalf("callback: %d\n%s", resp.StatusCode, page)
			}
			ck := resp.Cookies()
			var session *http.Cookie
			for _, k := range ck {
				if k.Name == cookieName {
					session = k
				}
			}
			if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/console" {
				t.Fatalf("session cookie %+v", session)
			}
			if got := e.signedIn(c); got != tc.want {
				t.Fatalf("signed in as %q, want %q", got, tc.want)
			}
		})
	}
	// An action by a person is theirs in the gateway and in the audit
	// trail; the role still holds on the server.
	c, _, _ := e.signIn("otto")
	csrf := csrfOf(t, e, c)
	if resp, _ := e.do(c, "POST", "/console/actions", url.Values{"action": {"drain"}, "backend": {"uksouth"}, "csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the operator's drain: %d", resp.StatusCode)
	}
	if resp, _ := e.do(c, "POST", "/console/actions", url.Values{"action": {"reload"}, "csrf": {csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the operator's reload: %d, want 403", resp.StatusCode)
	}
	if got := e.gw.actions(); len(got) != 1 || got[0] != "otto@example.com drain  uksouth" {
		t.Fatalf("actions %q", got)
	}
	audit := strings.Join(e.ag.audit(), "\n")
	for _, want := range []string{
		"console:sign_in | ada@example.com | ada@example.com signed in to the console as admin with Test IdP from 127.0.0.1",
		"console:sign_in | otto@example.com | otto@example.com signed in to the console as operator with Test IdP",
		"console:sign_in | vera@corp.example | vera@corp.example signed in to the console as viewer",
		"console:operator_refused |  | an action of operator otto@example.com (/console/actions) was refused",
	} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit trail lacks %q:\n%s", want, audit)
		}
	}
	if n := len(e.idp.Issued()); n < 10 {
		t.Fatalf("the provider issued %d tokens, want 2 for each of 5 sign-ins", n)
	}
	e.noLeak()
}

// csrfOf reads the session's CSRF token from the overview.
func csrfOf(t *testing.T, e *ssoEnv, c *http.Client) string {
	t.Helper()
	_, page := e.get(c, e.srv.URL+"/console/")
	_, after, ok := strings.Cut(page, `<meta name="csrf" content="`)
	tok, _, _ := strings.Cut(after, `"`)
	if !ok || tok == "" {
		t.Fatalf("no CSRF token:\n%s", page)
	}
	return tok
}

// noLeak checks that no token the provider issued, nor the client
// secret, is in the log, the audit trail or anything a client was sent.
func (e *ssoEnv) noLeak() {
	e.t.Helper()
	e.seenMu.Lock()
	seen := e.seen.String()
	e.seenMu.Unlock()
	all := map[string]string{"log": e.logs.String(), "audit trail": strings.Join(e.ag.audit(), "\n"), "pages": seen}
	secrets := append(e.idp.Issued(), ssoClientSecret)
	for where, text := range all {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				e.t.Errorf("the %s holds a token or the client secret %.12s…", where, s)
			}
		}
	}
}

func TestSSORefusals(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(map[string]any)
		// mangle changes the callback URL the provider sent back.
		mangle func(e *ssoEnv, c *http.Client, back string) string
		user   string
		status int
		page   string
		log    string
	}{
		{name: "bad state", user: "ada", status: http.StatusBadRequest, page: "does not match the one this browser started", log: "the state did not match",
			mangle: func(_ *ssoEnv, _ *http.Client, back string) string {
				u, _ := url.Parse(back)
				q := u.Query()
				q.Set("state", "forged-state-0123456789abcdefghijklmnopq")
				u.RawQuery = q.Encode()
				return u.String()
			}},
		{name: "code of another sign-in", user: "ada", status: http.StatusUnauthorized, page: "did not accept this sign-in", log: "the code was refused: invalid_grant",
			// Another flow's code (its PKCE verifier is not this one's).
			mangle: func(e *ssoEnv, _ *http.Client, back string) string {
				other := e.toCallback(e.client(), "ada")
				u, _ := url.Parse(back)
				o, _ := url.Parse(other)
				q := u.Query()
				q.Set("code", o.Query().Get("code"))
				u.RawQuery = q.Encode()
				return u.String()
			}},
		{name: "replayed code", user: "ada", status: http.StatusUnauthorized, page: "did not accept this sign-in", log: "the code was refused: invalid_grant",
			// The code of a completed sign-in, sent again with a fresh
			// sign-in's state in the same browser.
			mangle: func(e *ssoEnv, c *http.Client, back string) string {
				if resp, _ := e.get(c, back); resp.StatusCode != http.StatusOK {
					e.t.Fatalf("first use: %d", resp.StatusCode)
				}
				fresh := e.toCallback(c, "ada")
				u, _ := url.Parse(fresh)
				b, _ := url.Parse(back)
				q := u.Query()
				q.Set("code", b.Query().Get("code"))
				u.RawQuery = q.Encode()
				return u.String()
			}},
		{name: "replayed callback", user: "ada", status: http.StatusBadRequest, page: "expired or was already used", log: "already completed",
			// The same answer again, with the browser's state cookie as it
			// was (as one who copied both would send them).
			mangle: func(e *ssoEnv, c *http.Client, back string) string {
				u, _ := url.Parse(back)
				kept := c.Jar.Cookies(u)
				if resp, _ := e.get(c, back); resp.StatusCode != http.StatusOK {
					e.t.Fatalf("first use: %d", resp.StatusCode)
				}
				for _, k := range kept {
					k.Path = "/console/sso"
				}
				c.Jar.SetCookies(u, kept)
				return back
			}},
		{name: "no sign-in pending in this browser", user: "ada", status: http.StatusBadRequest, page: "not started in this browser", log: "no sign-in was pending",
			mangle: func(_ *ssoEnv, c *http.Client, back string) string {
				u, _ := url.Parse(back)
				c.Jar.SetCookies(u, []*http.Cookie{{Name: ssoCookie, Value: "", MaxAge: -1, Path: "/console/sso"}})
				return back
			}},
		{name: "wrong nonce", user: "ada", status: http.StatusUnauthorized, page: "ID token was not valid", log: "nonce did not match",
			tamper: func(c map[string]any) { c["nonce"] = "a-nonce-of-another-sign-in-0123456789" }},
		{name: "no nonce", user: "ada", status: http.StatusUnauthorized, page: "ID token was not valid", log: "nonce did not match",
			tamper: func(c map[string]any) { delete(c, "nonce") }},
		{name: "wrong audience", user: "ada", status: http.StatusUnauthorized, page: "ID token was not valid", log: "expected audience",
			tamper: func(c map[string]any) { c["aud"] = "another-app" }},
		{name: "wrong issuer", user: "ada", status: http.StatusUnauthorized, page: "ID token was not valid", log: "issued by a different provider",
			tamper: func(c map[string]any) { c["iss"] = "https://login.microsoftonline.com/other/v2.0" }},
		{name: "expired token", user: "ada", status: http.StatusUnauthorized, page: "ID token was not valid", log: "expired at",
			tamper: func(c map[string]any) {
				c["iat"] = time.Now().Add(-time.Hour).Unix()
				c["exp"] = time.Now().Add(-30 * time.Minute).Unix()
			}},
		{name: "unknown person at the provider", user: "nobody", status: http.StatusUnauthorized, page: "did not sign you in (access_denied)", log: "the provider answered access_denied"},
		{name: "groups overage", user: "ada", status: http.StatusForbidden, page: "no role of the console is given to you", log: "the provider left the groups out of the token",
			tamper: func(c map[string]any) {
				delete(c, "groups")
				c["_claim_names"] = map[string]any{"groups": "src1"}
				c["_claim_sources"] = map[string]any{"src1": map[string]any{"endpoint": "https://graph.microsoft.com/v1.0/users/x/getMemberObjects"}}
			}},
		{name: "unmapped person", user: "mallo", status: http.StatusForbidden, page: "as mallory@example.com, but no role of the console is given to you", log: "no role is mapped to its groups"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newSSOEnv(t)
			e.idp.Tamper(tc.tamper)
			c := e.client()
			var back string
			if tc.user == "nobody" {
				e.idp.SignInAs("nobody")
				resp, _ := e.get(c, e.srv.URL+"/console/sso/start")
				resp, _ = e.get(c, resp.Header.Get("Location"))
				back = resp.Header.Get("Location")
			} else {
				back = e.toCallback(c, tc.user)
			}
			if tc.mangle != nil {
				back = tc.mangle(e, c, back)
			}
			resp, page := e.get(c, back)
			if resp.StatusCode != tc.status || !strings.Contains(page, tc.page) {
				t.Fatalf("callback: %d, want %d with %q\n%s", resp.StatusCode, tc.status, tc.page, page)
			}
			for _, k := range resp.Cookies() {
				if k.Name == cookieName && k.Value != "" {
					t.Fatal("a refused sign-in got a session")
				}
			}
			if tc.mangle == nil {
				if who := e.signedIn(c); who != "" {
					t.Fatalf("a refused sign-in is signed in as %q", who)
				}
			}
			if !strings.Contains(e.logs.String(), tc.log) {
				t.Errorf("the log lacks %q:\n%s", tc.log, e.logs.String())
			}
			audit := strings.Join(e.ag.audit(), "\n")
			if !strings.Contains(audit, "console:sso_refused") || !strings.Contains(audit, tc.log) {
				t.Errorf("the audit trail lacks the refusal:\n%s", audit)
			}
			if tc.user == "mallo" && !strings.Contains(audit, "console:sso_refused | mallory@example.com | mallory@example.com signed in with Test IdP from 127.0.0.1 and was refused") {
				t.Errorf("the refusal of a person is not under their name:\n%s", audit)
			}
			e.noLeak()
		})
	}
}

// default_role gives the unmapped their role; without admin.sso the
// routes do not exist and the login page offers only keys; the key
// stays a way in (break-glass) beside the provider.
func TestSSODefaultRoleAndBreakGlass(t *testing.T) {
	e := newSSOEnv(t)
	e.gw.mu.Lock()
	e.gw.cfg.Admin.SSO.DefaultRole = RoleViewer
	e.gw.mu.Unlock()
	c, resp, _ := e.signIn("mallo")
	if got := e.signedIn(c); resp.StatusCode != http.StatusOK || got != "mallory@example.com viewer" {
		t.Fatalf("unmapped with default_role viewer: %d %q", resp.StatusCode, got)
	}
	if a, _ := e.login(adminKey); e.signedIn(a) != "admin admin" {
		t.Fatal("the admin key no longer signs in")
	}
	e.gw.mu.Lock()
	e.gw.cfg.Admin.SSO = nil
	e.gw.mu.Unlock()
	for _, p := range []string{"/console/sso/start", "/console/sso/callback?code=x&state=y"} {
		if resp, _ := e.do(e.client(), "GET", p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s without admin.sso: %d, want 404", p, resp.StatusCode)
		}
	}
	if _, page := e.do(e.client(), "GET", "/console/login", nil); strings.Contains(page, "sso/start") {
		t.Fatal("the login page offers single sign-on without admin.sso")
	}
}

// The pending sign-in's cookie is the callback's only, Lax (the
// provider's redirect back is cross-site), HttpOnly and short-lived.
func TestSSOStateCookie(t *testing.T) {
	e := newSSOEnv(t)
	resp, _ := e.do(e.client(), "GET", "/console/sso/start", nil)
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == ssoCookie {
			ck = k
		}
	}
	if ck == nil || ck.Path != "/console/sso" || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.MaxAge <= 0 || ck.MaxAge > 600 || len(ck.Value) < 43 {
		t.Fatalf("state cookie %+v", ck)
	}
	loc := resp.Header.Get("Location")
	if strings.Contains(loc, ck.Value) {
		t.Fatal("the cookie's token is in the authorization request")
	}
}

// A loop of sign-ins started from one address drops that address's own
// oldest pending ones, never another's; each expires after
// ssoPendingLife.
func TestSSOPendingBounded(t *testing.T) {
	var st ssoState
	t0 := time.Unix(1000, 0)
	st.keep("other", pendingSSO{state: "o", addr: "10.0.0.2", at: t0})
	for i := range 3 * maxPendingPerAddr {
		st.keep(fmt.Sprintf("flood-%d", i), pendingSSO{addr: "10.0.0.66", at: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	if p, ok := st.take("other", t0.Add(time.Second)); !ok || p.state != "o" {
		t.Fatal("a flood from another address pushed out a pending sign-in")
	}
	if _, ok := st.take("flood-0", t0.Add(time.Second)); ok {
		t.Fatal("the flood's oldest is still pending")
	}
	if _, ok := st.take(fmt.Sprintf("flood-%d", 3*maxPendingPerAddr-1), t0.Add(time.Second)); !ok {
		t.Fatal("the flood's newest is not pending")
	}
	st.keep("late", pendingSSO{addr: "10.0.0.3", at: t0})
	if _, ok := st.take("late", t0.Add(ssoPendingLife)); ok {
		t.Fatal("a pending sign-in outlived ssoPendingLife")
	}
	if _, ok := st.take("late", t0); ok {
		t.Fatal("a pending sign-in was taken twice")
	}
}
