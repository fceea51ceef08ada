package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// syncBuffer is a log sink safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// keyGateway is the fake gateway with a real SQLite store and the real
// admin API of keys over it, as the gateway wires it.
type keyGateway struct {
	*fakeGateway
	log     *slog.Logger
	mu      sync.Mutex
	actions []string // OnAction's: action, what, who
}

var _ KeyManager = (*keyGateway)(nil)

func (k *keyGateway) api(who string) *ledgerapi.Handler {
	return &ledgerapi.Handler{
		Store:  k.store,
		Logger: k.log,
		Pools:  func() []string { return []string{"chat"} },
		Models: func() []string { return []string{"chat"} },
		Actor:  func(*http.Request) string { return who },
		OnAction: func(action, what, who string) {
			k.mu.Lock()
			k.actions = append(k.actions, action+" | "+what+" | "+who)
			k.mu.Unlock()
		},
	}
}

func (k *keyGateway) KeysAPI(who string) http.Handler {
	mux := http.NewServeMux()
	k.api(who).Register(mux)
	return mux
}

func (k *keyGateway) audit() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.actions...)
}

// keyEnv is a console over a keyGateway, its log (console's and the
// API's) in logs.
type keyEnv struct {
	*env
	kg   *keyGateway
	logs *syncBuffer
}

func newKeyEnv(t *testing.T) *keyEnv {
	t.Helper()
	f := newFake(t)
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/ledger.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.store = st
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	kg := &keyGateway{fakeGateway: f, log: log}
	c := New(t.Context(), kg, Options{Interval: 20 * time.Millisecond, Logger: log})
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &keyEnv{env: &env{t: t, gw: f, c: c, srv: srv}, kg: kg, logs: logs}
}

// post sends a key form and checks it is answered 303 to want.
func (e *keyEnv) post(c *http.Client, path string, form url.Values, want string) {
	e.t.Helper()
	resp, body := e.do(c, "POST", path, form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
		e.t.Fatalf("POST %s: %d %q, want 303 to %s\n%s", path, resp.StatusCode, resp.Header.Get("Location"), want, body)
	}
}

