package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/clienttest"
	"github.com/switchover-gw/switchover/internal/poll"
)

// TestKeyCacheFromTheCommandLine: keys create and update --cache on a
// gateway serving with an SQLite and a PostgreSQL store: the key's own
// cache, on a pool that caches nothing, answers its second identical
// request from the cache (one upstream call); --cache none gives it its
// pools' again (none here), and a bad setting is a usage error that
// changes nothing.
func TestKeyCacheFromTheCommandLine(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		var calls atomic.Int64
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
		}))
		defer up.Close()
		_, st, _ := openStore(t, kind)
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "switchover.yaml")
		os.WriteFile(cfgPath, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
store: %s
backends:
  - {name: weu, type: openai_compatible, url: %q, region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, st, up.URL)), 0o600)
		adminAddr, apiAddr, _ := serveFile(t, cfgPath)
		admin, gw := "http://"+adminAddr, "http://"+apiAddr
		code, o, e := cli(t, admin, "keys", "create", "--name", "cached", "--cache", "ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB")
		m := secretRE.FindStringSubmatch(o)
		if code != exitOK || m == nil || !regexp.MustCompile(`cache\s+ttl=10m0s,coalesce=on,max_wait=5s,max_entry=1MiB\n`).MatchString(o) {
			t.Fatalf("keys create --cache: %d\n%s\n%s", code, o, e)
		}
		secret, id := m[1], regexp.MustCompile(`key (key_[0-9A-Za-z]+)`).FindStringSubmatch(o)[1]
		chat := func() string {
			resp, _ := clienttest.Call(t, http.MethodPost, gw+"/v1/chat/completions", secret, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("chat: %d", resp.StatusCode)
			}
			return resp.Header.Get("X-Switchover-Cache")
		}
		if got := chat(); got != "miss" {
			t.Fatalf("the first request: x-switchover-cache %q, want miss", got)
		}
		if got := chat(); got != "hit" || calls.Load() != 1 {
			t.Fatalf("the second identical request: x-switchover-cache %q after %d upstream calls; want a hit after 1", got, calls.Load())
		}
		code, o, e = cli(t, admin, "keys", "update", id, "--cache", "ttl=1m,max_entry=big")
		if code != exitUsage || !strings.Contains(e, "--cache: max_entry: ") {
			t.Fatalf("keys update --cache with a bad size: %d\n%s\n%s", code, o, e)
		}
		code, o, e = cli(t, admin, "keys", "update", id, "--cache", "none")
		if code != exitOK || !regexp.MustCompile(`cache\s+- \(its pools'\)`).MatchString(o) {
			t.Fatalf("keys update --cache none: %d\n%s\n%s", code, o, e)
		}
		// The gateway reads the change at once (OnChange); its pool
		// caches nothing, so the call goes upstream without the header.
		poll.Until(t, 10*time.Second, func() bool { return chat() == "" }, func() string { return "the key still caches after --cache none" })
		code, o, e = cli(t, admin, "keys", "show", id)
		if code != exitOK || !regexp.MustCompile(`cache\s+- \(its pools'\)`).MatchString(o) {
			t.Fatalf("keys show: %d\n%s\n%s", code, o, e)
		}
	})
}
