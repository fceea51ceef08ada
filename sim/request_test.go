package sim

import (
	"errors"
	"testing"
)

func TestTokenEstimate(t *testing.T) {
	tests := []struct {
		name       string
		op         operation
		body       string
		defaultMax int
		wantPrompt int64
		wantCost   int64
		wantMax    int
	}{
		{"chat string, default max", opChat, `{"messages":[{"role":"user","content":"12345678"}]}`, 16, 2, 18, 0},
		{"chat rounds chars up", opChat, `{"messages":[{"role":"user","content":"123456789"}]}`, 16, 3, 19, 0},
		{"chat sums every message", opChat, `{"messages":[{"role":"system","content":"abcd"},{"role":"user","content":"efgh"}]}`, 16, 2, 18, 0},
		{"chat max_tokens", opChat, `{"messages":[{"role":"user","content":"abcd"}],"max_tokens":100}`, 16, 1, 101, 100},
		{"chat max_completion_tokens wins", opChat, `{"messages":[{"role":"user","content":"abcd"}],"max_tokens":100,"max_completion_tokens":7}`, 16, 1, 8, 7},
		{"chat deployment default", opChat, `{"messages":[{"role":"user","content":"abcd"}]}`, 50, 1, 51, 0},
		{"chat content parts", opChat, `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"efgh"}]}]}`, 16, 2, 18, 0},
		{"chat null content", opChat, `{"messages":[{"role":"assistant","content":null},{"role":"user","content":"abcd"}]}`, 16, 1, 17, 0},
		{"chat counts characters not bytes", opChat, `{"messages":[{"role":"user","content":"ééééé"}]}`, 16, 2, 18, 0},
		{"completions string", opCompletions, `{"prompt":"abcdefgh","max_tokens":4}`, 16, 2, 6, 4},
		{"completions strings", opCompletions, `{"prompt":["abcd","abcde"]}`, 16, 3, 19, 0},
		{"completions token ids", opCompletions, `{"prompt":[1,2,3]}`, 16, 3, 19, 0},
		{"embeddings string", opEmbeddings, `{"input":"abcdefghi"}`, 16, 3, 3, 0},
		{"embeddings strings", opEmbeddings, `{"input":["abcd","efgh"]}`, 16, 2, 2, 0},
		{"embeddings token arrays", opEmbeddings, `{"input":[[1,2],[3,4,5]]}`, 16, 5, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRequest(tc.op, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.promptTokens != tc.wantPrompt || r.cost(tc.defaultMax) != tc.wantCost || r.maxTokens != tc.wantMax {
				t.Errorf("prompt %d cost %d max %d, want %d %d %d", r.promptTokens, r.cost(tc.defaultMax), r.maxTokens, tc.wantPrompt, tc.wantCost, tc.wantMax)
			}
		})
	}
}

func TestParseRequestStreamFlags(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		stream     bool
		withUsage  bool
		wantPrompt string
	}{
		{"plain", `{"messages":[{"role":"user","content":"a"}]}`, false, false, "a\n"},
		{"stream", `{"messages":[{"role":"user","content":"a"}],"stream":true}`, true, false, "a\n"},
		{"stream with usage", `{"messages":[{"role":"user","content":"a"}],"stream":true,"stream_options":{"include_usage":true}}`, true, true, "a\n"},
		{"usage ignored without stream", `{"messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}}`, false, false, "a\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRequest(opChat, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.stream != tc.stream || r.includeUsage != tc.withUsage || r.prompt != tc.wantPrompt {
				t.Errorf("stream %v usage %v prompt %q", r.stream, r.includeUsage, r.prompt)
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		op   operation
		body string
	}{
		{"empty", opChat, ``},
		{"not json", opChat, `hello`},
		{"no messages", opChat, `{"messages":[]}`},
		{"bad content", opChat, `{"messages":[{"role":"user","content":42}]}`},
		{"zero max_tokens", opChat, `{"messages":[{"role":"user","content":"a"}],"max_tokens":0}`},
		{"negative max_completion_tokens", opChat, `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":-1}`},
		{"no prompt", opCompletions, `{}`},
		{"no input", opEmbeddings, `{}`},
		{"empty input list", opEmbeddings, `{"input":[]}`},
		{"bad input", opEmbeddings, `{"input":{"a":1}}`},
		{"bad encoding", opEmbeddings, `{"input":"a","encoding_format":"hex"}`},
		{"bad dimensions", opEmbeddings, `{"input":"a","dimensions":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseRequest(tc.op, []byte(tc.body)); !errors.Is(err, errBadRequest) {
				t.Errorf("err = %v, want errBadRequest", err)
			}
		})
	}
}
