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
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/clienttest"
	"github.com/switchover-gw/switchover/internal/poll"
)

// TestKeysAgainstAServingGateway: the whole life of a virtual key on a
// gateway serving with an SQLite and a PostgreSQL store: made by the
// command, used by a client at once, held to its limit, its spend shown
// by the usage command, and refused from the moment it is revoked.
func TestKeysAgainstAServingGateway(t *testing.T) { onEachStore(t, testKeysAgainstAServingGateway) }

func testKeysAgainstAServingGateway(t *testing.T, kind string) {
	_, store, _ := openStore(t, kind)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `{"model":"gpt-4o-2024-08-06","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "switchover.yaml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
store: %s
keys:
  - {name: yaml-app, key: yaml-app-key-0123456789abcdef0123456789}
teams:
  - {name: apps}
backends:
  - {name: weu, type: openai_compatible, url: %q, region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, store, up.URL)), 0o600)
	adminAddr, apiAddr, log := serveFile(t, cfgPath)
	admin, gw := "http://"+adminAddr, "http://"+apiAddr
	code, o, e := cli(t, admin, "keys", "create", "--name", "app-team", "--team", "apps", "--pools", "chat-prod", "--rpm", "12", "--patience", "45s")
	m := secretRE.FindStringSubmatch(o)
	if code != exitOK || m == nil || !regexp.MustCompile(`patience\s+45s`).MatchString(o) {
		t.Fatalf("keys create: %d\n%s\n%s", code, o, e)
	}
	secret := m[1]
	id := regexp.MustCompile(`key (key_[0-9A-Za-z]+)`).FindStringSubmatch(o)[1]
	chat := func() int {
		resp, _ := clienttest.Call(t, http.MethodPost, gw+"/v1/chat/completions", secret, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`)
		return resp.StatusCode
	}
	for i := range 2 {
		if st := chat(); st != http.StatusOK {
			t.Fatalf("request %d with the new key: %d", i+1, st)
		}
	}
	if st := chat(); st != http.StatusTooManyRequests {
		t.Fatalf("third request at once on rpm 12 (2 at once): %d", st)
	}
	code, o, _ = cli(t, admin, "keys", "list")
	if code != exitOK || !strings.Contains(o, id) || !regexp.MustCompile(`yaml-app\s+yaml-app\s+.*config`).MatchString(o) {
		t.Fatalf("keys list: %d\n%s", code, o)
	}
	// The usage of the two answered requests, once the writer has stored
	// it (within a second).
	poll.Until(t, 10*time.Second, func() bool {
		code, o, e = cli(t, admin, "usage", "--by", "key,backend", "--format", "csv")
		return code == exitOK && strings.Contains(o, id+",weu,2,0,200,20,")
	}, func() string { return fmt.Sprintf("usage: %d\n%s\n%s", code, o, e) })
	// The writer counts a batch as buffered until its write has returned,
	// a moment after the rows can be read: the status says 0 soon after.
	poll.Until(t, 10*time.Second, func() bool {
		code, o, e = run2(t, "status", "-admin", admin, "-key", "admin-key-0123456789")
		return code == exitOK && strings.Contains(o, "store "+kind+" up; 1 keys, 0 usage records buffered, 0 dropped")
	}, func() string { return fmt.Sprintf("status: %d\n%s\n%s", code, o, e) })
	if !regexp.MustCompile(`admin:key:create\s+-\s+created key ` + id + ` \(app-team\)`).MatchString(o) {
		t.Fatalf("status: %d\n%s\n%s", code, o, e)
	}
	if code, o, e := cli(t, admin, "keys", "revoke", id); code != exitOK {
		t.Fatalf("revoke: %d %s %s", code, o, e)
	}
	if st := chat(); st != http.StatusUnauthorized {
		t.Fatalf("a request right after the revocation: %d", st)
	}
	if strings.Contains(log.String(), secret) {
		t.Error("the secret is in the gateway's log")
	}
}
