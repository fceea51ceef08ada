package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// TestUsageIsCountedForEveryAnswer: the tokens an answer used are in the
// request log and the metrics, for plain and streamed calls, from an
// OpenAI-format backend and a translated one, whether or not the caller
// asked a stream for its usage; a caller that did not ask gets no usage
// chunk.
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
			resp, err := http.Post(e.url+"/v1/chat/completions", "application/json", strings.NewReader(
				`{"model":"chat-prod","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"count the tokens of this prompt"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(raw), `"prompt_tokens"`) {
				t.Fatalf("a caller that did not ask got the usage chunk:\n%s", raw)
			}
			// A line is written once its answer has gone out, after the
			// client may have read it all.
			var lines []map[string]any
			eventually(t, "three request lines", func() bool {
				lines = requestLines(t, e.logs.String())
				return len(lines) == 3
			})
			for i, l := range lines {
				if l["prompt_tokens"] != float64(plain.Usage.PromptTokens) || l["completion_tokens"] != float64(plain.Usage.CompletionTokens) {
					t.Errorf("request %d logged %v prompt, %v completion tokens; the answer said %d, %d", i+1, l["prompt_tokens"], l["completion_tokens"], plain.Usage.PromptTokens, plain.Usage.CompletionTokens)
				}
			}
			metrics := scrape(t, e.gw)
			want := fmt.Sprintf(`switchover_tokens_total{backend=%q,key="none",kind="prompt"`, backend)
			if !strings.Contains(string(metrics), want) {
				t.Errorf("no %s in the metrics", want)
			}
		})
	}
}
