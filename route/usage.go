package route

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/switchover-gw/switchover/translate"
)

// Usage is the tokens an answer says it used, as the client got it:
// Prompt includes Cached (the prompt tokens the provider's cache served),
// Completion includes Reasoning. Known is false when the answer said
// nothing (an error, a stream that ended before its usage, a backend that
// does not report it). Model is the model the answer names. Estimated is
// true when the answer reported nothing and the pool's TokenCounter
// counted the request and what was answered instead (Known is then true).
type Usage struct {
	Known, Estimated                      bool
	Prompt, Completion, Cached, Reasoning int64
	Model                                 string
}

// usageBody is every shape of "usage" the client formats carry: OpenAI
// chat and completions (prompt_tokens, completion_tokens, their
// details), embeddings (prompt_tokens), the Responses API (input_tokens,
// output_tokens, their details) and Anthropic's Messages (input_tokens,
// output_tokens, cache reads and writes).
type usageBody struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// usage reads b as format f's usage object.
func (b *usageBody) usage(f translate.Format) Usage {
	switch f {
	case translate.Anthropic:
		// Anthropic's input_tokens leave out the cache's reads and writes.
		cached := b.CacheReadInputTokens
		return Usage{Known: true, Prompt: b.InputTokens + cached + b.CacheCreationInputTokens, Completion: b.OutputTokens, Cached: cached}
	case translate.Responses:
		return Usage{Known: true, Prompt: b.InputTokens, Completion: b.OutputTokens,
			Cached: b.InputTokensDetails.CachedTokens, Reasoning: b.OutputTokensDetails.ReasoningTokens}
	}
	return Usage{Known: true, Prompt: b.PromptTokens, Completion: b.CompletionTokens,
		Cached: b.PromptTokensDetails.CachedTokens, Reasoning: b.CompletionTokensDetails.ReasoningTokens}
}

// answerUsage reads the usage of a plain answer in the client's format f.
func answerUsage(f translate.Format, body []byte) Usage {
	return answerUsageKnown(f, body, "")
}

// answerUsageKnown is answerUsage that takes known, when the answer's
// model is that string (the backend's last, as a rule), instead of
// making a string of its bytes.
func answerUsageKnown(f translate.Format, body []byte, known string) Usage {
	if f == translate.Gemini {
		return geminiUsage(body)
	}
	if !bytes.Contains(body, []byte(`"usage"`)) {
		return Usage{}
	}
	model, usage, ok := peekUsage(body)
	if !ok {
		return decodeUsage(f, body) // keys with escapes, or not an object: the decoder decides
	}
	if !usage.ok() || body[usage.start] != '{' {
		return Usage{}
	}
	var ub usageBody
	if obj := body[usage.start:usage.end]; !scanUsage(obj, &ub) {
		var ok bool
		if ub, ok = decodeUsageObject(obj); !ok {
			return Usage{}
		}
	}
	u := ub.usage(f)
	if model.ok() && body[model.start] == '"' {
		if raw := body[model.start+1 : model.end-1]; known != "" && string(raw) == known && bytes.IndexByte(raw, '\\') < 0 {
			u.Model = known
		} else {
			u.Model, _ = unquote(body[model.start:model.end])
		}
	}
	return u
}

