package console

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// Secrets of the test configuration: none may appear on any page.
const (
	adminKey    = "admin-key-0123456789abcdef"
	viewerKey   = "viewer-key-0123456789abcd"
	backendKey  = "sk-backend-secret-7777777"
	gatewayKey  = "gw-client-key-5555555555555555555555"
	webhookSig  = "webhook-signing-secret-42"
	redisPass   = "redis-pass-31337xyz"
	postgresPwd = "pg-password-2718281828"
)

var allSecrets = []string{adminKey, viewerKey, backendKey, gatewayKey, webhookSig, redisPass, postgresPwd}

const testYAML = `
keys: [{name: app, key: ` + gatewayKey + `}]
admin:
  listen: 127.0.0.1:0
  key: ` + adminKey + `
  viewers: [{name: alice, key: ` + viewerKey + `}]
backends:
  - {name: uksouth, type: openai_compatible, url: "http://127.0.0.1:1", api_key: ` + backendKey + `}
  - {name: sweden, type: openai_compatible, url: "http://127.0.0.1:2"}
pools:
  - {name: chat, members: [{backend: uksouth, priority: 1}, {backend: sweden, priority: 2}]}
notifications:
  webhooks: [{url: "http://127.0.0.1:3/hook", secret: ` + webhookSig + `}]
state:
  redis: {url: "redis://user:` + redisPass + `@127.0.0.1:6379/0"}
store:
  postgres: "postgres://sw:` + postgresPwd + `@127.0.0.1/sw"
`

// fakeGateway is a Gateway whose status tests change, recording the
// actions taken.
type fakeGateway struct {
	cfg *config.Config

	mu      sync.Mutex
	status  Status
	acts    []string
	preview Preview
	store   ledger.Store
}

func (f *fakeGateway) Config() *config.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg
}
func (f *fakeGateway) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.status
	s.At = time.Now()
	s.Pools = append([]Pool(nil), s.Pools...)
	return s
}
func (f *fakeGateway) Act(who string, a Action) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.Backend == "nope" {
		return errors.New("backend \"nope\": not found")
	}
	f.acts = append(f.acts, who+" "+a.Kind+" "+a.Pool+" "+a.Backend)
	if a.Kind == ActDrain || a.Kind == ActRestore {
		for i := range f.status.Pools {
			ms := append([]Member(nil), f.status.Pools[i].Members...)
			for j := range ms {
				if ms[j].Backend == a.Backend {
					ms[j].Drained = a.Kind == ActDrain
				}
			}
			f.status.Pools[i].Members = ms
		}
	}
	return nil
}
func (f *fakeGateway) Reload(who string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = append(f.acts, who+" reload")
	return nil
}
func (f *fakeGateway) ReloadPreview() Preview {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.preview
}
func (f *fakeGateway) Ledger() ledger.Store { return f.store }

func (f *fakeGateway) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.acts...)
}

func (f *fakeGateway) setBreaker(backend, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.status.Pools {
		ms := append([]Member(nil), f.status.Pools[i].Members...)
		for j := range ms {
			if ms[j].Backend == backend {
				ms[j].Breaker = state
			}
		}
		f.status.Pools[i].Members = ms
	}
}

var _ Ledgered = (*fakeGateway)(nil)

func newFake(t *testing.T) *fakeGateway {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(testYAML), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeGateway{cfg: cfg}
	f.status = Status{Pools: []Pool{{Name: "chat", Active: []string{"uksouth"}, Members: []Member{
		{Backend: "uksouth", Type: "openai_compatible", Priority: 1, Weight: 1, Usable: true, Breaker: "closed"},
		{Backend: "sweden", Type: "openai_compatible", Priority: 2, Weight: 1, Usable: true, Breaker: "closed"},
	}}}, Events: []Event{
		{At: time.Now(), Kind: "breaker", Backend: "uksouth", Detail: "closed -> open: 5 failures (last: 503)", Opened: "5 failures (last: 503)"},
		{At: time.Now(), Kind: "admin:drain", Backend: "sweden", Detail: "drained backend sweden (by admin)"},
		{At: time.Now(), Kind: "notification:failover", Pool: "chat", Detail: "switchover: pool chat failed over from uksouth"},
		// An event whose detail carries a secret, as an upstream error
		// might: the page must not show it.
		{At: time.Now(), Kind: "misconfigured", Backend: "uksouth", Detail: "answered 401: Incorrect API key provided: " + backendKey},
	}}
	f.preview = Preview{File: "/etc/switchover.yaml", Running: "a: 1\nkey: [redacted]\n", Next: "a: 2\nkey: [redacted]\n", Restart: []string{"listen"}}
	return f
}

// env is a console behind a test server, and a client for it.
type env struct {
	t   *testing.T
	gw  *fakeGateway
	c   *Console
	srv *httptest.Server
}