func (e *keyEnv) keys() []ledger.Key {
	e.t.Helper()
	ks, err := e.gw.store.Keys(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	return ks
}

var secretRE = regexp.MustCompile(`<code class="secret" id="secret">([^<]+)</code>`)

// secretPage reads the one-time page and returns the secret on it.
func (e *keyEnv) secretPage(c *http.Client) (string, string) {
	e.t.Helper()
	resp, page := e.do(c, "GET", "/console/keys/secret", nil)
	m := secretRE.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		e.t.Fatalf("secret page: %d\n%s", resp.StatusCode, page)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		e.t.Errorf("secret page Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	return html.UnescapeString(m[1]), page
}

// flash is the message shown on the keys page.
func (e *keyEnv) flash(c *http.Client) string {
	e.t.Helper()
	_, page := e.do(c, "GET", "/console/keys", nil)
	m := regexp.MustCompile(`<p class="flash" role="status" id="flash">([^<]*)</p>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestKeyCreatedShowsItsSecretOnce(t *testing.T) {
	e := newKeyEnv(t)
	c, csrf := e.login(adminKey)
	if _, page := e.do(c, "GET", "/console/keys", nil); !strings.Contains(page, `id="key-create"`) || !strings.Contains(page, `id="team-create"`) {
		t.Fatalf("an admin's keys page has no create forms:\n%s", page)
	}
	e.post(c, "/console/teams/put", url.Values{"csrf": {csrf}, "name": {"search"}, "budget": {"500/month"}}, "/console/keys")
	e.post(c, "/console/keys/create", url.Values{"csrf": {csrf}, "name": {"ci-runner"}, "team": {"search"}, "pools": {"chat"},
		"models": {" chat "}, "rpm": {"600"}, "tpm": {"200k"}, "budget": {"50/month"}, "soft_budget": {"40"}, "patience": {"30s"}, "expires": {"90d"},
		"tags": {"env:ci, owner:search"}}, "/console/keys/secret")
	secret, page := e.secretPage(c)
	ks := e.keys()
	if len(ks) != 1 {
		t.Fatalf("store has %d keys", len(ks))
	}
	k := ks[0]
	if p, _ := ledger.LookupPrefix(secret); p != k.Prefix || !strings.Contains(page, k.ID) {
		t.Fatalf("secret %q is not key %s's (prefix %s)", secret, k.ID, k.Prefix)
	}
	if got, err := ledger.Verify(t.Context(), e.gw.store, secret, time.Now()); err != nil || got.ID != k.ID {
		t.Fatalf("the secret shown does not verify: %v %v", got.ID, err)
	}
	if k.Name != "ci-runner" || k.Team != "search" || k.RPM != 600 || k.TPM != 200000 || k.Budget != 50 || k.SoftBudget != 40 || k.BudgetPeriod != ledger.PeriodMonth ||
		k.Patience != 30*time.Second || k.Expires.IsZero() || strings.Join(k.Pools, ",") != "chat" || strings.Join(k.Models, ",") != "chat" ||
		strings.Join(k.Tags, ",") != "env:ci,owner:search" {
		t.Fatalf("key stored: %+v", k)
	}
	// Once: the page again goes back to the keys, which show the prefix only.
	resp, again := e.do(c, "GET", "/console/keys/secret", nil)
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(again, secret) {
		t.Fatalf("the secret page again: %d\n%s", resp.StatusCode, again)
	}
	_, list := e.do(c, "GET", "/console/keys", nil)
	if !strings.Contains(list, "(alert at $40") {
		t.Errorf("the keys page does not show the soft budget:\n%s", list)
	}
	rest := secret[strings.Index(secret, k.Prefix)+len(k.Prefix):] // the part never shown
	if !strings.Contains(list, k.Prefix+"…") || strings.Contains(list, rest) {
		t.Fatalf("keys page after creation: prefix shown %v, secret shown %v", strings.Contains(list, k.Prefix), strings.Contains(list, secret))
	}
	if strings.Contains(e.logs.String(), rest) {
		t.Fatalf("the secret is in the log:\n%s", e.logs)
	}
	audit := strings.Join(e.kg.audit(), "\n")
	for _, want := range []string{"team:put | team search | admin in the console from 127.0.0.1", "key:create | key " + k.ID + " (ci-runner) | admin in the console from 127.0.0.1"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %q:\n%s", want, audit)
		}
	}
	if !strings.Contains(e.logs.String(), "action=key:create") {
		t.Errorf("the API's log line of the change is missing:\n%s", e.logs)
	}
}

func TestKeyRotateEditRevoke(t *testing.T) {
	e := newKeyEnv(t)
	ctx := t.Context()
	k, old, err := ledger.NewKey(ctx, e.gw.store, ledger.Key{Name: "laptop", RPM: 10, Budget: 5, BudgetPeriod: ledger.PeriodDay}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, csrf := e.login(adminKey)

	e.post(c, "/console/keys/rotate", url.Values{"csrf": {csrf}, "id": {k.ID}, "grace": {"10m"}}, "/console/keys/secret")
	secret, page := e.secretPage(c)
	if secret == old || !strings.Contains(page, `id="grace-until"`) {
		t.Fatalf("rotation page: new secret %v, grace shown %v", secret != old, strings.Contains(page, "grace-until"))
	}
	for _, s := range []string{old, secret} { // the old one in its grace period
		if got, err := ledger.Verify(ctx, e.gw.store, s, time.Now()); err != nil || got.ID != k.ID {
			t.Fatalf("after rotation with grace, a secret does not verify: %v", err)
		}
	}

	e.post(c, "/console/keys/edit", url.Values{"csrf": {csrf}, "id": {k.ID}, "rpm": {"100"}, "tpm": {""}, "max_concurrent": {"4"},
		"budget": {""}, "patience": {"1m"}, "expires": {""}}, "/console/keys")
	if f := e.flash(c); !strings.HasPrefix(f, "Done: change key "+k.ID) {
		t.Fatalf("edit's message: %q", f)
	}
	got := e.keys()[0]
	if got.RPM != 100 || got.MaxConcurrent != 4 || got.Budget != 0 || got.Patience != time.Minute || got.Name != "laptop" {
		t.Fatalf("key after edit: %+v", got)
	}

	e.post(c, "/console/keys/revoke", url.Values{"csrf": {csrf}, "id": {k.ID}}, "/console/keys")
	if e.keys()[0].Revoked.IsZero() {
		t.Fatal("key not revoked")
	}
	if _, err := ledger.Verify(ctx, e.gw.store, secret, time.Now()); err == nil {
		t.Fatal("a revoked key's secret still verifies")
	}
	if _, list := e.do(c, "GET", "/console/keys", nil); strings.Contains(list, secret) || strings.Contains(list, `data-act="key-revoke"`) {
		t.Fatal("keys page after revocation shows the secret or a revoke button for the revoked key")
	}
	audit := strings.Join(e.kg.audit(), "\n")
	for _, a := range []string{"key:rotate", "key:update", "key:revoke"} {
		if !strings.Contains(audit, a+" | key "+k.ID) {
			t.Errorf("audit lacks %s:\n%s", a, audit)
		}
	}
}

// apiMessage is what the admin API answers body with at method path.
func (e *keyEnv) apiMessage(method, path, body string) string {
	e.t.Helper()
	w := httptest.NewRecorder()
	e.kg.KeysAPI("test").ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	var a apiError
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.Error.Message == "" || w.Code < 400 {
		e.t.Fatalf("the API accepted %s: %d %s", body, w.Code, w.Body)
	}
	return a.Error.Message
}

func TestKeyBadInputShowsTheAPIsMessageAndChangesNothing(t *testing.T) {
	e := newKeyEnv(t)
	ctx := t.Context()
	k, _, err := ledger.NewKey(ctx, e.gw.store, ledger.Key{Name: "laptop", RPM: 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, csrf := e.login(adminKey)
	for _, tc := range []struct {
		name, path string
		form       url.Values
		apiMethod  string
		apiPath    string
		apiBody    string
	}{
		{"bad rpm", "/console/keys/create", url.Values{"name": {"x"}, "rpm": {"lots"}}, "POST", "/admin/keys", `{"name":"x","rpm":"lots"}`},
		{"no name", "/console/keys/create", url.Values{"rpm": {"5"}}, "POST", "/admin/keys", `{"rpm":"5"}`},
		{"unknown pool", "/console/keys/create", url.Values{"name": {"x"}, "pools": {"nope"}}, "POST", "/admin/keys", `{"name":"x","pools":["nope"]}`},
		{"unknown team", "/console/keys/create", url.Values{"name": {"x"}, "team": {"ghosts"}}, "POST", "/admin/keys", `{"name":"x","team":"ghosts"}`},
		{"past expiry", "/console/keys/create", url.Values{"name": {"x"}, "expires": {"2001-01-01T00:00:00Z"}}, "POST", "/admin/keys", `{"name":"x","expires":"2001-01-01T00:00:00Z"}`},
		{"bad budget edit", "/console/keys/edit", url.Values{"id": {k.ID}, "rpm": {"99"}, "budget": {"plenty"}}, "PATCH", "/admin/keys/" + k.ID, `{"rpm":"99","budget":"plenty"}`},
		{"bad grace", "/console/keys/rotate", url.Values{"id": {k.ID}, "grace": {"forever"}}, "POST", "/admin/keys/" + k.ID + "/rotate", `{"grace":"forever"}`},
		{"unknown key", "/console/keys/revoke", url.Values{"id": {"key_nope"}}, "POST", "/admin/keys/key_nope/revoke", ``},
		{"bad team budget", "/console/teams/put", url.Values{"name": {"search"}, "budget": {"50/fortnight"}}, "PUT", "/admin/teams/search", `{"budget":"50/fortnight"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := e.apiMessage(tc.apiMethod, tc.apiPath, tc.apiBody)
			tc.form.Set("csrf", csrf)
			e.post(c, tc.path, tc.form, "/console/keys")
			if f := e.flash(c); !strings.HasPrefix(f, "Failed: ") || !strings.HasSuffix(f, ": "+want) {
				t.Fatalf("message %q, want the API's %q", f, want)
			}
			ks := e.keys()
			if len(ks) != 1 || ks[0].RPM != 10 || ks[0].Prefix != k.Prefix || !ks[0].Revoked.IsZero() {
				t.Fatalf("keys changed: %+v", ks)
			}
			if ts, _ := e.gw.store.Teams(ctx); len(ts) != 0 {
				t.Fatalf("teams changed: %+v", ts)
			}
		})
	}
	if a := e.kg.audit(); len(a) != 0 {
		t.Fatalf("refused changes audited as made: %v", a)
	}
}

func TestTeamCreatedAndEdited(t *testing.T) {
	e := newKeyEnv(t)
	c, csrf := e.login(adminKey)
	e.post(c, "/console/teams/put", url.Values{"csrf": {csrf}, "name": {"search"}, "rpm": {"1k"}, "budget": {"500/month"}, "soft_budget": {"400"}}, "/console/keys")
	_, page := e.do(c, "GET", "/console/keys", nil)
	if !strings.Contains(page, `<tr data-team="search"><td>search</td><td>1000</td>`) || !strings.Contains(page, `name="soft_budget" value="400"`) {
		t.Fatalf("team not listed with its limits and form:\n%s", page)
	}
	e.post(c, "/console/teams/put", url.Values{"csrf": {csrf}, "name": {"search"}, "rpm": {""}, "tpm": {"50k"}, "budget": {"800/month"}, "soft_budget": {""}}, "/console/keys")
	ts, err := e.gw.store.Teams(t.Context())
	if err != nil || len(ts) != 1 {
		t.Fatalf("teams: %v %v", ts, err)
	}
	if tm := ts[0]; tm.RPM != 0 || tm.TPM != 50000 || tm.Budget != 800 || tm.SoftBudget != 0 {
		t.Fatalf("team after edit: %+v", tm)
	}
}

// Key forms are an admin's: a viewer sees keys but no forms and is
// refused; no session, another origin or no CSRF token is refused too.
func TestKeyFormsRefusedToViewersAndStrangers(t *testing.T) {
	e := newKeyEnv(t)
	ctx := t.Context()
	k, _, err := ledger.NewKey(ctx, e.gw.store, ledger.Key{Name: "laptop", RPM: 10}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	v, vcsrf := e.login(viewerKey)
	_, page := e.do(v, "GET", "/console/keys", nil)
	if !strings.Contains(page, k.ID) {
		t.Fatal("a viewer does not see the keys")
	}
	for _, form := range []string{"key-create", "team-create", "key-rotate", "key-revoke", "key-edit", "team-put", "/console/keys/"} {
		if strings.Contains(page, form) {
			t.Fatalf("a viewer's keys page has %q", form)
		}
	}
	a, acsrf := e.login(adminKey)
	forms := map[string]url.Values{
		"/console/keys/create": {"name": {"evil"}},
		"/console/keys/edit":   {"id": {k.ID}, "rpm": {"1000000"}},
		"/console/keys/rotate": {"id": {k.ID}},
		"/console/keys/revoke": {"id": {k.ID}},
		"/console/teams/put":   {"name": {"evil"}},
	}
	for path, form := range forms {
		with := func(csrf string) url.Values {
			f := url.Values{"csrf": {csrf}}
			for k, v := range form {
				f[k] = v
			}
			return f
		}
		for _, tc := range []struct {
			name   string
			c      *http.Client
			form   url.Values
			hdr    []string
			status int
		}{
			{"viewer", v, with(vcsrf), nil, http.StatusForbidden},
			{"no session", e.client(), with(acsrf), nil, http.StatusUnauthorized},
			{"other origin", a, with(acsrf), []string{"Origin", "http://evil.example"}, http.StatusForbidden},
			{"cross-site fetch", a, with(acsrf), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
			{"no CSRF token", a, form, nil, http.StatusForbidden},
			{"the viewer's CSRF token", a, with(vcsrf), nil, http.StatusForbidden},
		} {
			if resp, body := e.do(tc.c, "POST", path, tc.form, tc.hdr...); resp.StatusCode != tc.status {
				t.Errorf("%s POST %s: %d, want %d\n%s", tc.name, path, resp.StatusCode, tc.status, body)
			}
		}
	}
	ks := e.keys()
	if len(ks) != 1 || ks[0].RPM != 10 || ks[0].Prefix != k.Prefix || !ks[0].Revoked.IsZero() {
		t.Fatalf("a refused form changed the key: %+v", ks)
	}
	if ts, _ := e.gw.store.Teams(ctx); len(ts) != 0 {
		t.Fatalf("a refused form made a team: %+v", ts)
	}
	if a := e.kg.audit(); len(a) != 0 {
		t.Fatalf("refused forms reached the API: %v", a)
	}
}

// Without a store, an admin gets no key forms, and a form posted anyway
// is answered 409.
func TestKeyFormsWithoutStore(t *testing.T) {
	e := newKeyEnv(t)
	e.gw.store = nil
	c, csrf := e.login(adminKey)
	if _, page := e.do(c, "GET", "/console/keys", nil); strings.Contains(page, "key-create") {
		t.Fatal("key forms without a store")
	}
	if resp, _ := e.do(c, "POST", "/console/keys/create", url.Values{"csrf": {csrf}, "name": {"x"}}); resp.StatusCode != http.StatusConflict {
		t.Fatalf("create without a store: %d", resp.StatusCode)
	}
}

// The edit form shows the limits in force in a form the API reads back:
// saved as shown, it changes nothing.
func TestKeyEditFormAsShownChangesNothing(t *testing.T) {
	e := newKeyEnv(t)
	now := time.Now()
	on := true
	if err := e.gw.store.PutTeam(t.Context(), ledger.Team{Name: "search"}); err != nil {
		t.Fatal(err)
	}
	k, _, err := ledger.NewKey(t.Context(), e.gw.store, ledger.Key{Name: "laptop", Team: "search", Pools: []string{"chat"}, Models: []string{"chat"},
		RPM: 600, TPM: 250000, MaxConcurrent: 3,
		Budget: 12.5, BudgetPeriod: ledger.PeriodWeek, SoftBudget: 10, Patience: 90 * time.Second, Expires: now.Add(90 * 24 * time.Hour).Truncate(time.Second).UTC(),
		Budgets: []ledger.ScopedBudget{{Pool: "chat", Budget: 5, Period: ledger.PeriodDay}}, Cache: &cachepolicy.Policy{TTL: 10 * time.Minute},
		RequestLog: &ledger.KeyRequestLog{Bodies: &on, MaxBodyBytes: 2048}, Tags: []string{"env:ci", "owner:search"},
		Metadata: map[string]string{"owner": "search team", "ticket": "OPS-1, OPS-2"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	c, csrf := e.login(adminKey)
	_, page := e.do(c, "GET", "/console/keys", nil)
	i := strings.Index(page, `action="/console/keys/edit"`)
	if i < 0 {
		t.Fatalf("no edit form:\n%s", page)
	}
	formHTML := page[i : i+strings.Index(page[i:], "</form>")]
	form := url.Values{"csrf": {csrf}}
	for _, m := range regexp.MustCompile(`name="([a-z_]+)" value="([^"]*)"`).FindAllStringSubmatch(formHTML, -1) {
		if m[1] != "csrf" {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
	}
	for _, m := range regexp.MustCompile(`<textarea name="([a-z_]+)"[^>]*>([^<]*)</textarea>`).FindAllStringSubmatch(formHTML, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	for _, f := range []string{"id", "name", "team", "pools", "models", "rpm", "tpm", "max_concurrent", "budget", "soft_budget", "patience", "expires",
		"pool_budgets", "cache", "request_log", "tags", "metadata"} {
		if form.Get(f) == "" {
			t.Fatalf("edit form shows no %s: %v", f, form)
		}
	}
	e.post(c, "/console/keys/edit", form, "/console/keys")
	if f := e.flash(c); !strings.HasPrefix(f, "Done:") {
		t.Fatalf("saving the form as shown: %q", f)
	}
	got := e.keys()[0]
	if got.RPM != k.RPM || got.TPM != k.TPM || got.MaxConcurrent != k.MaxConcurrent || got.Budget != k.Budget || got.SoftBudget != k.SoftBudget || got.BudgetPeriod != k.BudgetPeriod ||
		got.Patience != k.Patience || !got.Expires.Equal(k.Expires) || !sameSettings(got, k) {
		t.Fatalf("saved as shown, the key changed:\n got %s\nwant %s", keyText(got), keyText(k))
	}
	// The soft budget emptied: removed, the budget kept.
	form.Set("soft_budget", "")
	e.post(c, "/console/keys/edit", form, "/console/keys")
	if got := e.keys()[0]; got.SoftBudget != 0 || got.Budget != k.Budget {
		t.Fatalf("soft budget emptied: soft %v, budget %v; want 0 and %v", got.SoftBudget, got.Budget, k.Budget)
	}
}

// sameSettings reports whether a and b have the same name, team, access
// and settings beyond their limits (caches by what they do: a default
// written out is the same policy).
func sameSettings(a, b ledger.Key) bool {
	return a.Name == b.Name && a.Team == b.Team && slices.Equal(a.Pools, b.Pools) && slices.Equal(a.Models, b.Models) &&
		slices.Equal(a.Tags, b.Tags) && maps.Equal(a.Metadata, b.Metadata) && slices.Equal(a.Budgets, b.Budgets) &&
		a.Cache.String() == b.Cache.String() && reflect.DeepEqual(a.RequestLog, b.RequestLog)
}

// keyText is k's fields as text (a Key prints as its ID and prefix).
func keyText(k ledger.Key) string {
	b, _ := json.Marshal(k)
	return fmt.Sprintf("%s patience %v", b, k.Patience)
}

// TestKeySettingsEditedAndRemoved: the key forms take what switchover
// keys takes beyond the limits (budgets of a pool, cache, request log,
// tags, metadata, pools and models): set on creation, changed by an
// edit, removed by an empty field; one the console cannot read is
// refused with the field named, and nothing changes.
func TestKeySettingsEditedAndRemoved(t *testing.T) {
	e := newKeyEnv(t)
	c, csrf := e.login(adminKey)
	e.post(c, "/console/keys/create", url.Values{"csrf": {csrf}, "name": {"batch"}, "pool_budgets": {"chat=5/day"},
		"cache": {"ttl=10m"}, "request_log": {"bodies=on"}, "metadata": {"owner=search team\r\nticket=OPS-1, OPS-2\r\n"}}, "/console/keys/secret")
	k := e.keys()[0]
	if want := []ledger.ScopedBudget{{Pool: "chat", Budget: 5, Period: ledger.PeriodDay}}; !slices.Equal(k.Budgets, want) ||
		k.Cache.String() != "ttl=10m0s,coalesce=on" || !k.RequestLog.BodiesOn() ||
		!maps.Equal(k.Metadata, map[string]string{"owner": "search team", "ticket": "OPS-1, OPS-2"}) {
		t.Fatalf("key created: %s", keyText(k))
	}
	_, page := e.do(c, "GET", "/console/keys", nil)
	for _, want := range []string{"pool budgets chat=5/day", "cache ttl=10m0s,coalesce=on", "request log bodies=on", "owner=search team"} {
		if !strings.Contains(page, want) {
			t.Errorf("the keys table does not show %q", want)
		}
	}

	edit := func(f url.Values) {
		t.Helper()
		f.Set("csrf", csrf)
		f.Set("id", k.ID)
		e.post(c, "/console/keys/edit", f, "/console/keys")
		if m := e.flash(c); !strings.HasPrefix(m, "Done: change key "+k.ID) {
			t.Fatalf("edit's message: %q", m)
		}
	}
	edit(url.Values{"pools": {"chat"}, "models": {"chat"}, "tags": {"env:batch"}, "pool_budgets": {"chat=7/1h"},
		"cache": {"ttl=1m,coalesce=off"}, "request_log": {"bodies=off,max_body_bytes=1KiB"}, "metadata": {"owner=ads"}})
	got := e.keys()[0]
	if !slices.Equal(got.Pools, []string{"chat"}) || !slices.Equal(got.Models, []string{"chat"}) || !slices.Equal(got.Tags, []string{"env:batch"}) ||
		got.Budgets[0].Budget != 7 || got.Budgets[0].Period != "1h" || got.Cache.String() != "ttl=1m0s,coalesce=off" ||
		got.RequestLog.BodiesOn() || got.RequestLog.MaxBodyBytes != 1024 || !maps.Equal(got.Metadata, map[string]string{"owner": "ads"}) {
		t.Fatalf("key after the edit: %s", keyText(got))
	}

	// Refused by the console before the API: the field named, nothing
	// changed, nothing audited.
	audited := len(e.kg.audit())
	for _, tc := range []struct{ field, value, want string }{
		{"cache", "ttl=soon", "cache: "},
		{"request_log", "bodies=maybe", "request log: bodies: "},
		{"pool_budgets", "chat", "budgets of a pool: "},
		{"metadata", "owner", "metadata: "},
	} {
		e.post(c, "/console/keys/edit", url.Values{"csrf": {csrf}, "id": {k.ID}, tc.field: {tc.value}, "rpm": {"5"}}, "/console/keys")
		if m := e.flash(c); !strings.HasPrefix(m, "Failed: change key "+k.ID+": "+tc.want) {
			t.Errorf("%s=%q: %q, want a failure naming %q", tc.field, tc.value, m, tc.want)
		}
	}
	if now := e.keys()[0]; keyText(now) != keyText(got) || len(e.kg.audit()) != audited {
		t.Fatalf("a refused edit changed the key or was audited:\n%s\n%s", keyText(now), keyText(got))
	}

	// Emptied: each removed (all pools and models, no tags, the pools'
	// cache and request log), but the name, which a key keeps.
	edit(url.Values{"name": {""}, "pools": {""}, "models": {""}, "tags": {""}, "pool_budgets": {""}, "cache": {""}, "request_log": {""}, "metadata": {""}})
	got = e.keys()[0]
	if got.Pools != nil || got.Models != nil || got.Tags != nil || got.Budgets != nil || got.Cache != nil || got.RequestLog != nil || got.Metadata != nil || got.Name != "batch" {
		t.Fatalf("key after emptying its settings: %s", keyText(got))
	}

	// Metadata is anyone's text: the table and the form show it as text.
	edit(url.Values{"metadata": {"note=<script>alert(1)</script>"}})
	_, page = e.do(c, "GET", "/console/keys", nil)
	if strings.Contains(page, "<script>alert(1)") || !strings.Contains(page, "note=&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the keys page does not show a key's metadata escaped")
	}
}

// TestKeyMetadataShownToAdminsOnly: a key's metadata, free-form text that
// may name people, is in the keys table for an admin and not for a
// viewer, as end users are; its other settings are shown to both.
func TestKeyMetadataShownToAdminsOnly(t *testing.T) {
	e := newKeyEnv(t)
	if _, _, err := ledger.NewKey(t.Context(), e.gw.store, ledger.Key{Name: "laptop", Tags: []string{"env:ci"},
		Metadata: map[string]string{"owner": "jane.doe@example.com"}, Cache: &cachepolicy.Policy{TTL: time.Minute}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		role, key string
		metadata  bool
	}{{"admin", adminKey, true}, {"viewer", viewerKey, false}} {
		c, _ := e.login(tc.key)
		_, page := e.do(c, "GET", "/console/keys", nil)
		if !strings.Contains(page, "tags env:ci") || !strings.Contains(page, "cache ttl=1m0s") {
			t.Errorf("%s: the keys table lacks the key's tags or cache", tc.role)
		}
		if got := strings.Contains(page, "jane.doe@example.com"); got != tc.metadata {
			t.Errorf("%s: metadata shown %v, want %v", tc.role, got, tc.metadata)
		}
	}
}
