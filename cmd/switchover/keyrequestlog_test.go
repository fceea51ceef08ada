package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKeyRequestLogFromTheCommandLine: keys create and update
// --request-log on a gateway serving with an SQLite and a PostgreSQL
// store: the key's own setting is shown by create, update and show;
// --request-log none gives it its pools' again; a bad setting is a usage
// error naming it, and one out of the gateway's bounds is refused; both
// change nothing.
func TestKeyRequestLogFromTheCommandLine(t *testing.T) {
	onEachStore(t, func(t *testing.T, kind string) {
		_, st, _ := openStore(t, kind)
		cfgPath := filepath.Join(t.TempDir(), "switchover.yaml")
		os.WriteFile(cfgPath, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
store: %s
backends:
  - {name: weu, type: openai_compatible, url: "http://127.0.0.1:1", region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, st)), 0o600)
		adminAddr, _, _ := serveFile(t, cfgPath)
		admin := "http://" + adminAddr
		shows := func(o, want string) bool {
			return regexp.MustCompile(`request log\s+` + regexp.QuoteMeta(want) + `\n`).MatchString(o)
		}
		code, o, e := cli(t, admin, "keys", "create", "--name", "logged", "--request-log", "bodies=on,max_body_bytes=2KiB")
		if code != exitOK || !shows(o, "bodies=on,max_body_bytes=2KiB") {
			t.Fatalf("keys create --request-log: %d\n%s\n%s", code, o, e)
		}
		id := regexp.MustCompile(`key (key_[0-9A-Za-z]+)`).FindStringSubmatch(o)[1]
		for _, bad := range []struct{ flag, want string }{
			{"bodies=maybe", "--request-log: bodies: "},
			{"max_body_bytes=big", "--request-log: max_body_bytes: "},
			{"headers=on", "--request-log: headers: unknown setting"},
			{"bodies", "--request-log: "},
		} {
			if code, o, e := cli(t, admin, "keys", "update", id, "--request-log", bad.flag); code != exitUsage || !strings.Contains(e, bad.want) {
				t.Errorf("--request-log %s: %d\n%s\n%s; want a usage error with %q", bad.flag, code, o, e, bad.want)
			}
		}
		if code, o, e := cli(t, admin, "keys", "update", id, "--request-log", "max_body_bytes=2MiB"); code == exitOK || !strings.Contains(o+e, "request_log.max_body_bytes") {
			t.Errorf("--request-log max_body_bytes=2MiB: %d\n%s\n%s; want the gateway's refusal naming request_log.max_body_bytes", code, o, e)
		}
		if code, o, e := cli(t, admin, "keys", "show", id); code != exitOK || !shows(o, "bodies=on,max_body_bytes=2KiB") {
			t.Fatalf("keys show after the refusals: %d\n%s\n%s", code, o, e)
		}
		if code, o, e := cli(t, admin, "keys", "update", id, "--request-log", "bodies=off"); code != exitOK || !shows(o, "bodies=off") {
			t.Fatalf("keys update --request-log bodies=off: %d\n%s\n%s", code, o, e)
		}
		if code, o, e := cli(t, admin, "keys", "update", id, "--request-log", "none"); code != exitOK || !shows(o, "- (its pools')") {
			t.Fatalf("keys update --request-log none: %d\n%s\n%s", code, o, e)
		}
	})
}