// scanUsage reads obj, a usage object, into ub as json.Unmarshal would,
// without reflection or allocation, when it can say for sure: obj is
// valid JSON (ScanJSON), every key is free of escapes and, unless it
// is one of usageBody's names exactly, matches none of them in another
// case, and every value of a field is an integer an int64 holds or null
// (for the details, an object of those, or null). Otherwise it reports
// false, with ub partly set, and the decoder decides.
func scanUsage(obj []byte, ub *usageBody) bool {
	if _, err := ScanJSON(obj); err != nil {
		return false
	}
	return usageMembers(obj, func(key, v []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return scanInt(v, &ub.PromptTokens)
		case "completion_tokens":
			return scanInt(v, &ub.CompletionTokens)
		case "input_tokens":
			return scanInt(v, &ub.InputTokens)
		case "output_tokens":
			return scanInt(v, &ub.OutputTokens)
		case "cache_read_input_tokens":
			return scanInt(v, &ub.CacheReadInputTokens)
		case "cache_creation_input_tokens":
			return scanInt(v, &ub.CacheCreationInputTokens)
		case "prompt_tokens_details":
			return scanDetail(v, "cached_tokens", &ub.PromptTokensDetails.CachedTokens)
		case "completion_tokens_details":
			return scanDetail(v, "reasoning_tokens", &ub.CompletionTokensDetails.ReasoningTokens)
		case "input_tokens_details":
			return scanDetail(v, "cached_tokens", &ub.InputTokensDetails.CachedTokens)
		case "output_tokens_details":
			return scanDetail(v, "reasoning_tokens", &ub.OutputTokensDetails.ReasoningTokens)
		}
		return !foldsToAny(key, usageNames)
	})
}

// decodeUsageObject is scanUsage by the decoder, for what scanUsage
// cannot read (its own function, so that answerUsage's usageBody stays
// on the stack).
func decodeUsageObject(obj []byte) (usageBody, bool) {
	var ub usageBody
	err := json.Unmarshal(obj, &ub)
	return ub, err == nil
}

// usageNames are usageBody's JSON names.
var usageNames = []string{"prompt_tokens", "completion_tokens", "input_tokens", "output_tokens",
	"cache_read_input_tokens", "cache_creation_input_tokens", "prompt_tokens_details",
	"completion_tokens_details", "input_tokens_details", "output_tokens_details"}

// scanDetail reads v, a details object (or null), whose one field is
// name, into dst, as scanUsage does.
func scanDetail(v []byte, name string, dst *int64) bool {
	if string(v) == "null" {
		return true
	}
	if v[0] != '{' {
		return false
	}
	return usageMembers(v, func(key, v []byte) bool {
		if string(key) == name {
			return scanInt(v, dst)
		}
		return !foldsToAny(key, []string{name})
	})
}

