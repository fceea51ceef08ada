package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

type auditAnswer struct {
	Entries []ledger.AuditEntry `json:"entries"`
}

// TestAuditTrailSurvivesRestart (issue 29 §5): an admin action, a key
// created, a refused console sign-in and a sign-in are written to the
// store's audit trail with who did them; after a restart on the same
// SQLite file the in-memory timeline has forgotten them but GET
// /admin/audit still lists them, filtered by actor and action, without
// any secret. Without the
// admin key, with a gateway or viewer key, or from another origin the
// trail is refused; bad parameters are a 400 in the admin API's format.
func TestAuditTrailSurvivesRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	mod := func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+signinViewerKey+"}]}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	}
	a := startAnswering(t, mod)
	if st, b := a.adminCall("POST", "/admin/backends/aoai-swedencentral/drain", "", adminKey, gateway.ActorHeader, "alice"); st != http.StatusOK {
		t.Fatalf("drain: %d %s", st, b)
	}
	a.clock.Advance(time.Second) // entries of one instant are listed in no set order
	st, b := a.adminCall("POST", "/admin/keys", `{"name":"ci"}`, adminKey, gateway.ActorHeader, "alice")
	var created struct{ Secret string }
	if st != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.Secret == "" {
		t.Fatalf("create: %d %s", st, b)
	}
	a.clock.Advance(time.Second)
	cc := newConsoleClient(t, a.admin)
	if st, _, _ := cc.do("POST", "/console/login", url.Values{"key": {"wrong-key-0123456789abcdef"}}, ""); st == http.StatusSeeOther {
		t.Fatal("a wrong key signed in")
	}
	a.clock.Advance(time.Second)
	cc.login(signinViewerKey)
	// The trail is written off the request path: wait for it.
	poll.Until(t, 10*time.Second, func() bool {
		st, b := a.adminCall("GET", "/admin/audit", "", adminKey)
		var got auditAnswer
		return st == http.StatusOK && json.Unmarshal(b, &got) == nil && len(got.Entries) == 4
	}, func() string {
		_, b := a.adminCall("GET", "/admin/audit", "", adminKey)
		return "the trail: " + string(b)
	})
	a.shutdown()

	b2 := startAnswering(t, mod)
	b2.clock.Advance(time.Minute) // each harness's clock starts at the same instant
	if n, _ := countKind(b2.adminEvents(t), "admin:drain"); n != 0 {
		t.Fatal("the timeline kept the drain across the restart: the test proves nothing")
	}
	for _, c := range []struct{ name, key, origin string }{
		{"no key", "", ""}, {"a gateway key", appKey, ""}, {"a viewer key", signinViewerKey, ""},
		{"another origin", adminKey, "http://evil.example"},
	} {
		hdr := []string{}
		if c.origin != "" {
			hdr = append(hdr, "Origin", c.origin)
		}
		if st, body := b2.adminCall("GET", "/admin/audit", "", c.key, hdr...); st != http.StatusUnauthorized && st != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 401 or 403", c.name, st, body)
		} else if strings.Contains(string(body), "alice") {
			t.Errorf("%s: the refusal shows the trail: %s", c.name, body)
		}
	}
	st, b = b2.adminCall("GET", "/admin/audit", "", adminKey)
	var all auditAnswer
	if st != http.StatusOK || json.Unmarshal(b, &all) != nil {
		t.Fatalf("the trail after the restart: %d %s", st, b)
	}
	for _, secret := range []string{created.Secret, adminKey, signinViewerKey, appKey, "wrong-key-0123456789abcdef"} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("the trail shows a secret: %s", b)
		}
	}
	var got []string
	for _, e := range all.Entries {
		got = append(got, e.Action+" by "+e.Actor)
	}
	want := []string{"console:sign_in by oncall", "console:sign_in_refused by ", "admin:key:create by admin key (as alice) from 127.0.0.1",
		"admin:drain by admin key (as alice) from 127.0.0.1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the trail after the restart:\n got %q\nwant %q", got, want)
	}
	if e := all.Entries[3]; e.Target != "aoai-swedencentral" || !strings.Contains(string(e.Detail), "drained backend aoai-swedencentral") {
		t.Errorf("the drain's entry: %+v (detail %s)", e, e.Detail)
	}
	// The console's events page shows the stored trail before the
	// timeline's first event.
	cc2 := newConsoleClient(t, b2.admin)
	cc2.login(adminKey)
	if _, page, _ := cc2.do("GET", "/console/events", nil, ""); !strings.Contains(page, `id="stored-audit"`) ||
		!strings.Contains(page, "drained backend aoai-swedencentral (by admin key (as alice) from 127.0.0.1)") {
		t.Errorf("the events page after the restart does not show the stored drain:\n%s", page)
	}
	st, b = b2.adminCall("GET", "/admin/audit?action=admin:drain&actor="+strings.ReplaceAll("admin key (as alice) from 127.0.0.1", " ", "%20")+"&limit=5", "", adminKey)
	var one auditAnswer
	if st != http.StatusOK || json.Unmarshal(b, &one) != nil || len(one.Entries) != 1 || one.Entries[0].Action != "admin:drain" {
		t.Fatalf("filtered by actor and action: %d %s", st, b)
	}
	for _, q := range []string{"limit=0", "limit=100000", "limit=x", "from=yesterday", "from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z"} {
		st, b := b2.adminCall("GET", "/admin/audit?"+q, "", adminKey)
		var e struct{ Error struct{ Message string } }
		if st != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			t.Errorf("?%s: %d %s, want 400 with an error message", q, st, b)
		}
	}
}
