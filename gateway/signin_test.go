package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/gateway"
)

const signinViewerKey = "viewer-key-0123456789abcd"

// startWithAdmin is start with an admin listener, its key and a viewer.
func startWithAdmin(t *testing.T) *harness {
	t.Helper()
	return startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+signinViewerKey+"}]}\nkeys:", 1)
	})
}

// adminEvents is the admin API's event list.
func (h *harness) adminEvents(t *testing.T) []gateway.Event {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.admin+"/admin/events", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var evs []gateway.Event
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

func countKind(evs []gateway.Event, kind string) (n int, last gateway.Event) {
	for _, e := range evs {
		if e.Kind == kind {
			n, last = n+1, e
		}
	}
	return n, last
}

// TestConsoleSignInLockoutAndTimeline is the regression test of issue
// 23's item 12 through the admin listener: a loop of wrong keys from one
// address kept the right admin key out (429), and sign-ins, refused
// sign-ins, refused CSRF and refused viewer actions were only in the log.
// On the gateway's (unmoving) clock, the wrong keys are refused and the
// right keys still sign in; each of those is in the timeline, the
// refusals within their budget.
func TestConsoleSignInLockoutAndTimeline(t *testing.T) {
	h := startWithAdmin(t)
	attacker := newConsoleClient(t, h.admin)
	for i := range 60 {
		st, _, _ := attacker.do("POST", "/console/login", url.Values{"key": {fmt.Sprintf("wrong-key-%02d-0123456789", i)}}, "")
		if st != http.StatusUnauthorized && st != http.StatusTooManyRequests {
			t.Fatalf("wrong key %d: %d", i, st)
		}
	}
	admin := newConsoleClient(t, h.admin)
	admin.login(adminKey) // fails the test unless it signs in
	viewer := newConsoleClient(t, h.admin)
	viewer.login(signinViewerKey)
	if st := viewer.act("action", "drain", "backend", "aoai-westeurope"); st != http.StatusForbidden {
		t.Fatalf("a viewer's action: %d, want 403", st)
	}
	if st, _, _ := admin.do("POST", "/console/actions", url.Values{"action": {"drain"}, "backend": {"aoai-westeurope"}}, ""); st != http.StatusForbidden {
		t.Fatalf("an action without its CSRF token: %d, want 403", st)
	}
	evs := h.adminEvents(t)
	if n, _ := countKind(evs, "console:sign_in"); n != 2 {
		t.Errorf("%d sign-ins in the timeline, want 2", n)
	}
	if n, last := countKind(evs, "console:sign_in_refused"); n == 0 || n > 20 || strings.Contains(last.Detail, "wrong-key") {
		t.Errorf("%d refused sign-ins in the timeline (want 1 to 20, without the key); last %q", n, last.Detail)
	}
	for _, kind := range []string{"console:viewer_refused", "console:csrf_refused"} {
		if n, _ := countKind(evs, kind); n != 1 {
			t.Errorf("%d %s in the timeline, want 1", n, kind)
		}
	}
	if n, _ := countKind(evs, "admin:drain"); n != 0 {
		t.Error("a refused action was taken")
	}
}