// scanInt reads v, a JSON integer an int64 holds, into dst; null leaves
// dst as it is, as the decoder does. Anything else reports false.
func scanInt(v []byte, dst *int64) bool {
	if string(v) == "null" {
		return true
	}
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// foldsToAny reports whether key could name one of names for the
// decoder, which matches names case-insensitively: it does, or it has a
// byte outside ASCII (the decoder folds some of those to ASCII letters)
// or an escape.
func foldsToAny(key []byte, names []string) bool {
	for _, c := range key {
		if c >= 0x80 || c == '\\' {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// usageMembers calls fn with each member's key (as its bytes, without the
// quotes) and value of obj, a valid JSON object, until fn reports
// false; it reports whether none did.
func usageMembers(obj []byte, fn func(key, v []byte) bool) bool {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		kEnd, err := skipString(obj, i)
		if err != nil {
			return false
		}
		key := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd)
		vStart := skipSpace(obj, i+1) // past the colon
		vEnd, err := skipValue(obj, vStart)
		if err != nil {
			return false
		}
		if !fn(key, obj[vStart:vEnd]) {
			return false
		}
		i = skipSpace(obj, vEnd)
	}
	return true
}

// reportsUsage reports whether raw, a plain answer in the backend's
// format native, says what it used: a translation into Anthropic's
// format always carries a usage object, zeros when the source had none.
func reportsUsage(native translate.Format, raw []byte) bool {
	if native == translate.Gemini {
		return bytes.Contains(raw, []byte(`"usageMetadata"`))
	}
	return answerUsage(native, raw).Known
}

// decodeUsage is answerUsage by encoding/json over the whole body: slower,
// and what peekUsage must agree with.
func decodeUsage(f translate.Format, body []byte) Usage {
	var a struct {
		Model string     `json:"model"`
		Usage *usageBody `json:"usage"`
	}
	if json.Unmarshal(body, &a) != nil || a.Usage == nil {
		return Usage{}
	}
	u := a.Usage.usage(f)
	u.Model = a.Model
	return u
}

// peekUsage finds the top-level "model" and "usage" values of a JSON
// object without decoding the rest (the choices, the text), the last of
// each as a decoder keeps. ok is false when it cannot say for sure: not
// an object, or a key with escapes.
func peekUsage(body []byte) (model, usage span, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return span{}, span{}, false
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(body, i)
		if i >= len(body) {
			return span{}, span{}, false
		}
		if body[i] == '}' {
			return model, usage, true
		}
		if !first {
			if body[i] != ',' {
				return span{}, span{}, false
			}
			i = skipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return span{}, span{}, false
		}
		kEnd, err := skipString(body, i)
		if err != nil {
			return span{}, span{}, false
		}
		key := body[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return span{}, span{}, false
		}
		i = skipSpace(body, kEnd)
		if i >= len(body) || body[i] != ':' {
			return span{}, span{}, false
		}
		vStart := skipSpace(body, i+1)
		vEnd, err := skipValue(body, vStart)
		if err != nil {
			return span{}, span{}, false
		}
		switch {
		case string(key) == "model":
			model = span{vStart, vEnd}
		case string(key) == "usage":
			usage = span{vStart, vEnd}
		case len(key) == 5 && (bytes.EqualFold(key, []byte("model")) || bytes.EqualFold(key, []byte("usage"))):
			return span{}, span{}, false // Go's decoder matches case-insensitively: let it decide
		}
		i = vEnd
	}
}

// usageReader reads the usage of a stream in the client's format f as it
// passes, into u: OpenAI's usage chunk, Anthropic's message_start and
// message_delta, the Responses API's response.completed. With strip, the
// OpenAI usage chunk (no choices, only usage) is taken out: the gateway
// asked for it, the caller did not. While u is not known, the text
// members of the stream's events are kept in keep (nil: none).
//
// With guessed, the stream is one the gateway translated into Anthropic's
// format, whose message_start carries the gateway's own estimate of the
// input tokens (see streamConverter): it is taken as Estimated, and the
// text is still kept, until a message_delta brings the upstream's counts
// (its input_tokens); without them it stays an estimate, for estimateUse
// to count again.
func usageReader(r io.Reader, f translate.Format, u *Usage, strip, guessed bool, keep *said) *lineReader {
	data := []byte("data:")
	return &lineReader{r: r, fn: func(line []byte) []byte {
		if keep != nil && (!u.Known || u.Estimated) && bytes.HasPrefix(line, data) {
			keep.add(line)
		}
		if f == translate.Gemini {
			// Each chunk's usageMetadata counts the answer so far: the
			// last one says the whole answer's.
			if bytes.HasPrefix(line, data) && bytes.Contains(line, []byte(`"usageMetadata"`)) {
				if got := geminiUsage(bytes.TrimSpace(line[len(data):])); got.Known {
					*u = got
				}
			}
			return line
		}
		if !bytes.HasPrefix(line, data) || !bytes.Contains(line, []byte(`"usage"`)) {
			return line
		}
		payload := bytes.TrimSpace(line[len(data):])
		switch f {
		case translate.Anthropic:
			var ev struct {
				Type    string     `json:"type"`
				Usage   *usageBody `json:"usage"`
				Message struct {
					Model string     `json:"model"`
					Usage *usageBody `json:"usage"`
				} `json:"message"`
			}
			if json.Unmarshal(payload, &ev) != nil {
				return line
			}
			switch {
			case ev.Type == "message_start" && ev.Message.Usage != nil:
				got := ev.Message.Usage.usage(f)
				u.Known, u.Estimated, u.Prompt, u.Cached, u.Model = true, guessed, got.Prompt, got.Cached, ev.Message.Model
				u.Completion = max(u.Completion, got.Completion)
			case ev.Type == "message_delta" && ev.Usage != nil:
				if guessed && !bytes.Contains(payload, []byte(`"input_tokens"`)) {
					// The upstream reported nothing: the translation's
					// zero output is not a count.
					return line
				}
				// Cumulative: the last one says the whole answer's.
				u.Known, u.Estimated, u.Completion = true, false, ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 || guessed {
					u.Prompt = ev.Usage.InputTokens + ev.Usage.CacheReadInputTokens + ev.Usage.CacheCreationInputTokens
				}
				if guessed {
					u.Cached = ev.Usage.CacheReadInputTokens
				}
			}
		case translate.Responses:
			var ev struct {
				Type     string `json:"type"`
				Response struct {
					Model string     `json:"model"`
					Usage *usageBody `json:"usage"`
				} `json:"response"`
			}
			if json.Unmarshal(payload, &ev) == nil && ev.Response.Usage != nil && (ev.Type == "response.completed" || ev.Type == "response.incomplete") {
				*u = ev.Response.Usage.usage(f)
				u.Model = ev.Response.Model
			}
		default:
			var ch struct {
				Model   string            `json:"model"`
				Choices []json.RawMessage `json:"choices"`
				Usage   *usageBody        `json:"usage"`
			}
			if json.Unmarshal(payload, &ch) != nil || ch.Usage == nil {
				return line
			}
			*u = ch.Usage.usage(f)
			u.Model = ch.Model
			if strip && len(ch.Choices) == 0 {
				return line[:0]
			}
		}
		return line
	}}
}

// asksUsage reports whether an OpenAI-format streaming body asks for the
// usage chunk itself (stream_options.include_usage).
func asksUsage(body []byte) bool {
	if !bytes.Contains(body, []byte(`"include_usage"`)) {
		return false
	}
	var b struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	return json.Unmarshal(body, &b) == nil && b.StreamOptions.IncludeUsage
}

// withUsageAsked returns an OpenAI-format streaming body that asks for
// the usage chunk, and whether it changed body: one that sets
// stream_options itself is left as it is.
func withUsageAsked(body []byte) ([]byte, bool) {
	if bytes.Contains(body, []byte(`"stream_options"`)) {
		return body, false
	}
	i := bytes.IndexByte(body, '{')
	if i < 0 {
		return body, false
	}
	const opt = `"stream_options":{"include_usage":true}`
	out := make([]byte, 0, len(body)+len(opt)+1)
	out = append(out, body[:i+1]...)
	out = append(out, opt...)
	if rest := bytes.TrimLeft(body[i+1:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[i+1:]...), true
}

// geminiUsage reads the usageMetadata (and modelVersion) of a Gemini
// GenerateContentResponse: thoughts are completion tokens, counted apart
// as reasoning, as GeminiResponseToOpenAI maps them.
func geminiUsage(body []byte) Usage {
	if !bytes.Contains(body, []byte(`"usageMetadata"`)) {
		return Usage{}
	}
	var r struct {
		ModelVersion  string `json:"modelVersion"`
		UsageMetadata *struct {
			Prompt     int64 `json:"promptTokenCount"`
			Candidates int64 `json:"candidatesTokenCount"`
			Thoughts   int64 `json:"thoughtsTokenCount"`
			Cached     int64 `json:"cachedContentTokenCount"`
		} `json:"usageMetadata"`
	}
	if json.Unmarshal(body, &r) != nil || r.UsageMetadata == nil {
		return Usage{}
	}
	m := r.UsageMetadata
	return Usage{Known: true, Prompt: m.Prompt, Completion: m.Candidates + m.Thoughts, Cached: m.Cached, Reasoning: m.Thoughts, Model: r.ModelVersion}
}
