package engine

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchover-gw/switchover/internal/poll"
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

// TestUsageIsCountedForAnthropicAndResponsesClients: an Anthropic Messages
// caller's and a Responses caller's tokens are counted as their answers
// report them, streamed or not, whichever backend answered.
func TestUsageIsCountedForAnthropicAndResponsesClients(t *testing.T) {
	for _, backend := range []string{"openai", "claude"} {
		t.Run(backend, func(t *testing.T) {
			e := startProviders(t, []string{backend}, nil, "")
			ac, oc := e.anthropic(), e.openai()
			msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 5,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count the tokens of this prompt"))}})
			if err != nil {
				t.Fatal(err)
			}
			st := ac.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 5,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count the tokens of this prompt"))}})
			for st.Next() {
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			r, err := oc.Responses.New(t.Context(), responseParams("count the tokens of this prompt"))
			if err != nil {
				t.Fatal(err)
			}
			var lines []map[string]any
			poll.Until(t, 10*time.Second, func() bool {
				lines = requestLines(t, e.logs.String())
				return len(lines) == 3
			}, func() string { return "three request lines" })
			want := []struct{ prompt, completion int64 }{
				{msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens},
				{msg.Usage.InputTokens + msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens},
				{r.Usage.InputTokens, r.Usage.OutputTokens},
			}
			for i, l := range lines {
				if want[i].completion == 0 || l["prompt_tokens"] != float64(want[i].prompt) || l["completion_tokens"] != float64(want[i].completion) {
					t.Errorf("request %d logged %v prompt, %v completion tokens; the answer said %d, %d", i+1, l["prompt_tokens"], l["completion_tokens"], want[i].prompt, want[i].completion)
				}
			}
		})
	}
}