func newEnv(t *testing.T, tlsServer bool) *env {
	t.Helper()
	f := newFake(t)
	c := New(t.Context(), f, Options{Interval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(c.Close)
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewTLSServer(c)
	} else {
		srv = httptest.NewServer(c)
	}
	t.Cleanup(srv.Close)
	return &env{t: t, gw: f, c: c, srv: srv}
}

// client is a browser-like client: cookies, no redirects followed.
func (e *env) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := e.srv.Client()
	return &http.Client{Transport: c.Transport, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func (e *env) do(c *http.Client, method, path string, form url.Values, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// login signs in with key and returns the client and the session's CSRF
// token.
func (e *env) login(key string) (*http.Client, string) {
	e.t.Helper()
	c := e.client()
	resp, _ := e.do(c, "POST", "/console/login", url.Values{"key": {key}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		e.t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page := e.do(c, "GET", "/console/", nil)
	m := regexp.MustCompile(`<meta name="csrf" content="([^"]+)">`).FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no CSRF token on the overview:\n%s", page)
	}
	return c, m[1]
}

func TestLoginAndCookie(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		secure bool
	}{{"plain http", false, false}, {"tls", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.tls)
			c := e.client()
			resp, _ := e.do(c, "GET", "/console/", nil)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
				t.Fatalf("visitor: %d to %q, want the login", resp.StatusCode, resp.Header.Get("Location"))
			}
			resp, page := e.do(c, "POST", "/console/login", url.Values{"key": {"wrong-key-0123456789"}})
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "not the admin key") {
				t.Fatalf("wrong key: %d", resp.StatusCode)
			}
			if len(resp.Cookies()) != 0 {
				t.Fatal("a wrong key got a cookie")
			}
			resp, _ = e.do(c, "POST", "/console/login", url.Values{"key": {adminKey}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("admin key: %d", resp.StatusCode)
			}
			cks := resp.Cookies()
			if len(cks) != 1 {
				t.Fatalf("cookies %v", cks)
			}
			ck := cks[0]
			if ck.Name != cookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" || ck.Secure != tc.secure || len(ck.Value) < 43 {
				t.Fatalf("cookie %+v (secure want %v)", ck, tc.secure)
			}
			if raw := resp.Header.Get("Set-Cookie"); !strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Strict") {
				t.Fatalf("Set-Cookie %q", raw)
			}
			resp, page = e.do(c, "GET", "/console/", nil)
			if resp.StatusCode != 200 || !strings.Contains(page, `id="who">admin <span class="role">admin</span>`) {
				t.Fatalf("overview after login: %d\n%s", resp.StatusCode, page)
			}
		})
	}
}

