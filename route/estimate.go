package route

import (
	"bytes"
	"encoding/json"
	"sync/atomic"

	"github.com/switchover-gw/switchover/translate"
)

// TokenCounter counts tokens for answers that report no usage (a server
// that sends no usage chunk, an older Azure API version, a stream cut
// short): Pool.Tokens. Implementations must be safe for concurrent use;
// package tokens has one with OpenAI's encodings.
type TokenCounter interface {
	// PromptTokens estimates the input tokens of body, a request in
	// format f, for model.
	PromptTokens(model string, f translate.Format, body []byte) int
	// TextTokens counts the tokens of text for model.
	TextTokens(model, text string) int
}

// maxSaid bounds the answer text an attempt keeps for its estimate
// (1 MiB); past it the rest is counted at 4 bytes a token.
const maxSaid = 1 << 20

// said is the text of an answer, kept while its usage is unknown, as the
// JSON string contents (still escaped) of its text members.
type said struct {
	b    []byte
	over int // bytes past maxSaid, not kept
}

// textKeys are the members whose string values are answer text, in every
// client format's stream or answer: chat content, refusal and tool call
// arguments, completions' and Anthropic's text, Anthropic's partial_json
// and thinking, the Responses API's delta, reasoning_content.
var textKeys = [][]byte{[]byte(`"content"`), []byte(`"text"`), []byte(`"arguments"`), []byte(`"refusal"`),
	[]byte(`"partial_json"`), []byte(`"thinking"`), []byte(`"delta"`), []byte(`"reasoning_content"`)}

// add keeps the text members' string values of line (one SSE line or a
// whole answer).
func (s *said) add(line []byte) {
	for _, k := range textKeys {
		rest := line
		for {
			i := bytes.Index(rest, k)
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			v := bytes.TrimLeft(rest, " \t")
			if len(v) == 0 || v[0] != ':' {
				continue
			}
			v = bytes.TrimLeft(v[1:], " \t")
			if len(v) == 0 || v[0] != '"' {
				continue
			}
			end := stringEnd(v)
			s.keep(v[1:end])
			rest = v[end:]
		}
	}
}

// stringEnd returns the index of the closing quote of the JSON string v
// starts (v[0] is its opening quote), or len(v) when it is not closed.
func stringEnd(v []byte) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(v)
}

func (s *said) keep(v []byte) {
	if room := maxSaid - len(s.b); len(v) > room {
		s.over += len(v) - max(room, 0)
		v = v[:max(room, 0)]
	}
	s.b = append(s.b, v...)
}

// text returns the kept text, unescaped.
func (s *said) text() string {
	q := make([]byte, 0, len(s.b)+2)
	q = append(append(append(q, '"'), s.b...), '"')
	var out string
	if json.Unmarshal(q, &out) != nil {
		return string(s.b)
	}
	return out
}

// countsTokens reports whether the attempt's answer is one whose tokens
// are counted: chat, completions, Responses (and their compaction) and
// Messages.
func (at *attempt) countsTokens() bool {
	o, r := &at.o, at.r
	return o.Op.IsChat() || o.Op == Completions || o.Op == Responses || o.Op == ResponsesCompact ||
		r.Op.IsChat() || r.Op == Responses
}

// estimateUse sets the attempt's usage, when its answer reported none,
// from the pool's TokenCounter: the client's request body counted as the
// prompt, what was answered (s) as the completion, marked Estimated.
// A usage already Estimated (the input_tokens of a stream translated into
// Anthropic's format, see usageReader) is counted again. Without a
// TokenCounter the usage stays unknown, or as estimated.
func (at *attempt) estimateUse(client translate.Format, s *said) {
	tc := at.p.Tokens
	if tc == nil || at.use.Known && !at.use.Estimated {
		return
	}
	model := at.b.Model()
	if model == "" {
		model = at.o.Model
	}
	if model == "" {
		model = at.r.Model
	}
	u := Usage{Known: true, Estimated: true, Model: model}
	u.Prompt = int64(tc.PromptTokens(model, client, at.r.Body))
	if s != nil {
		u.Completion = int64(tc.TextTokens(model, s.text())) + int64((s.over+3)/4)
	}
	at.use = u
}

// estimatingBody is the estimate of a stream's usage: it keeps the
// answer's text while the usage is unknown (see usageReader), and
// estimates the usage once the stream ends (end: the stream's line
// reader calls it at its end or error, or when it is closed).
type estimatingBody struct {
	at     *attempt
	client translate.Format
	said   said
	done   atomic.Bool
}

func (e *estimatingBody) end() {
	if e.done.CompareAndSwap(false, true) {
		e.at.estimateUse(e.client, &e.said)
	}
}
