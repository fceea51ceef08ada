package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/clienttest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// TestStatusSaysDownWhileEveryWriteFails, on SQLite and PostgreSQL: with
// every write of usage failing and reads working (a full disk), switchover
// status says the store is failing from the first failed write on, and
// never "up" while the writes keep failing and the store's reads (every
// 200ms) keep working. Issue 24: it used to say "up".
func TestStatusSaysDownWhileEveryWriteFails(t *testing.T) {
	t.Parallel() // waits on the writer's retries
	onEachStore(t, testStatusSaysDownWhileEveryWriteFails)
}

func testStatusSaysDownWhileEveryWriteFails(t *testing.T, kind string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"gpt-4o-2024-08-06","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
	}))
	defer up.Close()
	s, store, failWrites := openStore(t, kind)
	_, secret, err := ledger.NewKey(t.Context(), s, ledger.Key{Name: "app"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	failWrites()
	cfgPath := filepath.Join(t.TempDir(), "switchover.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s, shutdown_grace: 1s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
store: %s, refresh: 200ms}
backends:
  - {name: weu, type: openai_compatible, url: %q, region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, strings.TrimSuffix(store, "}"), up.URL)), 0o600)
	adminAddr, apiAddr, log := serveFile(t, cfgPath)
	resp, _ := clienttest.Call(t, http.MethodPost, "http://"+apiAddr+"/v1/chat/completions", secret, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat with a stored key: %d", resp.StatusCode)
	}
	const failures = 3
	var code int
	var o, e string
	poll.Until(t, 30*time.Second, func() bool {
		failed := strings.Count(log.String(), "usage store: write failed") // before the status: it is down by then
		code, o, e = run2(t, "status", "-admin", "http://"+adminAddr, "-key", "admin-key-0123456789")
		if failed > 0 && (code != exitOK || !strings.Contains(o, "store "+kind+" FAILING")) {
			t.Fatalf("status after %d failed writes: %d\n%s\n%s", failed, code, o, e)
		}
		return failed >= failures
	}, func() string {
		return fmt.Sprintf("fewer than %d failed writes; status %d\n%s\n%s\n%s", failures, code, o, e, log)
	})
	if !strings.Contains(o, "1 usage records buffered, 0 dropped") {
		t.Errorf("status: the record is not shown as buffered:\n%s", o)
	}
}
