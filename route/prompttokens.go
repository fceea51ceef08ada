package route

import (
	"bytes"

	"github.com/switchover-gw/switchover/translate"
)

// The token costs of what is not text in a request, by the providers'
// documented rules. An image's size is not read (that would mean decoding
// it), so each counts as a 1024x1024 image; its base64 bytes are never
// counted as text.
const (
	// OpenAIImageTokens: OpenAI counts a high- or auto-detail image as 85
	// tokens plus 170 for each 512-pixel tile of it scaled to fit 768
	// pixels on its short side: 765 for 1024x1024.
	OpenAIImageTokens = 765
	// OpenAILowImageTokens: a low-detail image is 85 tokens whatever its
	// size.
	OpenAILowImageTokens = 85
	// ClaudeImageTokens: Anthropic counts an image as width*height/750
	// tokens (about 1,600 at most, past which it is scaled down): 1,398
	// for 1024x1024.
	ClaudeImageTokens = 1398
	// GeminiImageTokens: Google counts 258 tokens for each 768x768 tile
	// (one for an image within 384 pixels): 1,032 for 1024x1024.
	GeminiImageTokens = 1032
	// AudioTokens: an audio part, as a minute at Google's documented 32
	// tokens a second (its length is not read).
	AudioTokens = 1920
	// DocumentTokens: a file or document part (a PDF), as Anthropic's
	// upper figure for a page, 3,000 tokens.
	DocumentTokens = 3000
	// ItemTokens: each message or input item, for its role and
	// separators.
	ItemTokens = 4
)

// maxScanDepth bounds how deep promptScan reads nested values; below it a
// value counts nothing. ScanJSON has refused deeper bodies already.
const maxScanDepth = MaxJSONDepth

// promptScan estimates a JSON request body's prompt tokens in one pass
// over its bytes, building nothing: the text of its messages, system,
// instructions, input and prompt (every string but ids, roles, types,
// URLs and base64 data), tool calls' arguments and tool definitions and
// schemas as their JSON, by textTally; images, audio and files counted
// by the flat costs above; ItemTokens a message or input item; a number
// in input or prompt (a list of token ids) a token. Not safe for
// concurrent use.
type promptScan struct {
	b    []byte
	text textTally
	// What is not text.
	images, lowImages, audio, files, items, numbers int64
	// maxOut is the largest of max_tokens, max_completion_tokens and
	// max_output_tokens, whole numbers of at most 15 digits.
	maxOut int64
}

