package translate

import (
	"fmt"
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		est  func([]byte) (int, error)
		body string
		want int
	}{
		// 4 tokens for the message, 8 bytes of text = 2 tokens
		{"anthropic string", EstimateAnthropicTokens, `{"model":"m","messages":[{"role":"user","content":"12345678"}]}`, 6},
		{"anthropic system and blocks", EstimateAnthropicTokens, `{"system":"abcd","messages":[{"role":"user","content":[{"type":"text","text":"abcd","cache_control":{"type":"ephemeral"}}]}]}`, 4 + 2},
		{"anthropic image", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("A", 40000) + `"}}]}]}`, 4 + imageTokens},
		{"anthropic pdf", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}}]}]}`, 4 + documentTokens},
		{"anthropic text document", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"12345678"}}]}]}`, 4 + 2},
		{"anthropic tool result image", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"abcd"},{"type":"image","source":{"type":"url","url":"https://x"}}]}]}]}`, 4 + 1 + imageTokens},
		{"anthropic thinking free", EstimateAnthropicTokens, `{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"` + strings.Repeat("x", 400) + `","signature":"s"}]}]}`, 4},
		{"anthropic tool use and tools", EstimateAnthropicTokens, `{"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]}]}`, 4 + (len(`[{"name":"f","input_schema":{}}]`)+len("f")+len(`{"a":1}`)+3)/4},
		{"openai string", EstimateOpenAITokens, `{"messages":[{"role":"user","content":"12345678"}]}`, 6},
		{"openai image", EstimateOpenAITokens, `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("A", 40000) + `"}}]}]}`, 4 + 1 + imageTokens},
		{"openai file", EstimateOpenAITokens, `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0x"}}]}]}`, 4 + documentTokens},
		{"openai tool calls", EstimateOpenAITokens, `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"abcd","arguments":"{}"}}]}]}`, 4 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.est([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %d tokens, want %d", got, tc.want)
			}
		})
	}
}

// TestEstimateMonotonic checks that more text never estimates fewer tokens.
func TestEstimateMonotonic(t *testing.T) {
	for name, est := range map[string]func([]byte) (int, error){"anthropic": EstimateAnthropicTokens, "openai": EstimateOpenAITokens} {
		prev := -1
		for n := 0; n <= 4096; n += 37 {
			got, err := est([]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("w", n) + `"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if got < prev {
				t.Fatalf("%s: %d bytes estimate %d tokens, fewer than %d", name, n, got, prev)
			}
			prev = got
		}
		if prev < 1000 {
			t.Errorf("%s: 4 KiB of text estimates only %d tokens", name, prev)
		}
	}
}

func TestEstimateMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		est  func([]byte) (int, error)
		body string
	}{
		{"anthropic not json", EstimateAnthropicTokens, `{`},
		{"anthropic array", EstimateAnthropicTokens, `[]`},
		{"anthropic no messages", EstimateAnthropicTokens, `{"model":"m"}`},
		{"anthropic content number", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":5}]}`},
		{"anthropic no role", EstimateAnthropicTokens, `{"messages":[{"content":"x"}]}`},
		{"anthropic bad system", EstimateAnthropicTokens, `{"system":5,"messages":[{"role":"user","content":"x"}]}`},
		{"anthropic bad tool_result", EstimateAnthropicTokens, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":7}]}]}`},
		{"openai not json", EstimateOpenAITokens, `nope`},
		{"openai messages object", EstimateOpenAITokens, `{"messages":{"role":"user"}}`},
		{"openai bad content", EstimateOpenAITokens, `{"messages":[{"role":"user","content":true}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n, err := tc.est([]byte(tc.body)); err == nil {
				t.Errorf("no error, estimate %d", n)
			}
		})
	}
}

// TestCheckAnthropicCountTokens: the body of a count_tokens the gateway
// answers itself is checked as Anthropic checks it, with its words.
func TestCheckAnthropicCountTokens(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"string content", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, ""},
		{"blocks and system", `{"model":"m","system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, ""},
		{"not an object", `[]`, "the body is not a JSON object"},
		{"no messages", `{"model":"m"}`, "messages: Field required"},
		{"messages a number", `{"messages":5}`, "messages: Input should be a valid list of objects"},
		{"no role", `{"messages":[{"content":"x"}]}`, "messages.0.role: Field required"},
		{"no content", `{"messages":[{"role":"user","content":"x"},{"role":"user"}]}`, "messages.1.content: Field required"},
		{"content a number", `{"messages":[{"role":"user","content":5}]}`, "messages.0.content: Input should be a valid string or list"},
		{"system a number", `{"system":5,"messages":[{"role":"user","content":"x"}]}`, "system: Input should be a valid string or list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAnthropicCountTokens([]byte(tc.body))
			if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
