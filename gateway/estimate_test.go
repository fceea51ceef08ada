package gateway_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/pricing"
	"github.com/switchover-gw/switchover/sim"
)

// estimateStore is a store for the estimate tests: its YAML, and a
// database handle of the test's own to read the rows back.
type estimateStore struct {
	name string
	open func(t *testing.T) (yaml string, db *sql.DB)
}

var estimateStores = []estimateStore{
	{"sqlite", func(t *testing.T) (string, *sql.DB) {
		path := filepath.Join(t.TempDir(), "switchover.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return fmt.Sprintf("store: {sqlite: %q}\n", path), db
	}},
	{"postgres", func(t *testing.T) (string, *sql.DB) {
		dsn := pgtest.Shared(t)
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return fmt.Sprintf("store: {postgres: %q}\n", dsn), db
	}},
}

const streamNoUsage = `{"model":"chat-prod","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},` +
	`"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`

// streamChat sends a streamed chat request with key and reads it whole.
func streamChat(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(streamNoUsage))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAnswersWithoutUsageAreNotFree: a stream and a plain answer from an
// upstream that reports no usage (the simulator's reply.omit_usage) are
// recorded with the tokenizer's counts, a cost and the estimated mark, in
// the store and the request log; before, they were 0 tokens and $0.
func TestAnswersWithoutUsageAreNotFree(t *testing.T) {
	for _, st := range estimateStores {
		t.Run(st.name, func(t *testing.T) {
			yml, db := st.open(t)
			e := startProviders(t, []string{"openai"}, func(d *sim.Deployment) { d.Reply.OmitUsage = true }, yml)
			k, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if code, body := streamChat(t, e.url, secret); code != http.StatusOK || strings.Contains(body, `"prompt_tokens"`) {
				t.Fatalf("stream: %d %s", code, body)
			}
			if code, _, body := post(t, e.url, secret, chatBody); code != http.StatusOK {
				t.Fatalf("plain: %d %s", code, body)
			}
			row := spend(t, e.gw.Ledger(), k.ID, 2)
			// "count the tokens of this prompt" is 6 tokens in o200k_base,
			// plus 4 for the message: 10 each.
			if row.PromptTokens != 20 || row.CompletionTokens <= 0 || row.Cost <= 0 {
				t.Errorf("recorded %+v, want 20 prompt tokens, completion tokens and a cost", row)
			}
			var n int
			if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM usage_requests WHERE key_id = '`+k.ID+`' AND estimated = 1 AND completion_tokens > 0`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("%d rows marked estimated with completion tokens, want 2", n)
			}
			var lines []map[string]any
			eventually(t, "two request lines", func() bool {
				lines = requestLines(t, e.logs.String())
				return len(lines) == 2
			})
			for i, l := range lines {
				if l["usage_estimated"] != true || l["prompt_tokens"] != 10.0 || l["cost_usd"] == nil {
					t.Errorf("line %d: %v", i, l)
				}
			}
		})
	}
}

// TestBudgetHoldsWithoutUsage: streams that report no usage spend a
// key's budget (148 of them on a $0.001 budget were all answered).
func TestBudgetHoldsWithoutUsage(t *testing.T) {
	for _, st := range estimateStores {
		t.Run(st.name, func(t *testing.T) {
			yml, _ := st.open(t)
			e := startProviders(t, []string{"openai"}, func(d *sim.Deployment) { d.Reply.OmitUsage = true }, yml)
			_, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app", Budget: 3 * costOf(t), BudgetPeriod: "month"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			admitted := 0
			for range 20 {
				code, body := streamChat(t, e.url, secret)
				if code == http.StatusOK {
					admitted++
					continue
				}
				if code != http.StatusTooManyRequests || !strings.Contains(body, "budget_exceeded") {
					t.Fatalf("%d %s", code, body)
				}
				break
			}
			if admitted == 0 || admitted >= 20 {
				t.Fatalf("%d streams without usage admitted on a budget of about 3 requests' cost", admitted)
			}
			t.Logf("%d streams admitted", admitted)
		})
	}
}

// costOf is what one chatBody request costs on the simulator's openai.
func costOf(t *testing.T) float64 {
	price, ok := pricing.Lookup("gpt-4o-2024-08-06")
	if !ok {
		t.Fatal("no price for gpt-4o")
	}
	return price.Cost(8, 0, 5) // the simulator's tokens for chatBody
}

// messagesNoUsage posts an Anthropic-format request with key, streamed or
// not, and reads the answer whole.
func messagesNoUsage(t *testing.T, url, key string, stream bool) (int, string) {
	t.Helper()
	body := `{"model":"chat-prod","max_tokens":5,"stream":` + fmt.Sprint(stream) +
		`,"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAnthropicFormatEstimatesAreMarkedEstimated: an Anthropic-format
// caller (/v1/messages) served by an OpenAI-format upstream that reports
// no usage was recorded with message_start's input estimate (bytes/4) as
// if reported, and no completion tokens, when streamed; a plain answer
// was recorded as 0 tokens. Both are now the tokenizer's counts, marked
// estimated, as on the OpenAI format.
func TestAnthropicFormatEstimatesAreMarkedEstimated(t *testing.T) {
	for _, st := range estimateStores {
		t.Run(st.name, func(t *testing.T) {
			yml, db := st.open(t)
			e := startProviders(t, []string{"openai"}, func(d *sim.Deployment) { d.Reply.OmitUsage = true }, yml)
			k, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, stream := range []bool{true, false} {
				if code, body := messagesNoUsage(t, e.url, secret, stream); code != http.StatusOK {
					t.Fatalf("stream %v: %d %s", stream, code, body)
				}
			}
			row := spend(t, e.gw.Ledger(), k.ID, 2)
			// "count the tokens of this prompt" is 6 tokens in o200k_base,
			// plus 4 for the message: 10 each.
			if row.PromptTokens != 20 || row.CompletionTokens <= 0 || row.Cost <= 0 {
				t.Errorf("recorded %+v, want 20 prompt tokens, completion tokens and a cost", row)
			}
			var n int
			if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM usage_requests WHERE key_id = '`+k.ID+`' AND estimated = 1 AND completion_tokens > 0`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 2 {
				t.Errorf("%d rows marked estimated with completion tokens, want 2", n)
			}
		})
	}
}
