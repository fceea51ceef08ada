package load

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestResponsesRequestBody(t *testing.T) {
	r := Request{API: APIResponses, Model: "m", Prompt: "hi", MaxTokens: 7, Stream: true}
	var b map[string]any
	if err := json.Unmarshal(r.Body(), &b); err != nil {
		t.Fatal(err)
	}
	if b["input"] != "hi" || b["max_output_tokens"] != float64(7) || b["stream"] != true || b["messages"] != nil || r.Path() != "responses" {
		t.Fatalf("body %v, path %q", b, r.Path())
	}
	if (Request{}).Path() != "chat/completions" {
		t.Fatal("chat path")
	}
}

func TestReadResponses(t *testing.T) {
	streams := []struct {
		name, in string
		ok       bool
	}{
		{"completed", "event: response.created\ndata: {}\n\nevent: response.output_text.delta\ndata: {}\n\nevent: response.completed\ndata: {}\n\n", true},
		{"incomplete", "event: response.created\ndata: {}\n\nevent: response.incomplete\ndata: {}\n\n", true},
		{"cut off", "event: response.created\ndata: {}\n\nevent: response.output_text.delta\ndata: {}\n\n", false},
		{"error event", "event: response.created\ndata: {}\n\nevent: error\ndata: {}\n\nevent: response.completed\ndata: {}\n\n", false},
		{"failed", "event: response.failed\ndata: {}\n\n", false},
	}
	for _, tt := range streams {
		first := 0
		ok, _ := readResponsesStream(strings.NewReader(tt.in), func() { first++ })
		if ok != tt.ok || first != 1 {
			t.Errorf("%s: ok %v (first event calls %d), want %v", tt.name, ok, first, tt.ok)
		}
	}
	plain := []struct {
		name, in string
		ok       bool
	}{
		{"completed", `{"object":"response","status":"completed","output":[{"type":"message"}]}`, true},
		{"no output", `{"object":"response","status":"completed","output":[]}`, false},
		{"failed", `{"object":"response","status":"failed","output":[{}]}`, false},
	}
	for _, tt := range plain {
		if ok, _ := readCompletion(strings.NewReader(tt.in)); ok != tt.ok {
			t.Errorf("%s: ok %v, want %v", tt.name, ok, tt.ok)
		}
	}
}
