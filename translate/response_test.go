package translate

import (
	"bytes"
	"testing"
)

func TestFinishReasons(t *testing.T) {
	for in, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
		"model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter",
	} {
		if got := anStopToOpenAI(in); got != want {
			t.Errorf("anthropic %s -> %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "refusal", "": "end_turn",
	} {
		if got := openAIFinishToAnthropic(in); got != want {
			t.Errorf("openai %q -> %s, want %s", in, got, want)
		}
	}
	for _, tc := range []struct {
		in    string
		calls bool
		want  string
	}{
		{"STOP", false, "stop"}, {"STOP", true, "tool_calls"}, {"MAX_TOKENS", true, "length"},
		{"SAFETY", false, "content_filter"}, {"RECITATION", false, "content_filter"}, {"BLOCKLIST", false, "content_filter"},
		{"PROHIBITED_CONTENT", false, "content_filter"}, {"SPII", false, "content_filter"}, {"IMAGE_SAFETY", false, "content_filter"},
		{"OTHER", false, "stop"}, {"MALFORMED_FUNCTION_CALL", false, "stop"}, {"LANGUAGE", false, "stop"}, {"", false, ""},
	} {
		if got := gmFinishToOpenAI(tc.in, tc.calls); got != tc.want {
			t.Errorf("gemini %s (calls %v) -> %q, want %q", tc.in, tc.calls, got, tc.want)
		}
	}
}

// anNulls are the members of a translated Message that are always null.
const anNulls = `"stop_details":null,"container":null,"diagnostics":null`

// anUsageRest is the usage of a translated Message after input_tokens and
// output_tokens, when nothing was cached and nothing reasoned.
const anUsageRest = `"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},` +
	`"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","speed":"standard","inference_geo":null`

func TestOpenAIResponseToAnthropicEdges(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"tool calls ended with stop",
			`{"id":"chatcmpl-1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"stop"}]}`,
			`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"c1","name":"f","input":{"a":1},"caller":{"type":"direct"}}],"stop_reason":"tool_use","stop_sequence":null,` + anNulls + `,"usage":{"input_tokens":0,"output_tokens":0,` + anUsageRest + `}}`},
		{"refusal",
			`{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`,
			`{"id":"msg_x","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I can't help with that."}],"stop_reason":"refusal","stop_sequence":null,` + anNulls + `,"usage":{"input_tokens":5,"output_tokens":6,` + anUsageRest + `}}`},
		{"empty content",
			`{"id":"chatcmpl-2","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`,
			`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"refusal","stop_sequence":null,` + anNulls + `,"usage":{"input_tokens":0,"output_tokens":0,` + anUsageRest + `}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenAIResponseToAnthropic([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
		})
	}
}

func TestResponseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv func([]byte) ([]byte, error)
		in   string
	}{
		{"anthropic error body", AnthropicResponseToOpenAI, anthropic529},
		{"anthropic not json", AnthropicResponseToOpenAI, `<html>`},
		{"gemini nothing", func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "m") }, `{"usageMetadata":{"promptTokenCount":1}}`},
		{"openai no choices", OpenAIResponseToAnthropic, `{"id":"x","choices":[]}`},
		{"openai bad arguments", OpenAIResponseToAnthropic, `{"id":"x","choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := tc.conv([]byte(tc.in)); err == nil {
				t.Fatalf("no error; output %s", out)
			}
		})
	}
}

func TestInboundEmptySystem(t *testing.T) {
	got, err := AnthropicRequestToOpenAI([]byte(`{"model":"m","max_tokens":10,"system":"","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, got, `{"model":"m","max_completion_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
}

// TestReasoningInResponses checks the reasoning members each way: a string
// reasoning (OpenRouter) reads like reasoning_content, an object reasoning is
// not text, and redacted thinking alone gives no reasoning_content.
func TestReasoningInResponses(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		conv           func([]byte) ([]byte, error)
	}{
		{"string reasoning", `{"id":"chatcmpl-3","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","reasoning":"hm"},"finish_reason":"stop"}]}`,
			`{"id":"msg_3","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":""},{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,` + anNulls + `,"usage":{"input_tokens":0,"output_tokens":0,` + anUsageRest + `}}`,
			OpenAIResponseToAnthropic},
		{"object reasoning", `{"id":"chatcmpl-4","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok","reasoning":{"summary":[]}},"finish_reason":"stop"}]}`,
			`{"id":"msg_4","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,` + anNulls + `,"usage":{"input_tokens":0,"output_tokens":0,` + anUsageRest + `}}`,
			OpenAIResponseToAnthropic},
		{"redacted thinking only", `{"id":"msg_5","type":"message","role":"assistant","model":"c","content":[{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}`,
			`{"id":"chatcmpl-msg_5","object":"chat.completion","created":0,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":"ok","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
			AnthropicResponseToOpenAI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.conv([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
		})
	}
}

// TestTranslatedChatMessageHasAnnotations: chat answers translated from
// Anthropic and Gemini had no annotations member, which OpenAI writes as
// [] on every message and clients checking the chat schema warn about.
func TestTranslatedChatMessageHasAnnotations(t *testing.T) {
	for name, conv := range map[string]struct {
		in string
		fn func([]byte) ([]byte, error)
	}{
		"anthropic": {`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`, AnthropicResponseToOpenAI},
		"gemini":    {`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"modelVersion":"g"}`, func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "g") }},
	} {
		got, err := conv.fn([]byte(conv.in))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Contains(got, []byte(`"annotations":[]`)) {
			t.Errorf("%s: %s", name, got)
		}
	}
}
