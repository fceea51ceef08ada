package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3/shared"
)

// TestChatReasoningEffortCountsReasoningTokens: reasoning_effort gives
// reasoning tokens, part of the completion tokens, in
// completion_tokens_details, more for more effort.
func TestChatReasoningEffortCountsReasoningTokens(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	client := newClient(ep)
	for effort, want := range map[shared.ReasoningEffort]int64{"": 0, "low": 8, "medium": 16, "high": 32} {
		q := chatParams(ep, "hello", 0)
		q.ReasoningEffort = effort
		c, err := client.Chat.Completions.New(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Usage.CompletionTokensDetails.ReasoningTokens; got != want {
			t.Errorf("effort %q: reasoning_tokens %d, want %d", effort, got, want)
		}
		if c.Usage.CompletionTokens != 20+want {
			t.Errorf("effort %q: completion_tokens %d, want %d", effort, c.Usage.CompletionTokens, 20+want)
		}
	}
	resp, b := do(t, http.MethodPost, chatPath(ep), `{"model":"chat-prod","reasoning_effort":"huge","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 400 {
		t.Errorf("unknown effort: %d %s", resp.StatusCode, b)
	}
}

// TestAnthropicThinkingBlocks: thinking asks for a thinking block with a
// signature before the text, streamed as thinking_delta and
// signature_delta; the SDK's accumulated message equals the plain one in
// shape, and the thought is counted as thinking tokens.
func TestAnthropicThinkingBlocks(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	client := anthropicClient(ep)
	q := messageParams(ep, "hello", 2048)
	q.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	m, err := client.Messages.New(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[0].Type != "thinking" || m.Content[0].Thinking == "" || m.Content[0].Signature == "" || m.Content[1].Type != "text" {
		t.Fatalf("content: %s", m.RawJSON())
	}
	if !strings.Contains(m.RawJSON(), `"output_tokens_details":{"thinking_tokens":16}`) || m.Usage.OutputTokens != 36 {
		t.Errorf("usage: %s", m.RawJSON())
	}

	stream := client.Messages.NewStreaming(context.Background(), q)
	var acc anthropic.Message
	kinds := map[string]int{}
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "content_block_delta" {
			kinds[ev.Delta.Type]++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if kinds["thinking_delta"] != 16 || kinds["signature_delta"] != 1 || kinds["text_delta"] != 20 {
		t.Errorf("deltas: %v", kinds)
	}
	if len(acc.Content) != 2 || acc.Content[0].Signature == "" || acc.Content[1].Text == "" {
		t.Errorf("accumulated: %+v", acc.Content)
	}
}

func TestAnthropicThinkingChecksBudget(t *testing.T) {
	s := startSim(t, oneAnthropic(nil))
	ep := s.Deployments()[0]
	for name, body := range map[string]string{
		"budget below 1024":       `{"model":"claude-test","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":100},"messages":[{"role":"user","content":"hi"}]}`,
		"max_tokens not above it": `{"model":"claude-test","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`,
		"budget missing":          `{"model":"claude-test","max_tokens":4096,"thinking":{"type":"enabled"},"messages":[{"role":"user","content":"hi"}]}`,
	} {
		resp, b := do(t, http.MethodPost, ep.URL+"/v1/messages", body, anthropicHeaders(""))
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
}

// TestResponsesReasoningItem: reasoning.effort gives a reasoning item
// before the message, with the thought as its summary when one is asked
// for, and the reasoning tokens in usage; the request's setting is echoed.
func TestResponsesReasoningItem(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, ep.URL+"/responses",
		`{"model":"chat-prod","input":"hi","reasoning":{"effort":"low","summary":"auto"}}`, hdrFor(ep))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var r struct {
		Output []struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Summary []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"summary"`
		} `json:"output"`
		Reasoning struct {
			Effort  string `json:"effort"`
			Summary string `json:"summary"`
		} `json:"reasoning"`
		Usage struct {
			OutputTokens        int64 `json:"output_tokens"`
			OutputTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || !strings.HasPrefix(r.Output[0].ID, "rs_") ||
		len(r.Output[0].Summary) != 1 || r.Output[0].Summary[0].Type != "summary_text" || r.Output[1].Type != "message" {
		t.Fatalf("output: %s", b)
	}
	if r.Reasoning.Effort != "low" || r.Reasoning.Summary != "auto" || r.Usage.OutputTokensDetails.ReasoningTokens != 8 || r.Usage.OutputTokens != 28 {
		t.Errorf("reasoning and usage: %s", b)
	}

	resp, b = do(t, http.MethodPost, ep.URL+"/responses",
		`{"model":"chat-prod","input":"hi","stream":true,"reasoning":{"effort":"low","summary":"auto"}}`, hdrFor(ep))
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var names []string
	for _, ev := range sseNamedEvents(t, string(b)) {
		var typed struct {
			Type        string `json:"type"`
			OutputIndex *int   `json:"output_index"`
		}
		if err := json.Unmarshal([]byte(ev.data), &typed); err != nil {
			t.Fatal(err)
		}
		if typed.Type == "response.output_item.added" {
			names = append(names, typed.Type+"@"+string(rune('0'+*typed.OutputIndex)))
		}
		if strings.HasPrefix(typed.Type, "response.reasoning_summary") {
			names = append(names, typed.Type)
		}
	}
	got := strings.Join(names, " ")
	if !strings.HasPrefix(got, "response.output_item.added@0 response.reasoning_summary_part.added response.reasoning_summary_text.delta") ||
		!strings.HasSuffix(got, "response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.added@1") {
		t.Errorf("stream: %s", got)
	}
}

// TestResponsesEchoesToolsWhole: a function tool is listed in the response
// with description, parameters and strict, as the Responses API lists it
// (the Open Responses schema requires them).
func TestResponsesEchoesToolsWhole(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	_, b := do(t, http.MethodPost, ep.URL+"/responses",
		`{"model":"chat-prod","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":"none"}`, hdrFor(ep))
	if !strings.Contains(string(b), `"tools":[{"description":null,"name":"f","parameters":null,"strict":true,"type":"function"}]`) {
		t.Errorf("tools: %s", b)
	}
}

// TestGeminiThinkingConfig: thinkingConfig counts thoughtsTokenCount apart
// from the candidates' tokens, and includeThoughts shows a thought part.
func TestGeminiThinkingConfig(t *testing.T) {
	s := startSim(t, oneGemini(nil))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, generateURL(ep, false),
		geminiRequest("hi", `"generationConfig":{"thinkingConfig":{"thinkingBudget":1024,"includeThoughts":true}}`), map[string]string{"x-goog-api-key": keyOr(ep.Key)})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	s2 := string(b)
	if !strings.Contains(s2, `"thought":true`) || !strings.Contains(s2, `"candidatesTokenCount":20,"thoughtsTokenCount":16`) {
		t.Errorf("answer: %s", s2)
	}
}
