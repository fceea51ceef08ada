package tokens

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// TestCountMatchesOpenAI: counts of strings whose encodings the
// tokenizer's own tests give (tiktoken-go/tokenizer v0.10.0,
// tokenizer_test.go, from OpenAI's tiktoken): o200k_base for gpt-4o,
// cl100k_base for gpt-4.
func TestCountMatchesOpenAI(t *testing.T) {
	var c Counter
	tests := []struct {
		model, text string
		want        int
	}{
		{"gpt-4o", "hello world", 2},          // 24912, 2375
		{"gpt-4o-mini", "hello   world", 3},   // 24912, 256, 2375
		{"gpt-4o", "supercalifragilistic", 6}, // 17789, 5842, 366, 17764, 311, 6207
		{"gpt-5", "We know what we are, but know not what we may be.", 14},
		{"gpt-4", "'RE", 1},                  // 95253
		{"gpt-4", "supercalifragilistic", 7}, // 13066, 3035, 278, 333, 4193, 321, 4633
		{"gpt-35-turbo", "hello  world", 3},  // 15339, 220, 1917
		{"o3-mini", "'RE", 2},                // 6, 1099
	}
	for _, tt := range tests {
		if got := c.Count(tt.model, tt.text); got != tt.want {
			t.Errorf("Count(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
}

func TestEncodingFor(t *testing.T) {
	tests := map[string]Encoding{
		"gpt-4o-mini-2024-07-18": O200k, "gpt-4.1": O200k, "o1": O200k, "o4-mini": O200k, "gpt-5-nano": O200k,
		"azure/gpt-4o": O200k, "gpt-4-turbo": Cl100k, "gpt-35-turbo": Cl100k, "text-embedding-3-small": Cl100k,
		"claude-sonnet-4-5": Claude, "gemini-2.5-flash": Gemini, "my-llama": O200k, "": O200k,
	}
	for m, want := range tests {
		if got := EncodingFor(m); got != want {
			t.Errorf("EncodingFor(%q) = %s, want %s", m, got, want)
		}
	}
}

// TestRatios: Claude at 3.5 characters a token, Gemini at 4, rounded up,
// by characters, not bytes.
func TestRatios(t *testing.T) {
	var c Counter
	if got := c.Count("claude-haiku-4-5", "1234567"); got != 2 {
		t.Errorf("claude 7 chars = %d, want 2", got)
	}
	if got := c.Count("claude-haiku-4-5", "12345678"); got != 3 {
		t.Errorf("claude 8 chars = %d, want 3", got)
	}
	if got := c.Count("gemini-2.5-pro", "ééééé"); got != 2 {
		t.Errorf("gemini 5 chars (10 bytes) = %d, want 2", got)
	}
}

// TestPromptImageIsNotText: a base64 image counts its flat figure, not
// its bytes as text (bytes/4 counted 25,000 tokens for 100 KB).
func TestPromptImageIsNotText(t *testing.T) {
	var c Counter
	img := make([]byte, 100<<10)
	for i := range img {
		img[i] = 'A'
	}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"hello world"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + string(img) + `"}}]}]}`)
	got := c.PromptTokens("gpt-4o", translate.OpenAI, body)
	if want := 2 + 4 + 1600; got != want {
		t.Errorf("PromptTokens = %d, want %d (2 text + 4 per message + 1600 the image)", got, want)
	}
	an := []byte(`{"model":"claude","max_tokens":5,"messages":[{"role":"user","content":"1234567"}]}`)
	if got := c.PromptTokens("claude-sonnet-4-5", translate.Anthropic, an); got != 2+4 {
		t.Errorf("Anthropic PromptTokens = %d, want 6", got)
	}
}

// BenchmarkCount counts a 4 KB English answer with o200k_base: what an
// answer without usage costs when it ends.
func BenchmarkCount(b *testing.B) {
	var c Counter
	text := strings.Repeat("We know what we are, but know not what we may be. ", 80)
	c.Count("gpt-4o", "warm")
	b.ReportAllocs()
	for b.Loop() {
		c.Count("gpt-4o", text)
	}
}
