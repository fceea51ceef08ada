package translate

import (
	"strings"
	"testing"
)

func TestModelOf(t *testing.T) {
	openaiResp := string(readFile(t, "resp_openai_to_anthropic_text.in.json"))
	modelEnd := strings.Index(openaiResp, `gpt-4.1-2025-04-14"`) + len(`gpt-4.1-2025-04-14"`)
	geminiResp := string(readFile(t, "resp_gemini_to_openai_text.in.json"))
	for _, tc := range []struct {
		name   string
		from   Format
		prefix string
		want   string
	}{
		{"openai body", OpenAI, openaiResp, "gpt-4.1-2025-04-14"},
		{"openai prefix", OpenAI, openaiResp[:modelEnd], "gpt-4.1-2025-04-14"},
		{"openai prefix cut in the model", OpenAI, openaiResp[:modelEnd-3], ""},
		{"openai chunk event text", OpenAI, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choi`, "gpt-4o-mini"},
		{"anthropic body", Anthropic, string(readFile(t, "resp_anthropic_to_openai_text.in.json")), "claude-sonnet-4-5-20250929"},
		{"anthropic message_start", Anthropic, `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-opus-4-1","stop_rea`, "claude-opus-4-1"},
		{"gemini body", Gemini, geminiResp, "gemini-2.5-flash"},
		{"gemini prefix without it", Gemini, geminiResp[:200], ""},
		{"gemini stream list", Gemini, `[{"candidates":[],"modelVersion":"gemini-2.0-flash"}`, "gemini-2.0-flash"},
		{"nested model does not count", Gemini, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"modelVersion":"fake"}}}]}}],"modelVersion":"real"}`, "real"},
		{"escaped", OpenAI, `{"model":"a\"b"}`, `a"b`},
		{"invalid JSON before it", OpenAI, `{"id": 'x', "model": "gpt-x", "choices": []}`, "gpt-x"},
		{"none", OpenAI, `{"id":"x"}`, ""},
		{"not json", Anthropic, `Bad Gateway`, ""},
		{"empty", Gemini, ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ModelOf(tc.from, []byte(tc.prefix)); got != tc.want {
				t.Errorf("ModelOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestModelOfSkipsEmptyModel(t *testing.T) {
	// Azure's first stream chunk carries prompt_filter_results and an
	// empty model; the version is in the next.
	prefix := "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[]}\n\n" +
		"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-2024-11-20\",\"choices\":[{\"delta\":{\"content\":\"he"
	if got := ModelOf(OpenAI, []byte(prefix)); got != "gpt-4o-2024-11-20" {
		t.Fatalf("ModelOf = %q", got)
	}
	if got := ModelOf(OpenAI, []byte(`{"model":"","x":1}`)); got != "" {
		t.Fatalf("ModelOf of an empty model = %q", got)
	}
}
