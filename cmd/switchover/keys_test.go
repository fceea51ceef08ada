package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
	"github.com/switchover-gw/switchover/ledger/postgres"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// ledgerNow is the admin API's clock in these tests.
var ledgerNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// storeKinds are the stores the commands are tested on.
var storeKinds = []string{"sqlite", "postgres"}

// onEachStore runs f as a subtest on each of storeKinds.
func onEachStore(t *testing.T, f func(t *testing.T, kind string)) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { f(t, kind) })
	}
}

// openStore opens a new, empty store of kind ("sqlite", or "postgres": a
// database of its own on the test binary's shared server) and returns it
// with its value for the configuration's store key ("{sqlite: ...}") and
// a function that makes every later write of usage to it fail, reads
// still working, as on a full disk. The store is closed at t.Cleanup.
func openStore(t *testing.T, kind string) (s ledger.Store, cfg string, failWrites func()) {
	t.Helper()
	var err error
	switch kind {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "data", "ledger.db")
		s, err = sqlite.Open(context.Background(), path)
		cfg = fmt.Sprintf("{sqlite: %q}", path)
		// A trigger, for every connection to the file (SQLite's full
		// disk, SQLITE_FULL, cannot be had from outside the process's
		// own connections).
		failWrites = func() {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TRIGGER test_disk_full BEFORE INSERT ON usage_requests
BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
				t.Fatal(err)
			}
		}
	case "postgres":
		dsn := pgtest.Shared(t)
		s, err = postgres.Open(context.Background(), dsn)
		cfg = fmt.Sprintf("{postgres: %q}", dsn)
		failWrites = func() { pgtest.FailWrites(t, dsn, "usage_requests") }
	default:
		t.Fatalf("no store kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cfg, failWrites
}

