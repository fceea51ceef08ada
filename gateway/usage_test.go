package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// requestLines are the request log's lines, oldest first.
func requestLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// TestTokensAreExportedForEveryAnswer: the tokens of every answer, plain
// or streamed, from an OpenAI-format backend and a translated one, reach
// the spend metrics. (Reading them from each provider's answers is the
// engine's: engine.TestUsageIsCountedForEveryAnswer.)
func TestTokensAreExportedForEveryAnswer(t *testing.T) {
	for _, backend := range []string{"openai", "claude"} {
		t.Run(backend, func(t *testing.T) {
			e := startProviders(t, []string{backend}, nil, "")
			c := e.openai()
			params := openai.ChatCompletionNewParams{Model: "chat-prod", MaxTokens: openai.Int(5),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count the tokens of this prompt")}}
			plain, err := c.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			s := c.Chat.Completions.NewStreaming(t.Context(), params)
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			// The figures are recorded once each answer has gone out.
			prefix := func(kind string) string {
				return fmt.Sprintf(`switchover_tokens_total{backend=%q,key="none",kind=%q,model=`, backend, kind)
			}
			eventually(t, "the tokens of both calls in the metrics", func() bool {
				return len(requestLines(t, e.logs.String())) == 2
			})
			text := string(scrape(t, e.gw))
			for _, k := range []struct {
				kind string
				n    int64
			}{{"prompt", 2 * plain.Usage.PromptTokens}, {"completion", 2 * plain.Usage.CompletionTokens}} {
				line := ""
				for _, l := range strings.Split(text, "\n") {
					if strings.HasPrefix(l, prefix(k.kind)) {
						line = l
					}
				}
				if !strings.HasSuffix(line, fmt.Sprintf("} %d", k.n)) {
					t.Errorf("%s tokens: %q, want %d", k.kind, line, k.n)
				}
			}
		})
	}
}