func TestVisitorSeesOnlyTheLogin(t *testing.T) {
	e := newEnv(t, false)
	c := e.client()
	for _, p := range []string{"/console/", "/console/events", "/console/config", "/console/fleet", "/console/keys", "/console/nothing"} {
		resp, _ := e.do(c, "GET", p, nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Errorf("%s: %d to %q, want the login", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, p := range []string{"/console/stream", "/console/api/view"} {
		if resp, _ := e.do(c, "GET", p, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", p, resp.StatusCode)
		}
	}
	if resp, _ := e.do(c, "POST", "/console/actions", url.Values{"action": {"drain"}, "backend": {"uksouth"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("action: %d, want 401", resp.StatusCode)
	}
	if resp, _ := e.do(c, "GET", "/", nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Errorf("/: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page := e.do(c, "GET", "/console/login", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, `<form method="post" action="/console/login"`) || strings.Contains(page, "uksouth") {
		t.Fatalf("login page: %d\n%s", resp.StatusCode, page)
	}
	if resp, body := e.do(c, "GET", "/console/static/console.js", nil); resp.StatusCode != 200 || !strings.Contains(body, "EventSource") {
		t.Fatalf("script: %d", resp.StatusCode)
	}
	if len(e.gw.actions()) != 0 {
		t.Fatalf("actions %v", e.gw.actions())
	}
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(adminKey)
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	for _, p := range []string{"/console/login", "/console/", "/console/events", "/console/config", "/console/fleet", "/console/keys", "/console/static/console.css"} {
		resp, body := e.do(c, "GET", p, nil)
		h := resp.Header
		if h.Get("Content-Security-Policy") != csp || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", p, h)
		}
		if strings.HasSuffix(p, ".css") {
			continue
		}
		if h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", p, h.Get("Cache-Control"))
		}
		// The CSP forbids inline scripts and styles: there are none.
		if strings.Contains(body, "<script>") || regexp.MustCompile(`<script(?: [^>]*)?>[^<]`).MatchString(body) || strings.Contains(body, " style=") || strings.Contains(body, "<style") || strings.Contains(body, " on") && regexp.MustCompile(` on[a-z]+=`).MatchString(body) {
			t.Errorf("%s has an inline script or style", p)
		}
	}
}

func TestActionsNeedCSRF(t *testing.T) {
	e := newEnv(t, false)
	c, csrf := e.login(adminKey)
	drain := func(token string, hdr ...string) *http.Response {
		f := url.Values{"action": {"drain"}, "backend": {"uksouth"}}
		if token != "" {
			f.Set("csrf", token)
		}
		resp, _ := e.do(c, "POST", "/console/actions", f, hdr...)
		return resp
	}
	cases := []struct {
		name  string
		token string
		hdr   []string
		want  int
	}{
		{"no token", "", nil, http.StatusForbidden},
		{"wrong token", strings.Repeat("x", len(csrf)), nil, http.StatusForbidden},
		{"another origin", csrf, []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", csrf, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"null origin, cross-site", csrf, []string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"null origin, no fetch metadata", csrf, []string{"Origin", "null"}, http.StatusForbidden},
		{"user-initiated", csrf, []string{"Sec-Fetch-Site", "none"}, http.StatusForbidden},
		{"null origin of a form", csrf, []string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, http.StatusSeeOther},
		{"token", csrf, []string{"Origin", e.srv.URL}, http.StatusSeeOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if resp := drain(tc.token, tc.hdr...); resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if got := e.gw.actions(); len(got) != 2 || got[0] != "admin drain  uksouth" {
		t.Fatalf("actions %q, want the one with its token, by admin", got)
	}
	// The token in a header (the scripts' way) works too, and a JSON
	// answer says what happened.
	resp, body := e.do(c, "POST", "/console/actions", url.Values{"action": {"set_member"}, "pool": {"chat"}, "backend": {"sweden"}, "priority": {"1"}},
		"X-CSRF-Token", csrf, "Accept", "application/json")
	if resp.StatusCode != 200 || !strings.Contains(body, "set sweden in pool chat to priority 1 until reset") {
		t.Fatalf("header token: %d %s", resp.StatusCode, body)
	}
	// The flash message of a form's action shows on the next page.
	resp, _ = e.do(c, "POST", "/console/actions", url.Values{"action": {"restore"}, "backend": {"nope"}, "csrf": {csrf}, "back": {"/console/events"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/events" {
		t.Fatalf("failed action: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, page := e.do(c, "GET", "/console/events", nil); !strings.Contains(page, "Failed: restore nope") {
		t.Fatalf("no failure message:\n%s", page)
	}
	// Logout needs the token as well.
	if resp, _ := e.do(c, "POST", "/console/logout", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout without token: %d", resp.StatusCode)
	}
}

func TestViewerCannotAct(t *testing.T) {
	e := newEnv(t, false)
	c, csrf := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/", nil)
	if !strings.Contains(page, `id="who">alice <span class="role">viewer</span>`) {
		t.Fatalf("not signed in as alice:\n%s", page)
	}
	if strings.Contains(page, `action="/console/actions"`) || strings.Contains(page, "data-act=") {
		t.Fatal("a viewer's overview has action buttons")
	}
	if _, page := e.do(c, "GET", "/console/config", nil); strings.Contains(page, `action="/console/actions"`) {
		t.Fatal("a viewer's config page has the reload button")
	}
	for _, a := range []string{"drain", "restore", "breaker_open", "breaker_close", "set_member", "reset_member", "reload"} {
		resp, _ := e.do(c, "POST", "/console/actions", url.Values{"action": {a}, "pool": {"chat"}, "backend": {"uksouth"}, "priority": {"2"}, "csrf": {csrf}})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", a, resp.StatusCode)
		}
	}
	if got := e.gw.actions(); len(got) != 0 {
		t.Fatalf("a viewer acted: %v", got)
	}
}

func TestNoSecretRendered(t *testing.T) {
	e := newEnv(t, false)
	e.gw.preview.Err = "test.yaml:3: backends[0].api_key: bad " + backendKey
	for _, key := range []string{adminKey, viewerKey} {
		c, _ := e.login(key)
		for _, p := range []string{"/console/", "/console/events", "/console/config", "/console/fleet", "/console/keys", "/console/api/view", "/console/events?kind=misconfigured"} {
			resp, body := e.do(c, "GET", p, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d", p, resp.StatusCode)
			}
			for _, s := range allSecrets {
				if strings.Contains(body, s) {
					t.Errorf("%s shows secret %q", p, s)
				}
			}
		}
		_, body := e.do(c, "GET", "/console/events?kind=misconfigured", nil)
		if !strings.Contains(body, "Incorrect API key provided: [redacted]") {
			t.Errorf("the event's detail is not shown redacted:\n%s", body)
		}
	}
	// The login page, its failure, and the stream's first event too.
	c := e.client()
	for _, body := range []string{
		func() string { _, b := e.do(c, "GET", "/console/login", nil); return b }(),
		func() string {
			_, b := e.do(c, "POST", "/console/login", url.Values{"key": {"nope-nope-nope-nope"}})
			return b
		}(),
	} {
		for _, s := range allSecrets {
			if strings.Contains(body, s) {
				t.Errorf("login page shows %q", s)
			}
		}
	}
	c, _ = e.login(adminKey)
	ev := readEvents(t, e, c, 1)
	for _, s := range allSecrets {
		if strings.Contains(ev[0], s) {
			t.Errorf("stream shows %q", s)
		}
	}
}

func TestSecretsFound(t *testing.T) {
	f := newFake(t)
	got := secrets(f.cfg)
	for _, want := range []string{adminKey, viewerKey, backendKey, gatewayKey, webhookSig, "redis://user:" + redisPass + "@127.0.0.1:6379/0", "postgres://sw:" + postgresPwd + "@127.0.0.1/sw"} {
		found := false
		for _, s := range got {
			found = found || s == want
		}
		if !found {
			t.Errorf("secrets() misses %q", want)
		}
	}
}

// readEvents reads n "view" events of the stream, with a deadline.
func readEvents(t *testing.T, e *env, c *http.Client, n int, until ...func(string) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/console/stream", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "view":
			d := strings.TrimPrefix(line, "data: ")
			if len(until) == 0 || until[0](d) {
				out = append(out, d)
			}
			if len(out) == n {
				return out
			}
		}
	}
	t.Fatalf("stream ended after %d events: %v", len(out), sc.Err())
	return nil
}

func TestStreamDeliversUpdates(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	first := readEvents(t, e, c, 1)[0]
	if !strings.Contains(first, `"backend":"uksouth"`) || !strings.Contains(first, `"breaker":"closed"`) {
		t.Fatalf("first event %s", first)
	}
	e.gw.setBreaker("uksouth", "open")
	got := readEvents(t, e, c, 1, func(d string) bool {
		return strings.Contains(d, `"backend":"uksouth","type":"openai_compatible","priority":1,"weight":1,"overridden":false,"drained":false,"usable":true,"active":true,"breaker":"open"`)
	})[0]
	if !strings.Contains(got, `"why":"5 failures (last: 503)"`) {
		t.Fatalf("the open breaker's cause is missing: %s", got)
	}
}

// openStream opens the overview's event stream as c, for at most 10 s.
func (e *env) openStream(t *testing.T, c *http.Client) (context.Context, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/console/stream", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return ctx, resp
}

// endsSignedOut reads the stream resp (opened by openStream with ctx) to
// its end, which must come before the deadline with a signedout event.
func endsSignedOut(t *testing.T, ctx context.Context, resp *http.Response, when string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if ctx.Err() != nil || !strings.Contains(string(b), "event: signedout") {
		t.Fatalf("stream did not end %s (%v): %q", when, ctx.Err(), b)
	}
}

func TestStreamEndsAtLogout(t *testing.T) {
	e := newEnv(t, false)
	c, csrf := e.login(adminKey)
	ctx, resp := e.openStream(t, c)
	if r, _ := e.do(c, "POST", "/console/logout", url.Values{"csrf": {csrf}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	endsSignedOut(t, ctx, resp, "at logout")
	if r, _ := e.do(c, "GET", "/console/", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout: %d", r.StatusCode)
	}
}

// TestSignInLockoutSparesTheRightKey is the regression test of issue
// 23's item 12: a loop of wrong keys from one address (every operator's,
// behind a reverse proxy) kept the right admin key refused (429). Now
// the wrong keys are refused 429 past the burst, and the admin and
// viewer keys still sign in from that address at once.
func TestSignInLockoutSparesTheRightKey(t *testing.T) {
	e, clk := newClockEnv(t)
	c := e.client()
	for i := range 3 * loginBurst {
		want := http.StatusUnauthorized
		if i >= loginBurst {
			want = http.StatusTooManyRequests
		}
		if resp, _ := e.do(c, "POST", "/console/login", url.Values{"key": {fmt.Sprintf("guess-%02d-guess-guess", i)}}); resp.StatusCode != want {
			t.Fatalf("wrong key %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	for _, key := range []string{adminKey, viewerKey} {
		if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {key}}); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
			t.Fatalf("the right key from the locked address: %d, want a session", resp.StatusCode)
		}
	}
	// Wrong keys that begin as the admin key does lock its prefix: the
	// admin key waits, at most maxKeyLock, though the loop goes on.
	for i := range loginBurst {
		e.do(c, "POST", "/console/login", url.Values{"key": {adminKey[:len(adminKey)/2] + fmt.Sprintf("wrong-%02d", i)}})
	}
	if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {adminKey}}); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the admin key while its prefix is locked: %d, want 429", resp.StatusCode)
	}
	// The loop goes on as tokens refill: the lock does not start again.
	clk.add(loginRefill)
	e.do(c, "POST", "/console/login", url.Values{"key": {adminKey[:len(adminKey)/2] + "wrong-again"}})
	if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {adminKey}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the admin key %v after its prefix locked: %d, want a session", loginRefill, resp.StatusCode)
	}
	// Without a key: refused, never a session.
	if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {""}}); resp.StatusCode/100 != 4 || len(resp.Cookies()) != 0 {
		t.Fatalf("no key: %d", resp.StatusCode)
	}
}

// TestSignInLimitCountsFailuresOnly: successful sign-ins use none of the
// address's allowance (they used to: thirty operators signing in behind
// one proxy locked it).
func TestSignInLimitCountsFailuresOnly(t *testing.T) {
	e, _ := newClockEnv(t)
	for i := range 3 * loginBurst {
		if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {adminKey}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := e.do(e.client(), "POST", "/console/login", url.Values{"key": {"a-wrong-key-0123456789"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong key after many sign-ins: %d, want 401", resp.StatusCode)
	}
}

func TestLimiterRefills(t *testing.T) {
	var l limiter
	now := time.Unix(1000, 0)
	for i := range loginBurst {
		if locked, _ := l.locked(addrID("1.2.3.4"), now); locked {
			t.Fatalf("locked after %d failures", i)
		}
		l.fail(addrID("1.2.3.4"), now)
	}
	if locked, since := l.locked(addrID("1.2.3.4"), now); !locked || !since.Equal(now) {
		t.Fatal("not locked past the burst")
	}
	if locked, _ := l.locked(addrID("5.6.7.8"), now); locked {
		t.Fatal("another address locked")
	}
	if locked, _ := l.locked(addrID("1.2.3.4"), now.Add(loginRefill)); locked {
		t.Fatal("not refilled")
	}
	if prefixID("abcdefgh-0123456789") != prefixID("abcdefgh-9876543210") || prefixID("abcdefgh-0123456789") == prefixID("abcdefgX-0123456789") {
		t.Fatal("prefixes are not the first characters")
	}
}

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newClockEnv is newEnv with a clock the test moves.
func newClockEnv(t *testing.T) (*env, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	f := newFake(t)
	c := New(t.Context(), f, Options{Interval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Now: clk.now})
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &env{t: t, gw: f, c: c, srv: srv}, clk
}

func TestSessionExpiry(t *testing.T) {
	var s sessions
	now := time.Unix(1000, 0)
	tok, _ := s.start("admin", RoleAdmin, now)
	if s.get(tok, now.Add(sessionIdle-time.Second)) == nil {
		t.Fatal("ended before its idle time")
	}
	if s.get(tok, now.Add(2*sessionIdle-2*time.Second)) == nil {
		t.Fatal("a request did not renew it")
	}
	if s.get(tok, now.Add(4*sessionIdle)) != nil {
		t.Fatal("alive after its idle time")
	}
	tok, _ = s.start("admin", RoleAdmin, now)
	for at := now; at.Before(now.Add(sessionMax)); at = at.Add(sessionIdle / 2) {
		s.get(tok, at)
	}
	if s.get(tok, now.Add(sessionMax)) != nil {
		t.Fatal("alive past its maximum")
	}
	if s.get("forged", now) != nil {
		t.Fatal("a forged token has a session")
	}
}

func TestConfigPage(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(adminKey)
	_, page := e.do(c, "GET", "/console/config", nil)
	for _, want := range []string{`<span class="del">- a: 1</span>`, `<span class="add">&#43; a: 2</span>`, "Waiting for a restart: listen", `data-act="reload"`, "[redacted]"} {
		if !strings.Contains(page, want) {
			t.Errorf("config page lacks %q", want)
		}
	}
}

func TestEventsFilter(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{"breaker", "admin:drain", "notification:failover", "misconfigured"}},
		{"?kind=admin", []string{"admin:drain"}},
		{"?kind=notification", []string{"notification:failover"}},
		{"?backend=uksouth", []string{"breaker", "misconfigured"}},
		{"?pool=chat", []string{"notification:failover"}},
		{"?q=FAILED+OVER", []string{"notification:failover"}},
	}
	re := regexp.MustCompile(`<tr class="ev" data-kind="([^"]+)">`)
	for _, tc := range cases {
		_, page := e.do(c, "GET", "/console/events"+tc.query, nil)
		var got []string
		for _, m := range re.FindAllStringSubmatch(page, -1) {
			got = append(got, m[1])
		}
		// Newest first.
		var want []string
		for i := len(tc.want) - 1; i >= 0; i-- {
			want = append(want, tc.want[i])
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%q: %v, want %v", tc.query, got, want)
		}
	}
}

func TestKeysWithoutStore(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(adminKey)
	if _, page := e.do(c, "GET", "/console/keys", nil); !strings.Contains(page, "No store configured") {
		t.Fatalf("keys page without a store:\n%s", page)
	}
}

func TestKeysFromSQLite(t *testing.T) {
	e := newEnv(t, false)
	ctx := t.Context()
	st, err := sqlite.Open(ctx, t.TempDir()+"/ledger.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	k, secret, err := ledger.NewKey(ctx, st, ledger.Key{Name: "ci-runner", Team: "search", RPM: 600, Budget: 50, BudgetPeriod: ledger.PeriodMonth, Patience: 90 * time.Second}, now)
	if err != nil {
		t.Fatal(err)
	}
	revoked, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "old-laptop"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeKey(ctx, revoked.ID, now); err != nil {
		t.Fatal(err)
	}
	if err := st.PutTeam(ctx, ledger.Team{Name: "search", Budget: 500, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordUsage(ctx, []ledger.Usage{
		{At: now, RequestID: "r1", KeyID: k.ID, Team: "search", Pool: "chat", Backend: "uksouth", Model: "gpt-4o", PromptTokens: 1200, CompletionTokens: 300, Cost: 0.0125},
		{At: now, RequestID: "r2", KeyID: k.ID, Team: "search", Pool: "chat", Backend: "sweden", Model: "gpt-4o", PromptTokens: 800, CompletionTokens: 200, Cost: 0.0075, Failover: true},
	}); err != nil {
		t.Fatal(err)
	}
	e.gw.store = st
	c, _ := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/keys", nil)
	for _, want := range []string{k.ID, "ci-runner", "search", k.Prefix + "…", "600", "$50.00/month", "<td>1m30s</td>", "old-laptop", `class="revoked"`,
		`data-by="team"`, `data-by="pool"`, `data-by="backend"`, `data-by="model"`, `data-by="day and backend"`, now.UTC().Format(time.DateOnly) + " · sweden", "gpt-4o", "$0.0200", "2000", "$500.00/month"} {
		if !strings.Contains(page, want) {
			t.Errorf("keys page lacks %q", want)
		}
	}
	if strings.Contains(page, secret) || strings.Contains(page, secret[len(k.Prefix):]) {
		t.Fatal("keys page shows a key's secret")
	}
	for _, h := range [][]byte{k.Hash} {
		if strings.Contains(page, string(h)) || strings.Contains(strings.ToLower(page), hexOf(h)) {
			t.Fatal("keys page shows a key's hash")
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

var _ = tls.VersionTLS12

func TestRedactedYAML(t *testing.T) {
	y := RedactedYAML(newFake(t).cfg)
	for _, s := range allSecrets {
		if strings.Contains(y, s) {
			t.Errorf("YAML shows %q:\n%s", s, y)
		}
	}
	for _, want := range []string{"api_key: '[redacted]'", "key: '[redacted]'", "read_timeout: 1m0s", "name: alice", "url: '[redacted]'"} {
		if !strings.Contains(y, want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
}

func TestFleetPage(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	if _, page := e.do(c, "GET", "/console/fleet", nil); !strings.Contains(page, "shares no state with others") {
		t.Fatalf("fleet page without a fleet:\n%s", page)
	}
	e.gw.mu.Lock()
	e.gw.status.Fleet = &Fleet{Replica: "gw-1", StoreUp: true, Joined: true, Notifier: true, Replicas: []Replica{
		{ID: "gw-1", Version: "v1.2.3", Started: time.Now(), Seen: time.Now(), InFlight: map[string]int{"uksouth": 3}},
		{ID: "gw-2", Version: "v1.2.3", Started: time.Now(), Seen: time.Now()},
	}}
	e.gw.mu.Unlock()
	_, page := e.do(c, "GET", "/console/fleet", nil)
	for _, want := range []string{"gw-1 (this one)", "gw-2", "v1.2.3", "uksouth: 3", "answering", "sends the fleet's notifications"} {
		if !strings.Contains(page, want) {
			t.Errorf("fleet page lacks %q", want)
		}
	}
}

func TestSignInReplacesTheSession(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	u, _ := url.Parse(e.srv.URL + "/console/")
	old := c.Jar.Cookies(u)[0].Value
	e.login(adminKey) // another browser
	resp, _ := e.do(c, "POST", "/console/login", url.Values{"key": {adminKey}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", resp.StatusCode)
	}
	if e.c.sessions.valid(old, time.Now()) {
		t.Fatal("the session before the sign-in is still valid")
	}
	if _, page := e.do(c, "GET", "/console/", nil); !strings.Contains(page, `id="who">admin <span class="role">admin</span>`) {
		t.Fatal("not signed in as admin")
	}
}

// TestNotificationsOfTheirEvents: each notification is shown with the
// event that sent it: a failover with the breaker transition it names, an
// operator's notice with the action, a budget with its event; one with no
// event in the window stands alone.
func TestNotificationsOfTheirEvents(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := []Event{
		{At: t0, Kind: "breaker", Backend: "aoai-uksouth", Detail: "closed -> open: 3 failures", Opened: "3 failures"},
		{At: t0.Add(10 * time.Millisecond), Kind: "breaker", Backend: "aoai-other", Detail: "closed -> open"},
		{At: t0.Add(20 * time.Millisecond), Kind: "notification:failover", Pool: "chat", Detail: "Active backend changed on pool chat: aoai-uksouth → aoai-sweden. Reason: 5xx (aoai-uksouth: 3 failures)"},
		{At: t0.Add(time.Minute), Kind: "admin:drain", Backend: "aoai-sweden", Detail: "drained backend aoai-sweden (by admin)"},
		{At: t0.Add(time.Minute + time.Millisecond), Kind: "notification:admin", Detail: "switchover: an operator drained backend aoai-sweden (by admin) (2026-12-01T10:01:00Z)."},
		{At: t0.Add(2 * time.Minute), Kind: "budget", Detail: "key key_a has spent 80% of its budget: $4.00 of $5 per day since 2026-12-01"},
		{At: t0.Add(2*time.Minute + time.Millisecond), Kind: "notification:budget", Detail: "switchover: key key_a has spent 80% of its budget: $4.00 of $5 per day since 2026-12-01 (2026-12-01T10:02:00Z)."},
		{At: t0.Add(time.Hour), Kind: "notification:failback", Pool: "chat", Detail: "Active backend changed on pool chat: aoai-sweden → aoai-uksouth"},
	}
	got := notificationsOf(ev)
	want := map[int][]string{0: {ev[2].Detail}, 3: {ev[4].Detail}, 5: {ev[6].Detail}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, w := range want {
		if len(got[i]) != 1 || got[i][0] != w[0] {
			t.Errorf("event %d (%s): %v, want %v", i, ev[i].Kind, got[i], w)
		}
	}
	// On the page, the breaker's row carries its notification.
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/events?kind=breaker", nil)
	if !strings.Contains(page, `<div class="sent">notified: switchover: pool chat failed over from uksouth</div>`) {
		t.Errorf("the breaker's row lacks the failover it notified:\n%s", page)
	}
}

// TestOpenAdminSignsInWithoutAKey: with admin.allow_no_key and no
// admin.key (the demo's admin API), the console signs in as admin without
// a key; with a key configured an empty one is refused.
func TestOpenAdminSignsInWithoutAKey(t *testing.T) {
	e := newEnv(t, false)
	c := e.client()
	if resp, _ := e.do(c, "POST", "/console/login", url.Values{"key": {""}}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an empty key with admin.key set: %d, want 401", resp.StatusCode)
	}
	open := strings.Replace(testYAML, "  key: "+adminKey+"\n", "  allow_no_key: true\n", 1)
	cfg, err := config.Parse("test.yaml", []byte(open), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	e.gw.mu.Lock()
	e.gw.cfg = cfg
	e.gw.mu.Unlock()
	if _, page := e.do(c, "GET", "/console/login", nil); !strings.Contains(page, `id="open-login"`) {
		t.Fatalf("the login page of an open admin API:\n%s", page)
	}
	resp, _ := e.do(c, "POST", "/console/login", url.Values{"key": {""}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("sign-in without a key on an open admin API: %d", resp.StatusCode)
	}
	if _, page := e.do(c, "GET", "/console/", nil); !strings.Contains(page, `data-act="drain"`) {
		t.Error("signed in without a key, the overview has no actions")
	}
}

// TestWhyOpenReadsTheCauseNotTheDetailText: the console's "why" for an
// open breaker is the transition's cause as the gateway recorded it, never
// words parsed out of an event's display text: a transition whose text
// merely reads like an opening says nothing, and the last opening wins.
func TestWhyOpenReadsTheCauseNotTheDetailText(t *testing.T) {
	evs := []Event{
		{Kind: "breaker", Backend: "b", Detail: "closed -> open: 5 failures", Opened: "5 failures"},
		{Kind: "breaker", Backend: "b", Detail: "open -> half-open: trip ended (was -> open: 9 failures)"},
		{Kind: "breaker", Backend: "other", Detail: "closed -> open: 2 failures", Opened: "2 failures"},
	}
	if got := whyOpen(evs, "b"); got != "5 failures" {
		t.Fatalf("why %q, want the cause of b's last opening", got)
	}
	if got := whyOpen(evs[1:2], "b"); got != "" {
		t.Fatalf("why %q from a transition that did not open", got)
	}
}

// TestOverviewStreamKeepsSessionAlive is the regression test of issue
// 23's item 12 for sessions: an open overview (its event stream) did not
// keep its session alive, so an operator watching an incident was signed
// out after sessionIdle. Now each update of the stream marks the session
// seen; a session without a stream still ends.
func TestOverviewStreamKeepsSessionAlive(t *testing.T) {
	e, clk := newClockEnv(t)
	watching, _ := e.login(adminKey)
	idle, _ := e.login(adminKey)
	u, _ := url.Parse(e.srv.URL + "/console/")
	tok := watching.Jar.Cookies(u)[0].Value
	seen := func() time.Time {
		e.c.sessions.mu.Lock()
		defer e.c.sessions.mu.Unlock()
		if ss := e.c.sessions.m[sha256.Sum256([]byte(tok))]; ss != nil {
			return ss.seen
		}
		return time.Time{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/console/stream", nil)
	resp, err := watching.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go io.Copy(io.Discard, resp.Body)
	for range 2 {
		clk.add(sessionIdle - time.Minute)
		poll.Until(t, 10*time.Second, func() bool { return seen().Equal(clk.now()) }, func() string { return "the stream did not mark the session seen" })
	}
	if r, _ := e.do(watching, "GET", "/console/", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("the watched session after %v: %d, want 200", 2*(sessionIdle-time.Minute), r.StatusCode)
	}
	if r, _ := e.do(idle, "GET", "/console/", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("an unwatched session after %v: %d, want the login", 2*(sessionIdle-time.Minute), r.StatusCode)
	}
}

// TestActionRendersTheStateItLeft: the page an action goes back to shows
// the state after the action, with or without JavaScript (the bug: it
// rendered the last sample, from before the action, so a drained member
// showed undrained and without its Restore button until the next sample).
func TestActionRendersTheStateItLeft(t *testing.T) {
	f := newFake(t)
	c := New(t.Context(), f, Options{Interval: time.Hour, Logger: slog.New(slog.DiscardHandler)}) // no sample after the first
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e := &env{t: t, gw: f, c: c, srv: srv}
	cl, csrf := e.login(adminKey)
	row := regexp.MustCompile(`<tr data-member="chat/sweden" class="([^"]*)"`)
	for _, step := range []struct{ action, want string }{{ActDrain, "drained"}, {ActRestore, ""}} {
		resp, _ := e.do(cl, "POST", "/console/actions", url.Values{"csrf": {csrf}, "action": {step.action}, "backend": {"sweden"}, "back": {"/console/"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
			t.Fatalf("%s: %d to %q", step.action, resp.StatusCode, resp.Header.Get("Location"))
		}
		_, page := e.do(cl, "GET", "/console/", nil)
		m := row.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no row of sweden:\n%s", page)
		}
		if drained := strings.Contains(m[1], "drained"); drained != (step.want == "drained") {
			t.Errorf("after %s the row's classes are %q", step.action, m[1])
		}
		// The stream's first view is the same state.
		var v View
		_, body := e.do(cl, "GET", "/console/api/view", nil)
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if got := v.Pools[0].Members[1]; got.Drained != (step.want == "drained") {
			t.Errorf("after %s the view says drained=%v", step.action, got.Drained)
		}
	}
}

// TestOverviewPoolWithNoUsableMember: a pool with no usable member says
// so in alarm styling with since when (the bug: "Active: none since" with
// nothing after it, unstyled); a set unchanged since the start says
// "since start", not the start as when it became active.
func TestOverviewPoolWithNoUsableMember(t *testing.T) {
	e := newEnv(t, false)
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	e.gw.mu.Lock()
	e.gw.status.Pools = append(e.gw.status.Pools, Pool{Name: "batch", Active: []string{}, ActiveSince: at, Members: []Member{
		{Backend: "sweden", Type: "openai_compatible", Priority: 1, Weight: 1, Breaker: "open"}}})
	e.gw.status.Pools[0].ActiveSince, e.gw.status.Pools[0].ActiveSinceStart = at, true
	e.gw.mu.Unlock()
	c, _ := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/", nil)
	for _, want := range []string{
		`<p class="activeset alarm" data-f="activeset">Active: <strong data-f="active">none: no member can take requests</strong> <span class="since" data-f="since">since 2026-12-03 07:00:00Z</span>`,
		`<p class="activeset" data-f="activeset">Active: <strong data-f="active">uksouth</strong> <span class="since" data-f="since">since start (2026-12-03 07:00:00Z; earlier unknown)</span>`,
		`<p id="stale" class="stale" role="alert" hidden>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	_, body := e.do(c, "GET", "/console/api/view", nil)
	if !strings.Contains(body, `"active_since_start":true`) {
		t.Errorf("the view lacks active_since_start: %s", body)
	}
}

// TestKeysPageListsTheFileKeys: the configuration file's keys and teams
// are on the keys page, marked as the file's, without their secrets, with
// a store and without (the bug: only the store's were listed).
func TestKeysPageListsTheFileKeys(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	_, page := e.do(c, "GET", "/console/keys", nil)
	for _, want := range []string{`id="file-keys"`, `<tr data-key="app"><td>app</td>`, `<td class="from-file">file</td>`, "not editable here"} {
		if !strings.Contains(page, want) {
			t.Errorf("keys page lacks %s", want)
		}
	}
	if strings.Contains(page, gatewayKey) {
		t.Error("the keys page shows a file key's secret")
	}
}

// TestFaviconNeedsNoSession: /favicon.ico is an image to anyone (the bug:
// 401 on every page, through the admin API's key check).
func TestFaviconNeedsNoSession(t *testing.T) {
	e := newEnv(t, false)
	resp, body := e.do(e.client(), "GET", "/favicon.ico", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") {
		t.Fatalf("favicon: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
