package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestUsageRequestsCommand, on SQLite and PostgreSQL: a page as a table
// ends with the command of the next one (without the admin key), which
// gives the rest; CSV and filters pass through.
func TestUsageRequestsCommand(t *testing.T) { onEachStore(t, testUsageRequestsCommand) }

func testUsageRequestsCommand(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-12-01T08:00:00Z"), RequestID: "r1", KeyID: "key_1", Team: "research", Tags: []string{"prod"}, Backend: "aoai-se",
			Model: "gpt-4o", PromptTokens: 500, CompletionTokens: 50, Cost: 0.005, Status: 200},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "r2", KeyID: "key_2", Team: "infra", Backend: "openai-paygo",
			Model: "gpt-4o", EndUser: "alice@example.com", PromptTokens: 2000, CompletionTokens: 1000, Cost: 0.035, Status: 429, Failover: true},
		{At: usageAt("2026-12-01T09:30:00Z"), RequestID: "r3", KeyID: "key_1", Team: "research", Tags: []string{"prod"}, Backend: "aoai-se",
			Model: "gpt-4o-mini", PromptTokens: 30, CompletionTokens: 7, Cost: 0.00006, Status: 200, Estimated: true},
	}); err != nil {
		t.Fatal(err)
	}
	base := []string{"usage", "requests", "-admin", admin, "-key", "admin-key-0123456789"}
	code, out, errOut := run2(t, append(base, "--limit", "2")...)
	want := `time                  request id  key    team      end user           tags  backend       model        prompt  completion  cost USD  status  failover
2026-12-01T09:30:00Z  r3          key_1  research  -                  prod  aoai-se       gpt-4o-mini  ~30     ~7          0.000060  200     -
2026-12-01T09:00:00Z  r2          key_2  infra     alice@example.com  -     openai-paygo  gpt-4o       2000    1000        0.035000  429     yes
`
	if code != exitOK || !strings.HasPrefix(out, want) {
		t.Fatalf("exit %d\n%s%s\nwant\n%s", code, out, errOut, want)
	}
	more := regexp.MustCompile(`(?m)^more: switchover usage requests -admin \S+ --limit 2 --cursor (\S+)$`).FindStringSubmatch(out)
	if more == nil || strings.Contains(out, "admin-key-0123456789") {
		t.Fatalf("no next-page command, or it holds the admin key:\n%s", out)
	}
	code, out, _ = run2(t, append(base, "--limit", "2", "--cursor", more[1])...)
	if code != exitOK || !strings.Contains(out, "  r1  ") || strings.Contains(out, "r2") || strings.Contains(out, "more:") {
		t.Fatalf("the next page: exit %d\n%s", code, out)
	}
	code, out, _ = run2(t, append(base, "--tag", "prod", "--status", "2xx", "--from", "2026-12-01T09:00:00Z", "--format", "csv")...)
	if code != exitOK || out != `time,request_id,key,team,tags,pool,backend,model,prompt_tokens,completion_tokens,cached_tokens,reasoning_tokens,cost_usd,estimated,status,failover,end_user,cache,saved_usd,tried,hedge,duration_ms,first_byte_ms,unanswered
2026-12-01T09:30:00Z,r3,key_1,research,prod,,aoai-se,gpt-4o-mini,30,7,0,0,0.00006,true,200,false,,,0,0,,0,0,false
` {
		t.Fatalf("csv: exit %d\n%s", code, out)
	}
	code, out, _ = run2(t, append(base, "--end-user", "alice@example.com", "--format", "json")...)
	if code != exitOK || !strings.Contains(out, `"request_id": "r2"`) || !strings.Contains(out, `"end_user": "alice@example.com"`) ||
		strings.Contains(out, `"r1"`) || strings.Contains(out, `"r3"`) {
		t.Fatalf("--end-user: exit %d\n%s", code, out)
	}
}

func TestUsageRequestsCommandUsageErrors(t *testing.T) {
	admin := "http://127.0.0.1:1" // nothing listens: a call would be exit 1
	for _, args := range [][]string{
		{"--from", "yesterday"},
		{"--tag", "a b"},
		{"--limit", "1001"},
		{"--format", "xml"},
		{"--end-user", strings.Repeat("u", ledger.MaxEndUser+1)},
		{"extra"},
	} {
		code, _, errOut := run2(t, append([]string{"usage", "requests", "-admin", admin}, args...)...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, exitUsage, errOut)
		}
	}
}

