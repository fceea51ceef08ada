package models

import "testing"

// TestCanonical: one model's ids on every cloud are one canonical id.
func TestCanonical(t *testing.T) {
	tests := []struct{ id, want string }{
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},                   // Anthropic
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},    // Bedrock
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"}, // Bedrock profile
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5"}, // Vertex
		{"publishers/anthropic/models/claude-sonnet-4-5@20250929", "claude-sonnet-4-5"},
		{"anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"}, // OpenRouter
		{"models/gemini-2.5-flash", "gemini-2.5-flash"},      // Gemini
		{"gemini-2.0-flash-001", "gemini-2.0-flash-001"},     // not a date
		{"gemini-2.5-pro@default", "gemini-2.5-pro"},
		{"gpt-4o-2024-08-06", "gpt-4o"}, // OpenAI
		{"GPT-4o", "gpt-4o"},            // an Azure deployment named after it
		{"meta.llama3-3-70b-instruct-v1:0", "llama-3.3-70b-instruct"},
		{"us.meta.llama3-3-70b-instruct-v1:0", "llama-3.3-70b-instruct"},
		{"Llama-3.3-70B-Instruct", "llama-3.3-70b-instruct"}, // Foundry
		{"meta-llama/Llama-3.3-70B-Instruct-Turbo", "llama-3.3-70b-instruct-turbo"},
		{"llama-3.3-70b-versatile", "llama-3.3-70b-instruct"}, // Groq
		{"deepseek.r1-v1:0", "deepseek-r1"},
		{"DeepSeek-R1", "deepseek-r1"},
		{"deepseek-reasoner", "deepseek-r1"},
		{"my-deployment", "my-deployment"},
	}
	for _, tc := range tests {
		if got := Canonical(tc.id); got != tc.want {
			t.Errorf("Canonical(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestLookup: a known model by any of its names, an unknown one not.
func TestLookup(t *testing.T) {
	m, ok := Lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
	if !ok || m.ID != "claude-sonnet-4-5" || m.Context != 200_000 || !m.Tools || !m.Vision || !m.Thinking {
		t.Fatalf("claude on bedrock: %+v %v", m, ok)
	}
	if m, ok := Lookup("DeepSeek-R1"); !ok || m.Tools || !m.Thinking {
		t.Fatalf("deepseek-r1: %+v %v", m, ok)
	}
	if _, ok := Lookup("my-deployment"); ok {
		t.Fatal("an unknown name was known")
	}
}
