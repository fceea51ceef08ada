package route

import (
	"net/http"
	"testing"
)

// TestAnthropicRequest: messages and token counts under /v1, the key
// and the anthropic-version header (2023-06-01 unless set).
func TestAnthropicRequest(t *testing.T) {
	base := parseURL(t, "https://api.anthropic.com")
	tests := []struct {
		name    string
		p       *Anthropic
		o       Outgoing
		wantURL string
		want    http.Header
	}{
		{"messages", &Anthropic{BaseURL: base, APIKey: "ak-1"},
			Outgoing{Op: Messages, Model: "claude", Body: []byte(`{}`)},
			"https://api.anthropic.com/v1/messages",
			http.Header{"X-Api-Key": {"ak-1"}, "Anthropic-Version": {"2023-06-01"}}},
		{"a translated chat is a message", &Anthropic{BaseURL: base, APIKey: "ak-1"},
			Outgoing{Op: ChatCompletions, Model: "claude", Body: []byte(`{}`)},
			"https://api.anthropic.com/v1/messages",
			http.Header{"X-Api-Key": {"ak-1"}}},
		{"count tokens", &Anthropic{BaseURL: base, APIKey: "ak-1", Version: "2024-01-01"},
			Outgoing{Op: CountTokens, Model: "claude", Body: []byte(`{}`)},
			"https://api.anthropic.com/v1/messages/count_tokens",
			http.Header{"Anthropic-Version": {"2024-01-01"}}},
		{"no key sends none", &Anthropic{BaseURL: base},
			Outgoing{Op: Messages, Model: "claude", Body: []byte(`{}`)},
			"https://api.anthropic.com/v1/messages",
			http.Header{"X-Api-Key": nil}},
		{"object call", &Anthropic{BaseURL: base, APIKey: "ak-1"},
			Outgoing{Op: Messages, Model: "claude", Method: http.MethodGet, Path: "messages/batches/b1", RawQuery: "x=1"},
			"https://api.anthropic.com/v1/messages/batches/b1?x=1",
			http.Header{"X-Api-Key": {"ak-1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.o.Method
			if method == "" {
				method = http.MethodPost
			}
			checkRequest(t, sent(t, tc.p, &tc.o), method, tc.wantURL, tc.want)
		})
	}
}

// TestAnthropicSupports: messages and token counts only.
func TestAnthropicSupports(t *testing.T) {
	for op, want := range map[Operation]bool{Messages: true, CountTokens: true, ChatCompletions: false, Embeddings: false, Responses: false} {
		if got := (&Anthropic{}).supports(op); got != want {
			t.Errorf("supports(%s) = %v, want %v", op, got, want)
		}
	}
}
