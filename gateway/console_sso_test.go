package gateway_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/oidctest"
	"github.com/switchover-gw/switchover/internal/poll"
)

// ssoSignIn goes through single sign-on as user at idp with c (which
// follows no redirect), and returns the callback's status.
func ssoSignIn(t *testing.T, c *consoleClient, idp *oidctest.Provider, user string) int {
	t.Helper()
	idp.SignInAs(user)
	st, _, h := c.do("GET", "/console/sso/start", nil, "")
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), idp.Issuer+"/authorize?") {
		t.Fatalf("start: %d to %q", st, h.Get("Location"))
	}
	resp, err := c.c.Get(h.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, ok := strings.CutPrefix(resp.Header.Get("Location"), c.base)
	if resp.StatusCode != http.StatusFound || !ok {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	st, _, _ = c.do("GET", back, nil, "")
	return st
}

// TestConsoleSSOAuditTrail: through the admin listener of a gateway with
// a SQLite store, a person signed in with single sign-on acts with the
// role their groups map to, and the store's audit trail (GET
// /admin/audit) holds their sign-in and their drain under their
// identity, and a person refused for want of a role under theirs; no
// token or client secret is in the trail, the timeline or the log.
func TestConsoleSSOAuditTrail(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	})
	idp := oidctest.Start(t, ssoClientID, ssoClientSecret, h.admin+"/console/sso/callback", map[string]oidctest.User{
		"otto":    {Subject: "s-otto", Email: "otto@example.com", Claims: map[string]any{"roles": []string{"Switchover.Operator"}}},
		"mallory": {Subject: "s-mallory", Email: "mallory@example.com", Claims: map[string]any{"roles": []string{"Other.App"}}},
	})
	idp.SetClock(h.clock.Now)
	cfg := *h.gw.Config()
	admin := *cfg.Admin
	admin.SSO = &config.SSO{Name: "Entra ID", Issuer: idp.Issuer, ClientID: ssoClientID, ClientSecret: ssoClientSecret,
		RedirectURL: h.admin + "/console/sso/callback", RolesClaim: "roles", Operator: []string{"Switchover.Operator"}}
	cfg.Admin = &admin
	if err := cfg.Validate("test"); err != nil {
		t.Fatal(err)
	}
	if err := h.gw.Reload(&cfg); err != nil {
		t.Fatal(err)
	}

	c := newConsoleClient(t, h.admin)
	if st := ssoSignIn(t, c, idp, "otto"); st != http.StatusOK {
		t.Fatalf("otto's sign-in: %d", st)
	}
	_, page, _ := c.do("GET", "/console/", nil, "")
	m := regexp.MustCompile(`<meta name="csrf" content="([^"]+)">`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `otto@example.com <span class="role">operator</span>`) {
		t.Fatalf("otto's overview:\n%s", page)
	}
	c.csrf = m[1]
	h.clock.Advance(time.Second) // entries of one instant are listed in no set order
	if st := c.act("action", "drain", "backend", "aoai-swedencentral"); st != http.StatusSeeOther {
		t.Fatalf("otto's drain: %d", st)
	}
	if st := c.act("action", "reload"); st != http.StatusForbidden {
		t.Fatalf("otto's reload: %d, want 403", st)
	}
	h.clock.Advance(time.Second)
	if st := ssoSignIn(t, newConsoleClient(t, h.admin), idp, "mallory"); st != http.StatusForbidden {
		t.Fatalf("mallory's sign-in: %d, want 403", st)
	}

	type entry struct{ Actor, Action string }
	var got struct{ Entries []entry }
	var raw []byte
	has := func(action, actor string) bool {
		for _, e := range got.Entries {
			if e.Action == action && e.Actor == actor {
				return true
			}
		}
		return false
	}
	poll.Until(t, 10*time.Second, func() bool {
		var st int
		st, raw = h.adminCall("GET", "/admin/audit", "", adminKey)
		return st == http.StatusOK && json.Unmarshal(raw, &got) == nil &&
			has("console:sign_in", "otto@example.com") && has("admin:drain", "otto@example.com") && has("console:sso_refused", "mallory@example.com")
	}, func() string { return "the trail: " + string(raw) })
	if has("admin:reload", "otto@example.com") {
		t.Error("the operator's refused reload is in the trail as a reload")
	}
	events, _ := json.Marshal(h.gw.Status().Events)
	for _, s := range append(idp.Issued(), ssoClientSecret) {
		for where, text := range map[string]string{"audit trail": string(raw), "timeline": string(events), "log": h.logs.String()} {
			if strings.Contains(text, s) {
				t.Errorf("the %s holds a token or the client secret (%.10s…)", where, s)
			}
		}
	}
	if len(idp.Issued()) != 4 {
		t.Errorf("the provider issued %d tokens, want 2 for each of 2 sign-ins", len(idp.Issued()))
	}
}
