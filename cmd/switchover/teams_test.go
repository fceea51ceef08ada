package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

const noAuthLine = "no gateway keys are configured: serving without authentication"

// TestServeWithStoreKeysDoesNotSayUnauthenticated, on SQLite and
// PostgreSQL: a gateway whose store holds keys (and none in the file)
// requires them, and its start-up log no longer says it serves without
// authentication; a gateway with no keys and no store still says so.
// Issue 24.
func TestServeWithStoreKeysDoesNotSayUnauthenticated(t *testing.T) {
	onEachStore(t, testServeWithStoreKeys)
}

func testServeWithStoreKeys(t *testing.T, kind string) {
	dir := t.TempDir()
	s, store, _ := openStore(t, kind)
	if _, _, err := ledger.NewKey(t.Context(), s, ledger.Key{Name: "app"}, ledgerNow); err != nil {
		t.Fatal(err)
	}
	base := `listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
backends:
  - {name: weu, type: openai_compatible, url: "http://127.0.0.1:1", region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`
	open := filepath.Join(dir, "open.yaml")
	os.WriteFile(open, []byte(base), 0o600)
	_, _, log := serveFile(t, open)
	if !strings.Contains(log.String(), noAuthLine) {
		t.Fatalf("no keys, no store: the warning is missing from\n%s", log)
	}
	stored := filepath.Join(dir, "stored.yaml")
	os.WriteFile(stored, []byte(base+"store: "+store+"\nteams:\n  - {name: apps, rpm: 600}\n"), 0o600)
	adminAddr, _, log := serveFile(t, stored)
	if strings.Contains(log.String(), noAuthLine) {
		t.Fatalf("a store holding keys: the log says %q\n%s", noAuthLine, log)
	}
	admin := "http://" + adminAddr

	// A key naming a team nobody has is refused, naming the team; the
	// file's team is accepted and listed as the file's.
	code, o, e := cli(t, admin, "keys", "create", "--name", "app-2", "--team", "nosuch")
	if code != exitError || !strings.Contains(e, `400`) || !strings.Contains(e, `team: no team is named "nosuch"`) {
		t.Fatalf("keys create --team nosuch: exit %d\n%s\n%s", code, o, e)
	}
	if code, o, e := cli(t, admin, "keys", "create", "--name", "app-3", "--team", "apps"); code != exitOK {
		t.Fatalf("keys create --team apps: exit %d\n%s\n%s", code, o, e)
	}
	if code, o, e := cli(t, admin, "teams", "set", "research", "--tpm", "1k"); code != exitOK {
		t.Fatalf("teams set research: exit %d\n%s\n%s", code, o, e)
	}
	code, o, e = cli(t, admin, "teams", "list")
	if code != exitOK || !regexp.MustCompile(`apps\s+600\s+-\s+-\s+config\n`).MatchString(o) || !regexp.MustCompile(`research\s+-\s+1k\s+-\s+store\n`).MatchString(o) {
		t.Fatalf("teams list: exit %d\n%s\n%s", code, o, e)
	}
	if code, o, e := cli(t, admin, "teams", "set", "apps", "--rpm", "1"); code != exitError || !strings.Contains(e, "409") || !strings.Contains(e, "config file") {
		t.Fatalf("teams set of the file's team: exit %d\n%s\n%s", code, o, e)
	}
}

// TestKeysRotateGrace, on SQLite and PostgreSQL: keys rotate --grace 10m
// prints the new secret and says until when the old one works; the old
// secret verifies until then and not after; a bad --grace is a usage
// error. Issue 24.
func TestKeysRotateGrace(t *testing.T) { onEachStore(t, testKeysRotateGrace) }

func testKeysRotateGrace(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	k, old, err := ledger.NewKey(t.Context(), s, ledger.Key{Name: "app"}, ledgerNow)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, e := cli(t, admin, "keys", "rotate", "--grace", "soon", k.ID); code != exitUsage || !strings.Contains(e, "--grace") {
		t.Fatalf("--grace soon: exit %d %s", code, e)
	}
	code, o, e := cli(t, admin, "keys", "rotate", k.ID, "--grace", "10m")
	m := secretRE.FindStringSubmatch(o)
	if code != exitOK || m == nil || !regexp.MustCompile(`old secret\s+`+k.Prefix+` works until 2026-12-01T10:10:00Z`).MatchString(o) {
		t.Fatalf("keys rotate --grace 10m: exit %d\n%s\n%s", code, o, e)
	}
	for _, secret := range []string{old, m[1]} {
		if got, err := ledger.Verify(t.Context(), s, secret, ledgerNow.Add(9*time.Minute)); err != nil || got.ID != k.ID {
			t.Errorf("in the grace: %v %v", got.ID, err)
		}
	}
	if _, err := ledger.Verify(t.Context(), s, old, ledgerNow.Add(10*time.Minute)); err == nil {
		t.Error("the old secret works after the grace")
	}
}
