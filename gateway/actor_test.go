package gateway_test

import (
	"net/http"
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