// ledgerAdmin serves ledgerapi.Handler over a real ledger of kind (see
// openStore), behind a check of the admin key, and returns its URL and
// the store.
func ledgerAdmin(t *testing.T, kind string) (string, ledger.Store) {
	t.Helper()
	s, _, _ := openStore(t, kind)
	h := &ledgerapi.Handler{
		Store:  s,
		Now:    func() time.Time { return ledgerNow },
		Pools:  func() []string { return []string{"chat-prod", "embed"} },
		Logger: slog.New(slog.DiscardHandler),
	}
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin-key-0123456789" {
			http.Error(w, `{"error":"missing or wrong admin key"}`, http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"error":"send POST requests with Content-Type: application/json"}`, http.StatusUnsupportedMediaType)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, s
}

// cli runs switchover with args against the admin API at admin.
func cli(t *testing.T, admin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	full := append([]string{args[0], args[1], "-admin", admin, "-key", "admin-key-0123456789"}, args[2:]...)
	if args[0] == "usage" {
		full = append([]string{"usage", "-admin", admin, "-key", "admin-key-0123456789"}, args[1:]...)
	}
	code := run(t.Context(), full, &out, &errOut)
	return code, out.String(), errOut.String()
}

var secretRE = regexp.MustCompile(`secret: (sk-so-[0-9A-Za-z]{32})\n`)

// TestKeysCommand, on SQLite and PostgreSQL: create, list, update, rotate
// (the old secret stops working), revoke, through the command against the
// admin API.
func TestKeysCommand(t *testing.T) { onEachStore(t, testKeysCommand) }

func testKeysCommand(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	ctx := t.Context()
	if err := s.PutTeam(ctx, ledger.Team{Name: "research"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, admin, "keys", "create", "--name", "app-team", "--team", "research",
		"--pools", "chat-prod,embed", "--models", "gpt-4o", "--rpm", "600", "--tpm", "200k",
		"--max-concurrent", "10", "--budget", "50/month", "--expires", "90d")
	if code != exitOK {
		t.Fatalf("keys create: exit %d\n%s\n%s", code, out, errOut)
	}
	m := secretRE.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "This secret will not be shown again") {
		t.Fatalf("keys create printed no secret, or no warning:\n%s", out)
	}
	secret := m[1]
	k, err := ledger.Verify(ctx, s, secret, ledgerNow)
	if err != nil {
		t.Fatalf("Verify(printed secret): %v", err)
	}
	want := []string{
		"created key " + k.ID + " (app-team)",
		"  id              " + k.ID,
		"  team            research",
		"  pools           chat-prod,embed",
		"  models          gpt-4o",
		"  rpm             600",
		"  tpm             200k",
		"  max concurrent  10",
		"  budget          50/month",
		"  expires         2027-03-01T10:00:00Z",
		"  state           active",
		"  source          store",
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("keys create output lacks %q:\n%s", w, out)
		}
	}

	code, out, _ = cli(t, admin, "keys", "list")
	header := regexp.MustCompile(`^id +name +team +tags +prefix +pools +rpm +tpm +concurrent +budget +expires +state +source\n`)
	row := regexp.MustCompile(regexp.QuoteMeta(k.ID) + ` +app-team +research +- +` + k.Prefix +
		` +chat-prod,embed +600 +200k +10 +50/month +2027-03-01T10:00:00Z +active +store\n`)
	if code != exitOK || !header.MatchString(out) || !row.MatchString(out) {
		t.Fatalf("keys list: exit %d\n%s", code, out)
	}
	if strings.Contains(out, secret[len(ledger.SecretPrefix)+ledger.PrefixLen:]) {
		t.Fatalf("keys list shows the secret:\n%s", out)
	}

	code, out, _ = cli(t, admin, "keys", "update", k.ID, "--rpm", "1.2k", "--budget", "none", "--pools", "")
	if code != exitOK || !strings.Contains(out, "updated key "+k.ID) || !strings.Contains(out, "  rpm             1200\n") ||
		!strings.Contains(out, "  budget          -\n") || !strings.Contains(out, "  pools           all\n") ||
		!strings.Contains(out, "  tpm             200k\n") {
		t.Fatalf("keys update: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, admin, "keys", "show", k.ID, "-json")
	if code != exitOK || !strings.Contains(out, `"rpm": 1200`) || strings.Contains(out, "secret") {
		t.Fatalf("keys show -json: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, admin, "keys", "update", k.ID, "--budget", "5/1h", "--soft-budget", "$2")
	if code != exitOK || !strings.Contains(out, "  budget          5/1h\n") || !strings.Contains(out, "  soft budget     2\n") {
		t.Fatalf("keys update --budget 5/1h: exit %d\n%s", code, out)
	}
	if code, _, e := cli(t, admin, "keys", "update", k.ID, "--budget", "5/30m"); code != exitUsage || !strings.Contains(e, "--budget") {
		t.Fatalf("keys update --budget 5/30m: exit %d\n%s", code, e)
	}
	code, out, _ = cli(t, admin, "keys", "update", k.ID, "--pool-budgets", "chat-prod=1/1h,embed=$20/30d")
	if code != exitOK || !strings.Contains(out, "  pool budgets    chat-prod=1/1h,embed=20/30d\n") {
		t.Fatalf("keys update --pool-budgets: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, admin, "keys", "update", k.ID, "--pool-budgets", "none")
	if code != exitOK || strings.Contains(out, "pool budgets") {
		t.Fatalf("keys update --pool-budgets none: exit %d\n%s", code, out)
	}
	if code, _, e := cli(t, admin, "keys", "update", k.ID, "--pool-budgets", "chat-prod"); code != exitUsage || !strings.Contains(e, "--pool-budgets") {
		t.Fatalf("keys update --pool-budgets chat-prod: exit %d\n%s", code, e)
	}
	if code, _, e := cli(t, admin, "keys", "update", k.ID, "--soft-budget", "lots"); code != exitUsage || !strings.Contains(e, "--soft-budget") {
		t.Fatalf("keys update --soft-budget lots: exit %d\n%s", code, e)
	}
	if code, _, e := cli(t, admin, "keys", "update", k.ID, "--soft-budget", "6"); code == exitOK || !strings.Contains(e, "soft_budget") {
		t.Fatalf("keys update --soft-budget 6 on a budget of 5: exit %d\n%s", code, e)
	}

	code, out, _ = cli(t, admin, "keys", "rotate", k.ID)
	m = secretRE.FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] == secret || !strings.Contains(out, "This secret will not be shown again") {
		t.Fatalf("keys rotate: exit %d\n%s", code, out)
	}
	if _, err := ledger.Verify(ctx, s, secret, ledgerNow); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("old secret after rotate: %v, want ErrNotFound", err)
	}
	if _, err := ledger.Verify(ctx, s, m[1], ledgerNow); err != nil {
		t.Fatalf("new secret after rotate: %v", err)
	}

	code, out, _ = cli(t, admin, "keys", "revoke", k.ID)
	if code != exitOK || !strings.Contains(out, "revoked key "+k.ID) || !strings.Contains(out, "  state           revoked\n") {
		t.Fatalf("keys revoke: exit %d\n%s", code, out)
	}
	if _, err := ledger.Verify(ctx, s, m[1], ledgerNow); !errors.Is(err, ledger.ErrRevoked) {
		t.Fatalf("secret after revoke: %v, want ErrRevoked", err)
	}
	if code, out, _ = cli(t, admin, "keys", "list"); code != exitOK || !regexp.MustCompile(` revoked +store\n`).MatchString(out) {
		t.Fatalf("keys list after revoke: exit %d\n%s", code, out)
	}

	// The API's refusals are errors with its message.
	if code, _, errOut = cli(t, admin, "keys", "show", "key_nope"); code != exitError || !strings.Contains(errOut, "404") {
		t.Fatalf("keys show key_nope: exit %d %s", code, errOut)
	}
	if code, _, errOut = cli(t, admin, "keys", "create", "--name", "x", "--pools", "nope"); code != exitError ||
		!strings.Contains(errOut, `400 Bad Request: pools[0]: "nope" is not one of chat-prod, embed`) {
		t.Fatalf("keys create --pools nope: exit %d %s", code, errOut)
	}
	if code, _, errOut := run2(t, "keys", "list", "-admin", admin, "-key", "wrong"); code != exitError || !strings.Contains(errOut, "401 Unauthorized: missing or wrong admin key") {
		t.Fatalf("keys list with a wrong admin key: exit %d %s", code, errOut)
	}
}

// TestTeamsCommand, on SQLite and PostgreSQL: set creates and changes a
// team, keeping the limits not given; list prints them.
func TestTeamsCommand(t *testing.T) { onEachStore(t, testTeamsCommand) }

func testTeamsCommand(t *testing.T, kind string) {
	admin, _ := ledgerAdmin(t, kind)
	if code, out, _ := cli(t, admin, "teams", "list"); code != exitOK || !strings.Contains(out, "no teams") {
		t.Fatalf("teams list: exit %d\n%s", code, out)
	}
	if code, out, e := cli(t, admin, "teams", "set", "research", "--rpm", "1k", "--budget", "100/week"); code != exitOK ||
		out != "team research: rpm 1k, tpm -, budget 100/week\n" {
		t.Fatalf("teams set: exit %d\n%s%s", code, out, e)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "research", "--tpm", "50000"); code != exitOK ||
		out != "team research: rpm 1k, tpm 50k, budget 100/week\n" {
		t.Fatalf("teams set --tpm: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "--budget", "none", "infra"); code != exitOK ||
		out != "team infra: rpm -, tpm -, budget -\n" {
		t.Fatalf("teams set infra: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "--budget", "100/720h", "--soft-budget", "40", "ops"); code != exitOK ||
		out != "team ops: rpm -, tpm -, budget 100/30d, soft budget 40\n" {
		t.Fatalf("teams set ops --budget 100/720h: exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "--rpm", "5", "ops"); code != exitOK ||
		out != "team ops: rpm 5, tpm -, budget 100/30d, soft budget 40\n" {
		t.Fatalf("teams set ops --rpm 5 (the soft budget stays): exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "--budget", "none", "ops"); code != exitOK ||
		out != "team ops: rpm 5, tpm -, budget -\n" {
		t.Fatalf("teams set ops --budget none (the soft budget goes with it): exit %d\n%s", code, out)
	}
	if code, out, _ := cli(t, admin, "teams", "set", "--budget", "100/30d", "ops"); code != exitOK ||
		out != "team ops: rpm 5, tpm -, budget 100/30d\n" {
		t.Fatalf("teams set ops: exit %d\n%s", code, out)
	}
	code, out, _ := cli(t, admin, "teams", "list")
	if want := "name      rpm  tpm  budget    source\ninfra     -    -    -         store\nops       5    -    100/30d   store\nresearch  1k   50k  100/week  store\n"; code != exitOK || out != want {
		t.Fatalf("teams list: exit %d\n%s\nwant\n%s", code, out, want)
	}
}

// TestKeysCommandUsageErrors: bad flags and arguments are usage errors
// (exit 2), caught before any call.
func TestKeysCommandUsageErrors(t *testing.T) {
	admin := "http://127.0.0.1:1" // nothing listens: a call would be exit 1
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no subcommand", []string{"keys"}, "keys needs a subcommand"},
		{"unknown subcommand", []string{"keys", "frob"}, `unknown subcommand "frob"`},
		{"create without name", []string{"keys", "create", "-admin", admin, "--rpm", "5"}, "keys create needs --name"},
		{"bad rpm", []string{"keys", "create", "-admin", admin, "--name", "a", "--rpm", "lots"}, `--rpm: "lots" is not a count`},
		{"bad tpm", []string{"keys", "update", "key_x", "-admin", admin, "--tpm", "-5"}, `--tpm: count "-5" is negative`},
		{"bad max-concurrent", []string{"keys", "create", "-admin", admin, "--name", "a", "--max-concurrent", "x"}, "--max-concurrent:"},
		{"bad budget", []string{"keys", "create", "-admin", admin, "--name", "a", "--budget", "50"}, "--budget:"},
		{"bad expires", []string{"keys", "create", "-admin", admin, "--name", "a", "--expires", "soon"}, "--expires:"},
		{"unknown flag", []string{"keys", "create", "--nmae", "a"}, "flag provided but not defined: -nmae"},
		{"create with an argument", []string{"keys", "create", "-admin", admin, "--name", "a", "extra"}, "keys create takes no arguments"},
		{"show without ID", []string{"keys", "show", "-admin", admin}, "keys show needs a key ID"},
		{"rotate two IDs", []string{"keys", "rotate", "key_a", "key_b"}, `keys rotate takes a key ID only, not also "key_b"`},
		{"update without a change", []string{"keys", "update", "key_a", "-admin", admin}, "give at least one of"},
		{"teams without subcommand", []string{"teams"}, "teams needs a subcommand"},
		{"teams set without name", []string{"teams", "set", "-admin", admin, "--rpm", "5"}, "teams set needs a team name"},
		{"teams set bad budget", []string{"teams", "set", "infra", "--budget", "5/year"}, "--budget:"},
		{"teams list argument", []string{"teams", "list", "x"}, "teams list takes no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run2(t, tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant %q", code, exitUsage, errOut, tc.stderr)
			}
		})
	}
}
