package route

import (
	"net/http"
	"testing"
)

// TestOpenAIRequest: operations under the API root, the Bearer key and
// the account headers; an object call with its method and query.
func TestOpenAIRequest(t *testing.T) {
	base := parseURL(t, "https://api.openai.com/v1/")
	tests := []struct {
		name    string
		p       *OpenAI
		o       Outgoing
		method  string
		wantURL string
		want    http.Header
	}{
		{"chat with key and account", &OpenAI{BaseURL: base, APIKey: "sk-1", Organization: "org-1", Project: "proj-1"},
			Outgoing{Op: ChatCompletions, Model: "gpt-4o", Body: []byte(`{}`)}, http.MethodPost,
			"https://api.openai.com/v1/chat/completions",
			http.Header{"Authorization": {"Bearer sk-1"}, "Openai-Organization": {"org-1"}, "Openai-Project": {"proj-1"}}},
		{"no key sends none", &OpenAI{BaseURL: base},
			Outgoing{Op: Embeddings, Model: "e", Body: []byte(`{}`)}, http.MethodPost,
			"https://api.openai.com/v1/embeddings",
			http.Header{"Authorization": nil, "Openai-Organization": nil, "Openai-Project": nil}},
		{"object call", &OpenAI{BaseURL: base, APIKey: "sk-1"},
			Outgoing{Op: Responses, Model: "m", Method: http.MethodGet, Path: "responses/resp_1", RawQuery: "include=x"}, http.MethodGet,
			"https://api.openai.com/v1/responses/resp_1?include=x",
			http.Header{"Authorization": {"Bearer sk-1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRequest(t, sent(t, tc.p, &tc.o), tc.method, tc.wantURL, tc.want)
		})
	}
}

// TestOpenAISupports: no Anthropic operations; Responses unless the
// server has none.
func TestOpenAISupports(t *testing.T) {
	tests := []struct {
		name string
		p    *OpenAI
		op   Operation
		want bool
	}{
		{"chat", &OpenAI{}, ChatCompletions, true},
		{"messages", &OpenAI{}, Messages, false},
		{"count tokens", &OpenAI{}, CountTokens, false},
		{"responses", &OpenAI{}, Responses, true},
		{"no responses", &OpenAI{NoResponses: true}, Responses, false},
		{"listed unsupported", &OpenAI{Unsupported: []Operation{Embeddings}}, Embeddings, false},
		{"chat beside a listed one", &OpenAI{Unsupported: []Operation{Embeddings}}, ChatCompletions, true},
	}
	for _, tc := range tests {
		if got := tc.p.supports(tc.op); got != tc.want {
			t.Errorf("%s: supports(%s) = %v, want %v", tc.name, tc.op, got, tc.want)
		}
	}
}
