// Package tokens counts tokens offline, where an answer reports none or
// before a request is sent: OpenAI models by their own BPE encodings
// (o200k_base, cl100k_base; vocabularies embedded in the binary, nothing
// fetched), Anthropic and Gemini models by their providers' documented
// characters per token. It implements route.TokenCounter.
package tokens

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// Characters per token where no tokenizer of the provider's is published
// (route's, which estimates requests before they are sent).
const (
	ClaudeCharsPerToken = route.ClaudeCharsPerToken
	GeminiCharsPerToken = route.GeminiCharsPerToken
	// maxText bounds the text one call tokenizes (1 MiB); past it the
	// rest is counted at 4 bytes a token, as the tokenizer's cost grows
	// with the text.
	maxText = 1 << 20
)

// Encoding is how a model's text is counted.
type Encoding = route.TokenEncoding

// The encodings.
const (
	O200k  = route.EncodingO200k  // gpt-4o, gpt-4.1, o-series, gpt-5 and unknown models
	Cl100k = route.EncodingCl100k // gpt-4, gpt-3.5-turbo, text-embedding-3 and ada-002
	Claude = route.EncodingClaude // ClaudeCharsPerToken
	Gemini = route.EncodingGemini // GeminiCharsPerToken
)

// EncodingFor returns the encoding used for model (route.EncodingFor):
// by name, case insensitively, anywhere in it (so "azure/gpt-4o-mini" and
// a deployment named "prod-claude-sonnet" are recognised). A model it
// does not know is counted with o200k_base.
func EncodingFor(model string) Encoding { return route.EncodingFor(model) }

// Counter counts tokens. Its zero value is ready; the vocabularies are
// loaded at the first count that needs them (tens of milliseconds, some
// megabytes of memory). Safe for concurrent use.
//
// A piece of a prompt (PromptTokens: a message's text, the tool
// definitions) of memoMin bytes or more is tokenized once while the
// Counter remembers it (memoSize texts at least): requests send the same
// system prompt, tool definitions and earlier turns of a conversation
// again and again, and the BPE tokenizer takes about 1.3 ms and 9,600
// allocations for 8 KiB of English. Answers (TextTokens) are not
// remembered: each is new.
type Counter struct {
	once          [2]sync.Once
	o200k, cl100k tokenizer.Codec
	memo          memo
	tokenized     atomic.Int64 // texts the tokenizer counted, for tests
}

// Remembered counts: a text of memoMin bytes or more, and memoSize of them
// in each of two generations (the older dropped when the newer is full; a
// count found in the older moves to the newer), some 100 bytes each.
const (
	memoMin  = 256
	memoSize = 4096
)

// memo is the counts a Counter remembers, by encoding, length and hash of
// the text (a 64-bit hash with a seed of the process's own: two texts of
// one length are taken for each other about once in 10^19 pairs).
type memo struct {
	seedOnce sync.Once
	seed     maphash.Seed
	mu       sync.Mutex
	cur, old map[memoKey]int
}

type memoKey struct {
	e    Encoding
	n    int
	hash uint64
}

func (m *memo) key(e Encoding, text string) memoKey {
	m.seedOnce.Do(func() { m.seed = maphash.MakeSeed() })
	return memoKey{e, len(text), maphash.String(m.seed, text)}
}

func (m *memo) get(k memoKey) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.cur[k]; ok {
		return n, true
	}
	n, ok := m.old[k]
	if ok {
		m.putLocked(k, n)
	}
	return n, ok
}

func (m *memo) put(k memoKey, n int) {
	m.mu.Lock()
	m.putLocked(k, n)
	m.mu.Unlock()
}

func (m *memo) putLocked(k memoKey, n int) {
	if m.cur == nil {
		m.cur = make(map[memoKey]int)
	}
	if len(m.cur) >= memoSize {
		m.old, m.cur = m.cur, make(map[memoKey]int, memoSize)
	}
	m.cur[k] = n
}

var _ route.TokenCounter = (*Counter)(nil)

func (c *Counter) codec(e Encoding) tokenizer.Codec {
	if e == Cl100k {
		c.once[1].Do(func() { c.cl100k, _ = tokenizer.Get(tokenizer.Cl100kBase) })
		return c.cl100k
	}
	c.once[0].Do(func() { c.o200k, _ = tokenizer.Get(tokenizer.O200kBase) })
	return c.o200k
}

// Count returns the tokens of text for model.
func (c *Counter) Count(model, text string) int {
	return c.count(EncodingFor(model), text)
}

func (c *Counter) count(e Encoding, text string) int {
	if text == "" {
		return 0
	}
	switch e {
	case Claude:
		return ratio(text, ClaudeCharsPerToken)
	case Gemini:
		return ratio(text, GeminiCharsPerToken)
	}
	return c.tokenize(e, text)
}

// countPrompt is count for a piece of a prompt, remembered when long:
// prompts repeat, answers do not.
func (c *Counter) countPrompt(e Encoding, text string) int {
	if len(text) < memoMin || e == Claude || e == Gemini {
		return c.count(e, text)
	}
	k := c.memo.key(e, text)
	if n, ok := c.memo.get(k); ok {
		return n
	}
	n := c.tokenize(e, text)
	c.memo.put(k, n)
	return n
}

// tokenize counts text with e's BPE tokenizer.
func (c *Counter) tokenize(e Encoding, text string) int {
	c.tokenized.Add(1)
	rest := 0
	if len(text) > maxText {
		rest = (len(text) - maxText + 3) / 4
		text = text[:maxText]
	}
	n, err := c.codec(e).Count(text)
	if err != nil {
		return (len(text)+3)/4 + rest
	}
	return n + rest
}

// ratio is text's characters at perToken, rounded up.
func ratio(text string, perToken float64) int {
	chars := utf8.RuneCountInString(text)
	n := int(float64(chars) / perToken)
	if float64(n)*perToken < float64(chars) {
		n++
	}
	return n
}

// TextTokens implements route.TokenCounter.
func (c *Counter) TextTokens(model, text string) int { return c.Count(model, text) }

// PromptTokens implements route.TokenCounter: a chat completions or
// Messages body's text (messages, system, tool calls and results, tool
// definitions) counted for model, images and documents at
// translate's documented flat costs (1,600 tokens an image, 3,000 a
// binary document), 4 tokens a message. Another body (Responses,
// completions, embeddings) or one that does not parse is counted as its
// whole text.
func (c *Counter) PromptTokens(model string, f translate.Format, body []byte) int {
	e := EncodingFor(model)
	count := func(s string) int { return c.countPrompt(e, s) }
	var n int
	var err error
	switch f {
	case translate.Anthropic:
		n, err = translate.CountAnthropicTokens(body, count)
	case translate.OpenAI:
		n, err = translate.CountOpenAITokens(body, count)
	default:
		err = errNotChat
	}
	if err != nil {
		return count(string(body))
	}
	return n
}

// errNotChat: the body is not one of the chat formats counted by message.
var errNotChat = errors.New("not a chat body")
