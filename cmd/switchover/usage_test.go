package main

import (
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

func usageAt(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestUsageCommand, on SQLite and PostgreSQL: golden table, JSON and CSV
// after RecordUsage.
func TestUsageCommand(t *testing.T) { onEachStore(t, testUsageCommand) }

func testUsageCommand(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-11-30T12:00:00Z"), RequestID: "r1", KeyID: "key_1", Team: "research", Pool: "chat", Backend: "aoai-se",
			Model: "gpt-4o", PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 100, Cost: 0.0125},
		{At: usageAt("2026-12-01T08:00:00Z"), RequestID: "r2", KeyID: "key_1", Team: "research", Pool: "chat", Backend: "aoai-se",
			Model: "gpt-4o", PromptTokens: 500, CompletionTokens: 50, Cost: 0.005},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "r3", KeyID: "key_2", Team: "infra", Pool: "chat", Backend: "openai-paygo",
			Model: "gpt-4o", PromptTokens: 2000, CompletionTokens: 1000, ReasoningTokens: 300, Cost: 0.035, Failover: true},
		{At: usageAt("2026-12-01T09:30:00Z"), RequestID: "r4", KeyID: "key_1", Team: "research", Pool: "embed", Backend: "aoai-se",
			Model: "text-embedding-3-small", PromptTokens: 3000, Cost: 0.00006},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default period, by team", []string{"--by", "team"}, `usage from 2026-12-01 to 2026-12-02
team      requests  failovers  prompt  completion  cached  reasoning  cost USD
infra     1         1          2000    1000        0       300        0.035000
research  2         0          3500    50          0       0          0.005060
total     3         1          5500    1050        0       300        0.040060
`},
		{"by team and backend over November and today", []string{"--from", "2026-11-01", "--by", "team,backend"}, `usage from 2026-11-01 to 2026-12-02
team      backend       requests  failovers  prompt  completion  cached  reasoning  cost USD
infra     openai-paygo  1         1          2000    1000        0       300        0.035000
research  aoai-se       3         0          4500    250         100     0          0.017560
total                   4         1          6500    1250        100     300        0.052560
`},
		{"by key and team, --by repeated", []string{"--by", "key", "--by", "team,key"}, `usage from 2026-12-01 to 2026-12-02
key    team      requests  failovers  prompt  completion  cached  reasoning  cost USD
key_1  research  2         0          3500    50          0       0          0.005060
key_2  infra     1         1          2000    1000        0       300        0.035000
total            3         1          5500    1050        0       300        0.040060
`},
		{"no grouping", []string{"--from", "2026-11-30", "--to", "2026-12-01"}, `usage from 2026-11-30 to 2026-12-01
       requests  failovers  prompt  completion  cached  reasoning  cost USD
total  1         0          1000    200         100     0          0.012500
`},
		{"one key by day", []string{"--from", "2026-11-01", "--by", "day", "--key-id", "key_1"}, `usage from 2026-11-01 to 2026-12-02
day         requests  failovers  prompt  completion  cached  reasoning  cost USD
2026-11-30  1         0          1000    200         100     0          0.012500
2026-12-01  2         0          3500    50          0       0          0.005060
total       3         0          4500    250         100     0          0.017560
`},
		{"csv by backend, one team", []string{"--from", "2026-11-01", "--by", "backend", "--team", "research", "--format", "csv"},
			`backend,requests,failovers,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd
aoai-se,3,0,4500,250,100,0,0.01756
`},
		{"json by model, RFC 3339 bounds", []string{"--from", "2026-12-01T09:00:00Z", "--to", "2026-12-01T09:15:00Z", "--by", "model", "--format", "json"}, `{
  "from": "2026-12-01T09:00:00Z",
  "to": "2026-12-01T09:15:00Z",
  "by": [
    "model"
  ],
  "rows": [
    {
      "model": "gpt-4o",
      "requests": 1,
      "failovers": 1,
      "prompt_tokens": 2000,
      "completion_tokens": 1000,
      "cached_tokens": 0,
      "reasoning_tokens": 300,
      "cost": 0.035
    }
  ],
  "total": {
    "requests": 1,
    "failovers": 1,
    "prompt_tokens": 2000,
    "completion_tokens": 1000,
    "cached_tokens": 0,
    "reasoning_tokens": 300,
    "cost": 0.035
  }
}
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

func TestUsageCommandUsageErrors(t *testing.T) {
	admin := "http://127.0.0.1:1" // nothing listens: a call would be exit 1
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bad repeated by", []string{"--by", "team", "--by", "region"}, `--by: "region" is not one of`},
		{"bad by", []string{"--by", "team,region"}, `--by: "region" is not one of key, team, pool, backend, model, day`},
		{"bad from", []string{"--from", "yesterday"}, `--from: "yesterday" is neither a date`},
		{"bad to", []string{"--to", "2026-12-01T00:00"}, `--to: "2026-12-01T00:00" is neither a date`},
		{"bad format", []string{"--format", "xml"}, `--format: "xml" is not table, json or csv`},
		{"argument", []string{"team"}, "usage takes no arguments"},
		{"unknown flag", []string{"--group", "team"}, "flag provided but not defined: -group"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run2(t, append([]string{"usage", "-admin", admin}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nwant %q", code, exitUsage, errOut, tc.stderr)
			}
		})
	}
}
