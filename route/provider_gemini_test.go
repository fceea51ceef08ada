package route

import (
	"net/http"
	"testing"
)

// TestGeminiRequest: generateContent under the API version (v1beta
// unless set), streamGenerateContent with alt=sse for a stream, the key
// in x-goog-api-key.
func TestGeminiRequest(t *testing.T) {
	base := parseURL(t, "https://generativelanguage.googleapis.com/")
	tests := []struct {
		name    string
		p       *Gemini
		o       Outgoing
		wantURL string
		want    http.Header
	}{
		{"plain", &Gemini{BaseURL: base, APIKey: "gk-1"},
			Outgoing{Op: ChatCompletions, Model: "gemini-2.5-pro", Body: []byte(`{}`)},
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent",
			http.Header{"X-Goog-Api-Key": {"gk-1"}}},
		{"stream", &Gemini{BaseURL: base, APIKey: "gk-1"},
			Outgoing{Op: ChatCompletions, Model: "gemini-2.5-pro", Stream: true, Body: []byte(`{}`)},
			"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
			http.Header{"X-Goog-Api-Key": {"gk-1"}}},
		{"version", &Gemini{BaseURL: base, APIVersion: "v1"},
			Outgoing{Op: ChatCompletions, Model: "gemini-2.5-flash", Body: []byte(`{}`)},
			"https://generativelanguage.googleapis.com/v1/models/gemini-2.5-flash:generateContent",
			http.Header{"X-Goog-Api-Key": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRequest(t, sent(t, tc.p, &tc.o), http.MethodPost, tc.wantURL, tc.want)
		})
	}
}

// TestGeminiSupports: chat completions only.
func TestGeminiSupports(t *testing.T) {
	for op, want := range map[Operation]bool{ChatCompletions: true, Messages: false, Embeddings: false, Responses: false} {
		if got := (&Gemini{}).supports(op); got != want {
			t.Errorf("supports(%s) = %v, want %v", op, got, want)
		}
	}
}
