package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/oidctest"
	"github.com/switchover-gw/switchover/internal/poll"
)

// The test provider's client of the console.
const (
	ssoClientID     = "switchover-console"
	ssoClientSecret = "console-sso-client-secret-0123456789"
)

// TestConsoleSSOInBrowser drives single sign-on in Chromium
// (console/e2e/sso.mjs) against a provider the test starts on another
// site (localhost, the console being on 127.0.0.1): a person picks who
// they are at the provider and lands in the console with the role their
// groups map to; an operator drains from the page and has no reload or
// key forms; a person with no mapped role is refused with a page that
// says why; an admin gets the key forms; the admin key still signs in.
// Then the store's audit trail holds the sign-ins, the refusal and the
// drain under each person's identity, and no token the provider issued.
func TestConsoleSSOInBrowser(t *testing.T) {
	t.Parallel() // a browser mostly waits: the five run two at a time, after the package's other tests
	browserTools(t)
	e := startConsoleEnv(t)
	idp := oidctest.Start(t, ssoClientID, ssoClientSecret, e.admin+"/console/sso/callback", map[string]oidctest.User{
		"ada@example.com":     {Subject: "s-ada", Email: "ada@example.com", Claims: map[string]any{"groups": []string{"g-admins"}}},
		"otto@example.com":    {Subject: "s-otto", Email: "otto@example.com", Claims: map[string]any{"groups": []string{"g-oncall"}}},
		"mallory@example.com": {Subject: "s-mallory", Email: "mallory@example.com", Claims: map[string]any{"groups": []string{"g-contractors"}}},
	})
	idp.Issuer = strings.Replace(idp.Issuer, "127.0.0.1", "localhost", 1)
	// admin.sso added to the running gateway's configuration by a reload.
	cfg := *e.g.Config()
	admin := *cfg.Admin
	admin.SSO = &config.SSO{Name: "Test IdP", Issuer: idp.Issuer, ClientID: ssoClientID, ClientSecret: ssoClientSecret,
		RedirectURL: e.admin + "/console/sso/callback", Admin: []string{"g-admins"}, Operator: []string{"g-oncall"}}
	cfg.Admin = &admin
	if err := cfg.Validate("test"); err != nil {
		t.Fatal(err)
	}
	if err := e.g.Reload(&cfg); err != nil {
		t.Fatal(err)
	}
	e.runBrowser(t, browserScript{name: "sso.mjs",
		env: []string{"IDP_URL=" + idp.Issuer, "IDP_NAME=Test IdP", "OPERATOR=otto@example.com", "ADMIN=ada@example.com",
			"UNMAPPED=mallory@example.com", "DRAIN_POOL=chat-prod", "DRAIN_BACKEND=swedencentral"},
		shots: []string{"console-sso-login.png", "console-sso-refused.png"}})
	// The store's audit trail, through the admin API.
	req, _ := http.NewRequest("GET", e.admin+"/admin/audit?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+consoleAdminKey)
	var entries []ssoAuditEntry
	// The trail is written off the request path.
	poll.Until(t, 10*time.Second, func() bool {
		entries = readAudit(t, req)
		return hasAudit(entries, "admin:restore", "otto@example.com") && hasAudit(entries, "console:sign_in", "admin")
	}, func() string { return fmt.Sprintf("audit trail %+v", entries) })
	for _, w := range []struct{ action, actor string }{
		{"console:sign_in", "otto@example.com"},
		{"admin:drain", "otto@example.com"},
		{"admin:restore", "otto@example.com"},
		{"console:sso_refused", "mallory@example.com"},
		{"console:sign_in", "ada@example.com"},
		{"console:sign_in", "admin"},
	} {
		if !hasAudit(entries, w.action, w.actor) {
			t.Errorf("the audit trail has no %s by %s: %+v", w.action, w.actor, entries)
		}
	}
	all, _ := json.Marshal(entries)
	events, _ := json.Marshal(e.g.Status().Events)
	for _, s := range append(idp.Issued(), ssoClientSecret) {
		if bytes.Contains(all, []byte(s)) || bytes.Contains(events, []byte(s)) {
			t.Errorf("the audit trail or the timeline holds a token or the client secret (%.10s…)", s)
		}
	}
	if len(idp.Issued()) < 4 {
		t.Errorf("the provider issued %d tokens, want 2 for each of 3 sign-ins", len(idp.Issued()))
	}
}

type ssoAuditEntry struct {
	Actor, Action string
	Detail        json.RawMessage
}

func readAudit(t *testing.T, req *http.Request) []ssoAuditEntry {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Entries []ssoAuditEntry }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		t.Fatalf("GET /admin/audit: %d", resp.StatusCode)
	}
	return body.Entries
}

func hasAudit(es []ssoAuditEntry, action, actor string) bool {
	for _, e := range es {
		if e.Action == action && e.Actor == actor {
			return true
		}
	}
	return false
}
