package gateway_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/ledger"
)

// TestRequestLogKeepsAttempts: a request that failed over is logged with
// both attempts, and one that no backend answered is logged too (backend
// "", unanswered, its attempts), costing nothing; the backend filter
// finds both by the backend they failed at.
func TestRequestLogKeepsAttempts(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := start(t, []upstreamtest.Step{upstreamtest.Status(429), upstreamtest.Status(500)},
		[]upstreamtest.Step{answer("sec"), upstreamtest.Status(500)}, "", func(y string) string {
			return strings.Replace(withAdmin(y), "keys:", "store: {sqlite: "+db+"}\nkeys:", 1)
		})
	if resp, b := h.post("/v1/chat/completions", chat); resp.StatusCode != http.StatusOK {
		t.Fatalf("the failover: %d %s", resp.StatusCode, b)
	}
	if resp, b := h.post("/v1/chat/completions", chat); resp.StatusCode < 500 {
		t.Fatalf("every member failing: %d %s", resp.StatusCode, b)
	}
	s := h.gw.Ledger()
	var got []ledger.Usage
	poll.Until(t, 30*time.Second, func() bool {
		h.clock.Advance(time.Second) // the usage writer flushes on the gateway's (fake) clock
		var err error
		got, err = s.Requests(t.Context(), ledger.RequestQuery{Backend: "aoai-westeurope", Limit: 10})
		return err == nil && len(got) == 2
	}, func() string { return fmt.Sprintf("logged: %+v", got) })
	// Both ended at the same time on the fake clock: their order is
	// their random ids'.
	unanswered, failover := got[0], got[1]
	if failover.Unanswered {
		unanswered, failover = failover, unanswered
	}
	if !failover.Failover || failover.Backend != "aoai-swedencentral" || failover.Tried != 2 || len(failover.Attempts) != 2 ||
		failover.Attempts[0].Backend != "aoai-westeurope" || failover.Attempts[0].Status != 429 || failover.Attempts[1].Status != 200 || failover.Attempts[1].Reason != "ok" ||
		failover.Unanswered || failover.DurationMs < 0 {
		t.Errorf("the failover is logged as %+v", failover)
	}
	if !unanswered.Unanswered || unanswered.Backend != "" || unanswered.Status < 500 || unanswered.Cost != 0 || unanswered.KeyID != "app-team" ||
		len(unanswered.Attempts) != 2 || unanswered.Attempts[0].Status != 500 || unanswered.Pool != "chat-prod" {
		t.Errorf("the unanswered request is logged as %+v", unanswered)
	}
	one, err := s.Request(t.Context(), unanswered.RequestID)
	if err != nil || one.RequestID != unanswered.RequestID {
		t.Errorf("Request(%s) = %+v, %v", unanswered.RequestID, one, err)
	}
	rows, err := s.Spend(t.Context(), ledger.SpendQuery{From: h.clock.Now().Add(-time.Hour), To: h.clock.Now().Add(time.Hour), Key: "app-team"})
	if err != nil || len(rows) != 1 || rows[0].Requests != 1 {
		t.Errorf("spend of app-team = %+v, %v; want 1 request (the unanswered one counts in no spend)", rows, err)
	}
}

// TestRequestLogRouteNeedsTheAdminKey: GET /admin/usage/requests/{id}
// answers the admin key only: no key, a viewer's console key, a gateway
// key and another origin are refused, and the gateway's own listener
// does not serve it.
func TestRequestLogRouteNeedsTheAdminKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+signinViewerKey+"}]}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	})
	if err := h.gw.Ledger().RecordUsage(t.Context(), []ledger.Usage{{At: h.clock.Now(), RequestID: "r-secret", KeyID: "app-team", EndUser: "alice"}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/admin/usage/requests/r-secret", "/admin/usage/requests?backend=x&q=alice"} {
		for name, key := range map[string]string{"no key": "", "a viewer's key": signinViewerKey, "a gateway key": appKey} {
			if code, body := h.adminDo(http.MethodGet, path, "", key); code != http.StatusUnauthorized || strings.Contains(fmt.Sprint(body), "alice") {
				t.Errorf("%s with %s: %d %v, want 401", path, name, code, body)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, h.admin+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Origin", "https://evil.example")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s from another origin: %d, want 403", path, resp.StatusCode)
		}
		if resp, b := h.get(path); resp.StatusCode == http.StatusOK || strings.Contains(b, "alice") {
			t.Errorf("the gateway's listener answered %s: %d %s", path, resp.StatusCode, b)
		}
	}
	if code, body := h.adminDo(http.MethodGet, "/admin/usage/requests/r-secret", "", adminKey); code != http.StatusOK || !strings.Contains(fmt.Sprint(body), "alice") {
		t.Errorf("with the admin key: %d %v", code, body)
	}
}