// TestUsageRequestCommand: switchover usage request ID prints one
// request with its attempts; the new filters of usage requests reach
// the API; an unknown id is the API's 404 message.
func TestUsageRequestCommand(t *testing.T) { onEachStore(t, testUsageRequestCommand) }

func testUsageRequestCommand(t *testing.T, kind string) {
	admin, s := ledgerAdmin(t, kind)
	if err := s.RecordUsage(t.Context(), []ledger.Usage{
		{At: usageAt("2026-12-01T08:00:00Z"), RequestID: "r1", KeyID: "key_1", Pool: "chat", Backend: "sec", Model: "gpt-4o",
			Status: 200, Failover: true, Tried: 2, DurationMs: 1500, FirstByteMs: 1100,
			Attempts: []ledger.Attempt{{Backend: "weu", Status: 429, Reason: "rate_limited", DurationMs: 600},
				{Backend: "sec", Status: 200, Reason: "ok", StartMs: 601, DurationMs: 500}},
			Bodies: &ledger.Bodies{Request: []byte("{\"messages\":\"hi \x1b[2J sk-proj-abcdefghijklmnopqrstuvwxyz\"}"), Response: []byte(`{"answer":"ho"}`),
				RequestSize: 60, ResponseSize: 900, ResponseTruncated: true}},
		{At: usageAt("2026-12-01T09:00:00Z"), RequestID: "r2", KeyID: "key_1", Pool: "chat", Backend: "weu", Model: "gpt-4o", Status: 200},
	}); err != nil {
		t.Fatal(err)
	}
	base := []string{"-admin", admin, "-key", "admin-key-0123456789"}
	code, out, errOut := run2(t, append([]string{"usage", "request"}, append(base, "r1")...)...)
	if code != exitOK || !regexp.MustCompile(`(?m)^1\s+weu\s+429\s+rate_limited\s+0\s+600\s+-$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^2\s+sec\s+200\s+ok\s+601\s+500\s+-$`).MatchString(out) || !strings.Contains(out, "1500 ms (first byte 1100 ms)") {
		t.Fatalf("usage request r1: exit %d\n%s%s", code, out, errOut)
	}
	// Its bodies: redacted by the store, the terminal's escape shown as
	// text, the truncation said.
	if !strings.Contains(out, "request body (60 bytes):\n"+`{"messages":"hi \x1b[2J [REDACTED]"}`) || strings.Contains(out, "\x1b[") ||
		!strings.Contains(out, "response body (900 bytes, truncated):\n"+`{"answer":"ho"}`) {
		t.Errorf("usage request r1's bodies:\n%s", out)
	}
	if code, out, _ := run2(t, append([]string{"usage", "request"}, append(base, "r2")...)...); code != exitOK || !strings.Contains(out, "bodies: no bodies kept") {
		t.Errorf("usage request r2 (no bodies): exit %d\n%s", code, out)
	}
	code, out, _ = run2(t, append([]string{"usage", "requests"}, append(base, "--backend", "weu", "--failover", "yes", "--format", "csv")...)...)
	if code != exitOK || !strings.Contains(out, "\n2026-12-01T08:00:00Z,r1,") || strings.Contains(out, ",r2,") {
		t.Fatalf("--backend weu --failover yes: exit %d\n%s", code, out)
	}
	code, _, errOut = run2(t, append([]string{"usage", "request"}, append(base, "nope")...)...)
	if code == exitOK || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("an unknown id: exit %d\n%s", code, errOut)
	}
	for _, args := range [][]string{{"usage", "request"}, {"usage", "requests", "--failover", "maybe"}, {"usage", "requests", "--cache", "miss"}} {
		if code, _, _ := run2(t, append(args, "-admin", "http://127.0.0.1:1")...); code != exitUsage {
			t.Errorf("%v: exit %d, want a usage error (%d)", args, code, exitUsage)
		}
	}
}
