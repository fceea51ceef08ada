package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrBadBody is returned for a request body that is not a JSON object.
var ErrBadBody = errors.New("request body is not a JSON object")

// span is a byte range [start, end) of a JSON value within a body.
type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

// peek reads the top-level "model" and "stream" members of a JSON object
// without decoding the rest of it: routing needs only these two, and the
// body is passed upstream as it came. It returns the span of the model value
// (empty when absent), the model string, and the stream flag.
//
// peek reads every top-level key, so that it agrees with the decoder
// upstream: a body whose "model" or "stream" appears twice is rejected, as
// is one with a key that names them in another case ("Model", "ſtream"),
// compared after decoding escapes. JSON decoders keep the last of
// duplicate keys, and Go's matches struct fields case-insensitively, so the
// upstream would read a model other than the one the gateway routed and
// rewrote.
func peek(body []byte) (model string, ms span, stream bool, err error) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return "", span{}, false, ErrBadBody
	}
	i++
	seenModel, seenStream := false, false
	for first := true; ; first = false {
		i = skipSpace(body, i)
		if i >= len(body) {
			return "", span{}, false, ErrBadBody
		}
		if body[i] == '}' {
			return model, ms, stream, nil
		}
		if !first {
			if body[i] != ',' {
				return "", span{}, false, ErrBadBody
			}
			i = skipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return "", span{}, false, ErrBadBody
		}
		kEnd, err := skipString(body, i)
		if err != nil {
			return "", span{}, false, err
		}
		key, err := peekKey(body[i:kEnd])
		if err != nil {
			return "", span{}, false, err
		}
		i = skipSpace(body, kEnd)
		if i >= len(body) || body[i] != ':' {
			return "", span{}, false, ErrBadBody
		}
		vStart := skipSpace(body, i+1)
		vEnd, err := skipValue(body, vStart)
		if err != nil {
			return "", span{}, false, err
		}
		switch {
		case key == "model":
			if seenModel {
				return "", span{}, false, fmt.Errorf("%w: \"model\" appears more than once", ErrBadBody)
			}
			seenModel = true
			if body[vStart] != '"' {
				return "", span{}, false, fmt.Errorf("%w: \"model\" must be a string", ErrBadBody)
			}
			ms = span{vStart, vEnd}
			model, err = unquote(body[vStart:vEnd])
			if err != nil {
				return "", span{}, false, err
			}
		case key == "stream":
			if seenStream {
				return "", span{}, false, fmt.Errorf("%w: \"stream\" appears more than once", ErrBadBody)
			}
			seenStream = true
			switch string(body[vStart:vEnd]) {
			case "true":
				stream = true
			case "false", "null":
				stream = false
			default:
				return "", span{}, false, fmt.Errorf("%w: \"stream\" must be a boolean", ErrBadBody)
			}
		case strings.EqualFold(key, "model"), strings.EqualFold(key, "stream"):
			return "", span{}, false, fmt.Errorf("%w: the key %q is ambiguous; write it in lower case", ErrBadBody, key)
		}
		i = vEnd
	}
}

// maxFoldKey is the longest key, in bytes, that strings.EqualFold can
// find equal to "model" or "stream": six runes of at most three bytes.
const maxFoldKey = 18

// peekKey is unquote for an object key that peek only compares with
// "model" and "stream": a key without escapes that is neither, nor equal
// to either but for case, is returned as "" without building the string.
func peekKey(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return unquote(raw)
	}
	inner := raw[1 : len(raw)-1]
	switch {
	case string(inner) == "model":
		return "model", nil
	case string(inner) == "stream":
		return "stream", nil
	case len(inner) <= maxFoldKey && (strings.EqualFold(string(inner), "model") || strings.EqualFold(string(inner), "stream")):
		return string(inner), nil
	}
	return "", nil
}

// unquote decodes the JSON string raw (quotes included) as encoding/json
// does: escapes decoded, invalid UTF-8 replaced.
func unquote(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadBody, err)
	}
	return s, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
// It looks for quotes alone (bytes.IndexByte, much the faster search over
// a long string such as an image's base64), and takes one as the end
// when an even number of backslashes comes before it.
func skipString(b []byte, i int) (int, error) {
	start := i + 1
	i = start
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, fmt.Errorf("%w: unterminated string", ErrBadBody)
		}
		i += j
		k := i
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1, nil
		}
		i++ // an escaped quote
	}
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrBadBody
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			j := bytes.IndexAny(b[i:], `"{}[]`)
			if j < 0 {
				break
			}
			i += j
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, fmt.Errorf("%w: unterminated object or array", ErrBadBody)
	default:
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == start {
					return 0, ErrBadBody
				}
				return i, nil
			}
			i++
		}
		return 0, ErrBadBody
	}
}

// withModel returns body with its top-level "model" member set to model.
// ms is the span of the existing value, or empty to insert the member.
func withModel(body []byte, ms span, model string) []byte {
	q, _ := json.Marshal(model) // a string always marshals
	if ms.ok() {
		out := make([]byte, 0, len(body)-(ms.end-ms.start)+len(q))
		out = append(out, body[:ms.start]...)
		out = append(out, q...)
		return append(out, body[ms.end:]...)
	}
	open := bytes.IndexByte(body, '{') // peek has checked there is one
	rest := body[open+1:]
	out := make([]byte, 0, len(body)+len(q)+10)
	out = append(out, body[:open+1]...)
	out = append(out, `"model":`...)
	out = append(out, q...)
	if len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// Member returns the value of the top-level member name of r's JSON body
// as it is written, and whether the body has it (false for a multipart
// body, or one that is not a JSON object). The gateway checks with it
// what the caller's API requires before routing, such as the max_tokens
// of Anthropic's messages.
func (r *Request) Member(name string) ([]byte, bool) {
	if r.ContentType != "" {
		return nil, false
	}
	var val []byte
	found := false
	ok := eachMember(r.Body, func(k, v []byte) {
		if !found && keyIs(k, name) {
			val, found = v, true
		}
	})
	return val, ok && found
}
