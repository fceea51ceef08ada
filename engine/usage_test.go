package engine

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

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

// TestUsageIsCountedForEveryAnswer: the tokens an answer used are in the
// request log, for plain and streamed calls, from an
// OpenAI-format backend and a translated one, whether or not the caller
// asked a stream for its usage; a caller that did not ask gets no usage
// chunk. (The spend metrics made of them are the gateway's:
// gateway.TestTokensAreExportedForEveryAnswer.)
func TestUsageIsCountedForEveryAnswer(t *testing.T) {
	for _, backend := range []string{"openai", "aoai-weu", "claude", "gemini"} {
		t.Run(backend, func(t *testing.T) {
			e := startProviders(t, []string{backend}, nil, "")
			c := e.openai()
			params := openai.ChatCompletionNewParams{Model: "chat-prod", MaxTokens: openai.Int(5),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("count the tokens of this prompt")}}
			plain, err := c.Chat.Completions.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			// A stream that asks for its usage gets it, and the same counts.
			withUsage := params
			withUsage.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := c.Chat.Completions.NewStreaming(t.Context(), withUsage)
			var streamed openai.CompletionUsage
			for s.Next() {
				if ch := s.Current(); ch.Usage.TotalTokens > 0 {
					streamed = ch.Usage
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if streamed.PromptTokens != plain.Usage.PromptTokens || streamed.CompletionTokens != plain.Usage.CompletionTokens {
				t.Fatalf("streamed usage %+v, plain %+v", streamed, plain.Usage)
			}
			// One that does not ask gets no usage chunk.
			resp, err := testClient.Post(e.url+"/v1/chat/completions", "application/json", strings.NewReader(
				`{"model":"chat-prod","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || strings.Contains(string(raw), `"prompt_tokens"`) {
				t.Fatalf("a caller that did not ask got the usage chunk (%d):\n%s", resp.StatusCode, raw)
			}
			// A line is written once its answer has gone out, after the
			// client may have read it all.
			var lines []map[string]any
			poll.Until(t, 10*time.Second, func() bool {
				lines = requestLines(t, e.logs.String())
				return len(lines) == 3
			}, func() string { return "three request lines" })
			for i, l := range lines {
				if l["prompt_tokens"] != float64(plain.Usage.PromptTokens) || l["completion_tokens"] != float64(plain.Usage.CompletionTokens) {
					t.Errorf("request %d logged %v prompt, %v completion tokens; the answer said %d, %d", i+1, l["prompt_tokens"], l["completion_tokens"], plain.Usage.PromptTokens, plain.Usage.CompletionTokens)
				}
			}
		})
	}
}
