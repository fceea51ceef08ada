package gateway_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageRequestsNeedTheAdminKey: the request logs answer the admin key
// only: no key, a wrong key and a gateway key get 401 from the admin API,
// and the gateway's own listener does not serve them.
func TestUsageRequestsNeedTheAdminKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, func(y string) string {
		return strings.Replace(withAdmin(y), "keys:", "store: {sqlite: "+db+"}\nkeys:", 1)
	})
	if resp, b := h.post("/v1/chat/completions", chat); resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	const path = "/admin/usage/requests?key=app-team"
	for name, key := range map[string]string{"no key": "", "a wrong key": "not-the-admin-key-0123", "a gateway key": appKey} {
		if code, body := h.adminDo(http.MethodGet, path, "", key); code != http.StatusUnauthorized {
			t.Errorf("with %s: %d %v, want 401", name, code, body)
		}
	}
	if resp, b := h.get(path); resp.StatusCode == http.StatusOK || strings.Contains(b, "request_id") {
		t.Errorf("the gateway's listener answered %d %s", resp.StatusCode, b)
	}
	var body map[string]any
	poll.Until(t, 30*time.Second, func() bool {
		h.clock.Advance(time.Second) // the usage writer flushes on the gateway's (fake) clock
		var code int
		code, body = h.adminDo(http.MethodGet, path, "", adminKey)
		rows, _ := body["requests"].([]any)
		return code == http.StatusOK && len(rows) == 1
	}, func() string { return fmt.Sprintf("the admin key's answer: %v", body) })
	if code, b := h.adminDo(http.MethodGet, "/admin/usage/requests?cursor=nope", "", adminKey); code != http.StatusBadRequest {
		t.Errorf("a bad cursor with the admin key: %d %v, want 400", code, b)
	}
}

// TestStoreRetentionDeletesOldRequests, on SQLite and PostgreSQL: with
// store.retention, a record older than it is deleted in the background
// (on the gateway's clock), with a log line and the metric; a recent one
// stays.
func TestStoreRetentionDeletesOldRequests(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testStoreRetention(t, withStoreSetting(st.yaml(t), "retention: 40d")) })
	}
}

// withStoreSetting adds setting to the flow mapping of a store block
// from stores ("store: {sqlite: ...}\n").
func withStoreSetting(block, setting string) string {
	return strings.TrimSuffix(block, "}\n") + ", " + setting + "}\n"
}

func testStoreRetention(t *testing.T, store string) {
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", store+"keys:", 1)
	})
	s := h.gw.Ledger()
	now := h.clock.Now()
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: now.AddDate(0, 0, -41), RequestID: "old", KeyID: "app-team", Cost: 1},
		{At: now.AddDate(0, 0, -39), RequestID: "recent", KeyID: "app-team", Cost: 1},
	}); err != nil {
		t.Fatal(err)
	}
	var left []string
	poll.Until(t, 30*time.Second, func() bool {
		h.clock.Advance(time.Hour) // a round an hour
		us, err := s.Requests(t.Context(), ledger.RequestQuery{Limit: 10})
		left = left[:0]
		for _, u := range us {
			left = append(left, u.RequestID)
		}
		return err == nil && len(left) == 1
	}, func() string { return fmt.Sprintf("records left: %v", left) })
	if left[0] != "recent" {
		t.Fatalf("retention kept %v, want [recent]", left)
	}
	poll.Until(t, 30*time.Second, func() bool {
		return strings.Contains(h.logs.String(), "usage retention: deleted request records")
	}, func() string { return "no retention log line" })
	if m := string(scrape(t, h.gw)); !strings.Contains(m, "switchover_usage_pruned_total 1\n") {
		t.Errorf("switchover_usage_pruned_total is not 1")
	}
}

// TestRetentionKeepsWhatEndUserBudgetsRead: store.retention (40d) does
// not delete the per-request records a 60-day end-user budget still
// reads; older ones go.
func TestRetentionKeepsWhatEndUserBudgetsRead(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:\n  - name: app-team\n", "store: {sqlite: "+db+", retention: 40d}\nkeys:\n  - name: app-team\n"+
			"    end_user_limits: {budget: 5/60d}\n", 1)
	})
	s := h.gw.Ledger()
	now := h.clock.Now()
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: now.AddDate(0, 0, -62), RequestID: "old", KeyID: "app-team", EndUser: "alice", Cost: 1},
		{At: now.AddDate(0, 0, -50), RequestID: "held", KeyID: "app-team", EndUser: "alice", Cost: 1},
	}); err != nil {
		t.Fatal(err)
	}
	var left []string
	poll.Until(t, 30*time.Second, func() bool {
		h.clock.Advance(time.Hour) // a round an hour
		us, err := s.Requests(t.Context(), ledger.RequestQuery{Limit: 10})
		left = left[:0]
		for _, u := range us {
			left = append(left, u.RequestID)
		}
		return err == nil && len(left) == 1
	}, func() string { return fmt.Sprintf("records left: %v", left) })
	if left[0] != "held" {
		t.Fatalf("retention kept %v, want [held]", left)
	}
}

// TestMinRetentionIsTheLedgers: config refuses what ledger would raise.
func TestMinRetentionIsTheLedgers(t *testing.T) {
	if config.MinRetention != ledger.MinRetention {
		t.Fatalf("config.MinRetention %v, ledger.MinRetention %v", config.MinRetention, ledger.MinRetention)
	}
}
