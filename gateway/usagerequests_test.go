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
)

// TestUsageRequestsNeedTheAdminKey: the request logs answer the admin key
// only: no key, a wrong key and a gateway key get 401 from the admin API,
// and the gateway's own listener does not serve them.
func TestUsageRequestsNeedTheAdminKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", func(y string) string {
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
