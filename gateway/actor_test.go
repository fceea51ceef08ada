package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/gateway"
)

// TestAdminAPIActionNamesItsActor is the regression test of issue 23's
// item 12 for the admin API: an action through it named nobody. Now the
// event says "admin key (as NAME) from ADDRESS", NAME from
// X-Switchover-Actor; without the key, with another, or from another
// origin, nothing is done or recorded.
func TestAdminAPIActionNamesItsActor(t *testing.T) {
	h := startWithAdmin(t)
	post := func(key, actor, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, h.admin+"/admin/backends/aoai-swedencentral/drain", nil)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if actor != "" {
			req.Header.Set(gateway.ActorHeader, actor)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ name, key, origin string }{
		{"no key", "", ""}, {"another key", "not-the-admin-key-0123", ""}, {"viewer key", signinViewerKey, ""},
		{"another origin", adminKey, "http://evil.example"},
	} {
		if st := post(c.key, "mallory", c.origin); st != http.StatusUnauthorized && st != http.StatusForbidden {
			t.Errorf("%s: %d, want 401 or 403", c.name, st)
		}
	}
	if n, _ := countKind(h.adminEvents(t), "admin:drain"); n != 0 {
		t.Fatal("a refused call was recorded as an action")
	}
	if st := post(adminKey, "alice <script>", ""); st != http.StatusOK {
		t.Fatalf("drain: %d", st)
	}
	_, ev := countKind(h.adminEvents(t), "admin:drain")
	if want := "drained backend aoai-swedencentral (by admin key (as alice script) from 127.0.0.1)"; ev.Detail != want {
		t.Fatalf("event %q, want %q", ev.Detail, want)
	}
}

// TestKeyAndTeamChangesNameTheirActor is the regression test of issue
// 23's item 12 for /admin/keys and /admin/teams: their changes named
// nobody. Now a key created and revoked, and a team set, with
// X-Switchover-Actor: alice are recorded in the events and the log as by
// "admin key (as alice) from ADDRESS", never with the key's secret;
// without the admin key (401), with a viewer's, or from another origin,
// nothing is changed or recorded.
func TestKeyAndTeamChangesNameTheirActor(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+signinViewerKey+"}]}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	})
	call := func(method, path, body, key, origin string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, h.admin+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.ActorHeader, "alice")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	refuse := func(what, method, path, body string) {
		t.Helper()
		if st, b := call(method, path, body, "", ""); st != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d %s, want 401", what, st, b)
		}
		if st, b := call(method, path, body, "not-the-admin-key-0123", ""); st != http.StatusUnauthorized {
			t.Errorf("%s with another key: %d %s, want 401", what, st, b)
		}
		if st, b := call(method, path, body, signinViewerKey, ""); st != http.StatusUnauthorized && st != http.StatusForbidden {
			t.Errorf("%s with a viewer's key: %d %s, want 401 or 403", what, st, b)
		}
		if st, b := call(method, path, body, adminKey, "http://evil.example"); st != http.StatusUnauthorized && st != http.StatusForbidden {
			t.Errorf("%s from another origin: %d %s, want 401 or 403", what, st, b)
		}
	}
	refuse("create", "POST", "/admin/keys", `{"name":"mallory-app"}`)
	refuse("team", "PUT", "/admin/teams/mallory", `{"rpm":1}`)
	if ks, err := h.gw.Ledger().Keys(t.Context()); err != nil || len(ks) != 0 {
		t.Fatalf("refused calls made keys %+v (%v)", ks, err)
	}
	var created struct {
		Key    struct{ ID string }
		Secret string
	}
	st, b := call("POST", "/admin/keys", `{"name":"app"}`, adminKey, "")
	if st != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.Secret == "" {
		t.Fatalf("create: %d %s", st, b)
	}
	id := created.Key.ID
	refuse("revoke", "POST", "/admin/keys/"+id+"/revoke", "")
	if ks, _ := h.gw.Ledger().Keys(t.Context()); len(ks) != 1 || !ks[0].Revoked.IsZero() {
		t.Fatalf("a refused revocation revoked the key: %+v", ks)
	}
	if st, b := call("POST", "/admin/keys/"+id+"/revoke", "", adminKey, ""); st != http.StatusOK {
		t.Fatalf("revoke: %d %s", st, b)
	}
	if st, b := call("PUT", "/admin/teams/research", `{"rpm":5}`, adminKey, ""); st != http.StatusOK {
		t.Fatalf("team: %d %s", st, b)
	}
	evs := h.adminEvents(t)
	by := " (by admin key (as alice) from 127.0.0.1)"
	for _, c := range []struct{ kind, want string }{
		{"admin:key:create", "created key " + id + " (app)" + by},
		{"admin:key:revoke", "revoked key " + id + " (app)" + by},
		{"admin:team:put", "set team research" + by},
	} {
		if n, ev := countKind(evs, c.kind); n != 1 || ev.Detail != c.want {
			t.Errorf("%d %s events, the last %q; want one, %q", n, c.kind, ev.Detail, c.want)
		}
	}
	logs := h.logs.String()
	if n := strings.Count(logs, `"by":"admin key (as alice) from 127.0.0.1"`); n != 3 {
		t.Errorf("%d log lines name alice, want 3:\n%s", n, logs)
	}
	if strings.Contains(logs, created.Secret) || strings.Contains(fmt.Sprint(evs), created.Secret) {
		t.Error("the key's secret is in the log or the events")
	}
}