// digitsValue is the value of v, a JSON number, when it is a whole
// number of at most 15 digits; else 0.
func digitsValue(v []byte) int64 {
	if len(v) == 0 || len(v) > 15 {
		return 0
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// keyKind is how promptScan counts a member's value.
type keyKind uint8

const (
	kindText   keyKind = iota // strings are text
	kindSkip                  // strings are not text (ids, roles, URLs...)
	kindType                  // a part's type: an image, audio or file counts its cost
	kindDetail                // an image's detail: "low" is cheaper
	kindData                  // base64 data, or a text document's text
	kindJSON                  // an object counted as its JSON (tool_use input, schemas)
	kindTokens                // text, and numbers are token ids
)

// topKind is the kind of a top-level member of a request, and whether
// it is counted at all.
func topKind(key []byte) (keyKind, bool) {
	switch string(key) {
	case "messages", "system", "instructions", "contents", "suffix", "systemInstruction", "generateContentRequest":
		return kindText, true
	case "input", "prompt":
		return kindTokens, true
	case "tools", "functions", "response_format", "text", "tool_choice":
		return kindJSON, true
	}
	return kindSkip, false
}

// memberKind is the kind of a nested member's value.
func memberKind(key []byte) keyKind {
	switch string(key) {
	case "type":
		return kindType
	case "detail":
		return kindDetail
	case "data", "file_data":
		return kindData
	case "input", "parameters", "input_schema", "schema":
		return kindJSON
	case "role", "id", "tool_call_id", "call_id", "tool_use_id", "media_type", "mime_type", "url", "image_url",
		"file_id", "file_url", "format", "cache_control", "mimeType", "thoughtSignature", "signature", "status", "model", "filename",
		"encrypted_content", "citations", "voice", "redacted_thinking",
		"thinking": // Anthropic does not count earlier turns' thinking
		return kindSkip
	}
	return kindText
}

// scan reads the body's top-level members. A body that is not a JSON
// object counts nothing.
func (s *promptScan) scan() {
	b := s.b
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return
		}
		if !first {
			if b[i] != ',' {
				return
			}
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return
		}
		kEnd, err := skipString(b, i)
		if err != nil {
			return
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipSpace(b, i+1)
		kind, counted := topKind(key)
		if !counted {
			start := i
			if i, err = skipValue(b, i); err != nil {
				return
			}
			switch string(key) {
			case "max_tokens", "max_completion_tokens", "max_output_tokens":
				s.maxOut = max(s.maxOut, digitsValue(b[start:i]))
			}
			continue
		}
		if i < len(b) && b[i] == '[' && (string(key) == "messages" || string(key) == "input" || string(key) == "contents") {
			i = s.list(i)
		} else {
			i = s.value(i, kind, 1)
		}
		if i < 0 {
			return
		}
	}
}

// list reads a top-level list of messages or input items at b[i] ==
// '[': each object in it is an item. It returns the index past the list,
// or -1 when the body ends first.
func (s *promptScan) list(i int) int {
	b := s.b
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		if b[i] == '{' {
			s.items++
		}
		if i = s.value(i, kindTokens, 2); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if i >= len(b) {
		return -1
	}
	return i + 1
}

// value counts the value at b[i], the value of a member of kind k at
// depth, and returns the index past it, or -1 when the body ends first
// or is not JSON.
func (s *promptScan) value(i int, k keyKind, depth int) int {
	b := s.b
	if i >= len(b) {
		return -1
	}
	if depth > maxScanDepth {
		end, err := skipValue(b, i)
		if err != nil {
			return -1
		}
		return end
	}
	c := b[i]
	switch {
	case c == '"':
		end, err := skipString(b, i)
		if err != nil {
			return -1
		}
		s.str(b[i+1:end-1], k)
		return end
	case c == '{':
		if k == kindJSON {
			end, err := skipValue(b, i)
			if err != nil {
				return -1
			}
			s.text.add(b[i:end])
			return end
		}
		return s.object(i, depth)
	case c == '[':
		i = skipSpace(b, i+1)
		for i < len(b) && b[i] != ']' {
			if i = s.value(i, k, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		if i >= len(b) {
			return -1
		}
		return i + 1
	}
	end, err := skipValue(b, i)
	if err != nil {
		return -1
	}
	if k == kindTokens && (c == '-' || c >= '0' && c <= '9') {
		s.numbers++ // a token id
	}
	return end
}

// object counts the members of the object at b[i] == '{'.
func (s *promptScan) object(i, depth int) int {
	b := s.b
	i++
	for first := true; ; first = false {
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if !first {
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		kEnd, err := skipString(b, i)
		if err != nil {
			return -1
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = s.value(skipSpace(b, i+1), memberKind(key), depth+1); i < 0 {
			return -1
		}
	}
}

// str counts a string's contents v (escapes as written), the value of a
// member of kind k.
func (s *promptScan) str(v []byte, k keyKind) {
	switch k {
	case kindSkip:
	case kindType:
		switch string(v) {
		case "image_url", "image", "input_image":
			s.images++
		case "input_audio", "audio":
			s.audio++
		case "file", "document", "input_file":
			s.files++
		}
	case kindDetail:
		if string(v) == "low" {
			s.lowImages++
		}
	case kindData:
		if !looksBinary(v, 256) {
			s.text.add(v) // a text document
		}
	default:
		if !looksBinary(v, 1024) {
			s.text.add(v)
		}
	}
}

// looksBinary reports whether v, a string's contents, is base64 data
// rather than text: it is at least n bytes long, and its first n after a
// data URL's header are all of base64's alphabets (backslashes included,
// for encoders that write "/" as "\/"). Text has spaces, line breaks or
// punctuation sooner; text in a script without spaces (Chinese) has
// bytes past ASCII.
func looksBinary(v []byte, n int) bool {
	if bytes.HasPrefix(v, []byte("data:")) {
		if i := bytes.IndexByte(v[:min(len(v), 256)], ','); i >= 0 {
			v = v[i+1:]
		}
	}
	if len(v) < n {
		return false
	}
	for _, c := range v[:n] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '+' || c == '/' || c == '=' || c == '-' || c == '_' || c == '\\') {
			return false
		}
	}
	return true
}

// tokens is the estimate for encoding e: the text, and each image, audio
// and file part at e's provider's cost.
func (s *promptScan) tokens(e TokenEncoding) int64 {
	n := s.text.tokens(e) + s.items*ItemTokens + s.numbers + s.audio*AudioTokens + s.files*DocumentTokens
	low := min(s.lowImages, s.images)
	switch e {
	case EncodingClaude:
		n += s.images * ClaudeImageTokens
	case EncodingGemini:
		n += (s.images-low)*GeminiImageTokens + low*258
	default:
		n += (s.images-low)*OpenAIImageTokens + low*OpenAILowImageTokens
	}
	return n
}

// PromptTokens is the request's prompt estimate, before it is sent, as
// the providers count their rate limits and prices: computed once from
// the body by promptScan (text by EstimateText's rules, images, audio and
// files by their documented flat costs, never their bytes), for the
// encoding of the model the client named, or of its format when the name
// says none (Anthropic's for /v1/messages, else o200k_base). A multipart
// body (an audio file to transcribe, an image to edit) counts its one
// file. The gateway's admission (a key's tpm, a budget's price) and
// the pool's quota router read it. Not safe for concurrent use until
// its first call has returned.
func (r *Request) PromptTokens() int64 {
	r.estimate()
	return r.prompt
}

// estimate computes the request's estimates once: the prompt, the most
// it may generate, and their sum.
func (r *Request) estimate() {
	if r.tokensDone {
		return
	}
	r.tokensDone = true
	if r.ContentType != "" {
		switch r.Op {
		case AudioTranscriptions, AudioTranslations:
			r.prompt = AudioTokens
		case ImagesEdits, ImagesVariations:
			r.prompt = OpenAIImageTokens
		}
	} else {
		e, known := encodingOf(r.Model)
		if !known && r.format() == translate.Anthropic {
			e = EncodingClaude
		}
		s := promptScan{b: r.Body, text: textTally{w: weightsOf(e)}}
		s.scan()
		r.prompt, r.maxOut = s.tokens(e), s.maxOut
	}
	r.tokens = min(r.prompt+r.maxOut, 1<<40)
}
