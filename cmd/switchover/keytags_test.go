package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestKeysTagsAndMetadata, on SQLite and PostgreSQL: keys create --tag
// --meta, keys show and list print them, list --tag filters, update --tag
// replaces and --tag "" removes; usage --by tag and --tag.
func TestKeysTagsAndMetadata(t *testing.T) { onEachStore(t, testKeysTagsAndMetadata) }

func testKeysTagsAndMetadata(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	code, out, errOut := cli(t, admin, "keys", "create", "--name", "a", "--tag", "prod", "--tag", "team-a",
		"--meta", "owner=Ana Pérez", "--meta", "ticket=OPS-1=2")
	if code != exitOK {
		t.Fatalf("keys create: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, w := range []string{"  tags            prod,team-a\n", "  meta owner      Ana Pérez\n", "  meta ticket     OPS-1=2\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("keys create output lacks %q:\n%s", w, out)
		}
	}
	ks, err := s.Keys(t.Context())
	if err != nil || len(ks) != 1 || !slices.Equal(ks[0].Tags, []string{"prod", "team-a"}) || ks[0].Metadata["ticket"] != "OPS-1=2" {
		t.Fatalf("stored %+v, %v", ks, err)
	}
	id := ks[0].ID
	if code, _, errOut = cli(t, admin, "keys", "create", "--name", "b", "--tag", "staging"); code != exitOK {
		t.Fatalf("keys create b: exit %d\n%s", code, errOut)
	}
	code, out, _ = cli(t, admin, "keys", "list", "--tag", "prod")
	if code != exitOK || !regexp.MustCompile(regexp.QuoteMeta(id)+` +a +- +prod,team-a `).MatchString(out) || strings.Contains(out, "staging") {
		t.Fatalf("keys list --tag prod: exit %d\n%s", code, out)
	}
	if code, out, _ = cli(t, admin, "keys", "update", id, "--tag", "dev"); code != exitOK || !strings.Contains(out, "  tags            dev\n") {
		t.Fatalf("keys update --tag dev: exit %d\n%s", code, out)
	}
	if code, out, _ = cli(t, admin, "keys", "update", id, "--tag", "", "--meta", ""); code != exitOK ||
		!strings.Contains(out, "  tags            -\n") || strings.Contains(out, "meta ") {
		t.Fatalf("keys update --tag '' --meta '': exit %d\n%s", code, out)
	}

	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-12-01T08:00:00Z"), RequestID: "r1", KeyID: id, Tags: []string{"prod"}, PromptTokens: 10, Cost: 0.01},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "r2", KeyID: "key_x", PromptTokens: 20, Cost: 0.02},
	}); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, admin, "usage", "--by", "tag")
	want := `usage from 2026-12-01 to 2026-12-02
tag    requests  failovers  prompt  completion  cached  reasoning  cost USD
-      1         0          20      0           0       0          0.020000
prod   1         0          10      0           0       0          0.010000
total  2         0          30      0           0       0          0.030000
`
	if code != exitOK || out != want {
		t.Fatalf("usage --by tag: exit %d\n%s\nwant\n%s", code, out, want)
	}
	if code, out, _ = cli(t, admin, "usage", "--tag", "prod", "--format", "csv"); code != exitOK || !strings.HasSuffix(out, "\n1,0,10,0,0,0,0.01\n") {
		t.Fatalf("usage --tag prod: exit %d\n%s", code, out)
	}
}

func TestKeysTagsUsageErrors(t *testing.T) {
	admin := "http://127.0.0.1:1" // nothing listens: a call would be exit 1
	for _, args := range [][]string{
		{"keys", "create", "--name", "a", "--tag", "my tag"},
		{"keys", "create", "--name", "a", "--meta", "owner"},
		{"keys", "create", "--name", "a", "--meta", "a b=c"},
		{"keys", "list", "--tag", "a;b"},
		{"usage", "--tag", "a b"},
	} {
		full := append([]string{args[0], args[1], "-admin", admin}, args[2:]...)
		if args[0] == "usage" {
			full = append([]string{"usage", "-admin", admin}, args[1:]...)
		}
		if code, _, errOut := run2(t, full...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, exitUsage, errOut)
		}
	}
}
