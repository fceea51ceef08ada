package tokens

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
// answer without usage costs when it ends (each text a new one, as
// answers are).
func BenchmarkCount(b *testing.B) {
	var c Counter
	text := strings.Repeat("We know what we are, but know not what we may be. ", 80)
	c.Count("gpt-4o", "warm")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		c.Count("gpt-4o", strconv.Itoa(i)+text)
	}
}

// BenchmarkPromptTokensOfAConversation counts the prompt of each turn of
// a conversation whose 8 KB system prompt and earlier turns are sent
// again with each (what a chat application sends): each text is
// tokenized once.
func BenchmarkPromptTokensOfAConversation(b *testing.B) {
	var c Counter
	system := strings.Repeat("You are a helpful assistant. Answer the user's questions about the weather in Paris, briefly and politely. ", 80)
	msgs := []map[string]string{{"role": "system", "content": system}}
	var bodies [][]byte
	for turn := range 10 {
		msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("Question %d: %s", turn, strings.Repeat("what about tomorrow and the day after? ", 10))})
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
		bodies = append(bodies, body)
		msgs = append(msgs, map[string]string{"role": "assistant", "content": strings.Repeat("It will be sunny with a light breeze from the west. ", 8)})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.PromptTokens("gpt-4o", translate.OpenAI, bodies[i%len(bodies)])
		i++
	}
}

func TestLongTextsAreTokenizedOnce(t *testing.T) {
	var c, fresh Counter
	text := strings.Repeat("We know what we are, but know not what we may be. ", 20)
	want := fresh.Count("gpt-4o", text)
	for range 3 {
		if got := c.countPrompt(O200k, text); got != want {
			t.Fatalf("countPrompt = %d, want %d", got, want)
		}
	}
	if n := c.tokenized.Load(); n != 1 {
		t.Errorf("a %d-byte text counted three times was tokenized %d times, want once", len(text), n)
	}
	// Another encoding is another count.
	if got, want := c.countPrompt(Cl100k, text), fresh.Count("gpt-4", text); got != want {
		t.Errorf("cl100k_base: countPrompt = %d, want %d (its own)", got, want)
	}
	// A short text, and an answer (TextTokens), are not remembered:
	// tokenized each time.
	before := c.tokenized.Load()
	c.countPrompt(O200k, "hello world")
	c.countPrompt(O200k, "hello world")
	c.TextTokens("gpt-4o", text)
	if n := c.tokenized.Load() - before; n != 3 {
		t.Errorf("a short text counted twice and a long answer once were tokenized %d times, want 3", n)
	}
	// The whole prompt, through PromptTokens: its long message is
	// remembered.
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"` + text + `"},{"role":"user","content":"hi"}]}`)
	first := c.PromptTokens("gpt-4o", translate.OpenAI, body)
	before = c.tokenized.Load()
	if again := c.PromptTokens("gpt-4o", translate.OpenAI, body); again != first || first != fresh.PromptTokens("gpt-4o", translate.OpenAI, body) {
		t.Errorf("PromptTokens %d then %d, want %d", first, again, fresh.PromptTokens("gpt-4o", translate.OpenAI, body))
	}
	if n := c.tokenized.Load() - before; n != 1 {
		t.Errorf("the same prompt again tokenized %d texts, want 1 (the short user message)", n)
	}
}

func TestRememberedCountsAreBounded(t *testing.T) {
	var c Counter
	long := func(i int) string { return fmt.Sprintf("%06d ", i) + strings.Repeat("x y ", memoMin/4) }
	for i := range 3 * memoSize {
		c.countPrompt(O200k, long(i))
	}
	c.memo.mu.Lock()
	held := len(c.memo.cur) + len(c.memo.old)
	c.memo.mu.Unlock()
	if held > 2*memoSize {
		t.Fatalf("%d counts remembered, want at most %d", held, 2*memoSize)
	}
	before := c.tokenized.Load()
	c.countPrompt(O200k, long(3*memoSize-1)) // the newest: remembered
	c.countPrompt(O200k, long(0))            // the oldest: forgotten, tokenized again
	if n := c.tokenized.Load() - before; n != 1 {
		t.Errorf("%d of the newest and the oldest text tokenized, want 1 (the oldest)", n)
	}
}

func TestRememberedCountsUnderConcurrency(t *testing.T) {
	var c, fresh Counter
	texts := make([]string, 16)
	want := make([]int, len(texts))
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("line %d of a prompt sent by many requests at once. ", i), 10)
		want[i] = fresh.Count("gpt-4o", texts[i])
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				j := (g + i) % len(texts)
				if got := c.countPrompt(O200k, texts[j]); got != want[j] {
					t.Errorf("text %d: countPrompt = %d, want %d", j, got, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.tokenized.Load(); n > int64(len(texts))*8 {
		t.Errorf("%d tokenizations of %d texts", n, len(texts))
	}
}
