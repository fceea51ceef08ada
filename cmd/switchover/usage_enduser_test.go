package main

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageCommandByEndUser, on SQLite and PostgreSQL: usage --by end_user
// and --end-user.
func TestUsageCommandByEndUser(t *testing.T) { onEachStore(t, testUsageCommandByEndUser) }

func testUsageCommandByEndUser(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-12-01T08:00:00Z"), RequestID: "u1", KeyID: "key_1", Model: "m", EndUser: "alice@example.com", PromptTokens: 10, Cost: 0.25},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "u2", KeyID: "key_2", Model: "m", EndUser: "alice@example.com", PromptTokens: 20, Cost: 0.5},
		{At: usageAt("2026-12-01T09:30:00Z"), RequestID: "u3", KeyID: "key_1", Model: "m", EndUser: "bob", PromptTokens: 40, Cost: 1},
		{At: usageAt("2026-12-01T09:45:00Z"), RequestID: "u4", KeyID: "key_1", Model: "m", PromptTokens: 80, Cost: 2},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"by end user", []string{"--by", "end_user"}, `usage from 2026-12-01 to 2026-12-02
end_user           requests  failovers  prompt  completion  cached  reasoning  cost USD
-                  1         0          80      0           0       0          2.000000
alice@example.com  2         0          30      0           0       0          0.750000
bob                1         0          40      0           0       0          1.000000
total              4         0          150     0           0       0          3.750000
`},
		{"one end user by key", []string{"--end-user", "alice@example.com", "--by", "key"}, `usage from 2026-12-01 to 2026-12-02
key    requests  failovers  prompt  completion  cached  reasoning  cost USD
key_1  1         0          10      0           0       0          0.250000
key_2  1         0          20      0           0       0          0.500000
total  2         0          30      0           0       0          0.750000
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, admin, append([]string{"usage"}, tc.args...)...)
			if code != exitOK || out != tc.want {
				t.Fatalf("usage %s: exit %d, stderr %s\n%s\nwant\n%s", strings.Join(tc.args, " "), code, errOut, out, tc.want)
			}
		})
	}
}

// TestUsageCommandByHour, on SQLite and PostgreSQL: usage --by hour prints
// a row an hour.
func TestUsageCommandByHour(t *testing.T) { onEachStore(t, testUsageCommandByHour) }

func testUsageCommandByHour(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-12-01T08:10:00Z"), RequestID: "h1", KeyID: "key_1", Model: "m", PromptTokens: 10, Cost: 0.25},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "h2", KeyID: "key_2", Model: "m", PromptTokens: 20, Cost: 0.5},
		{At: usageAt("2026-12-01T09:59:59Z"), RequestID: "h3", KeyID: "key_1", Model: "m", PromptTokens: 40, Cost: 1},
	}); err != nil {
		t.Fatal(err)
	}
	want := `usage from 2026-12-01 to 2026-12-02
hour                  requests  failovers  prompt  completion  cached  reasoning  cost USD
2026-12-01T08:00:00Z  1         0          10      0           0       0          0.250000
2026-12-01T09:00:00Z  2         0          60      0           0       0          1.500000
total                 3         0          70      0           0       0          1.750000
`
	code, out, errOut := cli(t, admin, "usage", "--from", "2026-12-01", "--to", "2026-12-02", "--by", "hour")
	if code != exitOK || out != want {
		t.Fatalf("usage --by hour: exit %d, stderr %s\n%s\nwant\n%s", code, errOut, out, want)
	}
}
