package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
func peek(body []byte) (model string, ms span, stream bool, err error) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return "", span{}, false, ErrBadBody
	}
	i++
	seenModel, seenStream := false, false
	for {
		i = skipSpace(body, i)
		if i >= len(body) {
			return "", span{}, false, ErrBadBody
		}
		if body[i] == '}' {
			return model, ms, stream, nil
		}
		if body[i] == ',' {
			i = skipSpace(body, i+1)
		}
		if i >= len(body) || body[i] != '"' {
			return "", span{}, false, ErrBadBody
		}
		kEnd, err := skipString(body, i)
		if err != nil {
			return "", span{}, false, err
		}
		key := body[i+1 : kEnd-1]
		i = skipSpace(body, kEnd)
		if i >= len(body) || body[i] != ':' {
			return "", span{}, false, ErrBadBody
		}
		vStart := skipSpace(body, i+1)
		vEnd, err := skipValue(body, vStart)
		if err != nil {
			return "", span{}, false, err
		}
		switch string(key) {
		case "model":
			seenModel = true
			if body[vStart] != '"' {
				return "", span{}, false, fmt.Errorf("%w: \"model\" must be a string", ErrBadBody)
			}
			ms = span{vStart, vEnd}
			model, err = unquote(body[vStart:vEnd])
			if err != nil {
				return "", span{}, false, err
			}
		case "stream":
			seenStream = true
			switch string(body[vStart:vEnd]) {
			case "true":
				stream = true
			case "false", "null":
				stream = false
			default:
				return "", span{}, false, fmt.Errorf("%w: \"stream\" must be a boolean", ErrBadBody)
			}
		}
		i = vEnd
		if seenModel && seenStream {
			// Both found: the rest is the backend's to read.
			return model, ms, stream, nil
		}
		i = skipSpace(body, i)
		if i < len(body) && body[i] != ',' && body[i] != '}' {
			return "", span{}, false, ErrBadBody
		}
	}
}

func unquote(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
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
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		j := bytes.IndexAny(b[i:], "\"\\")
		if j < 0 {
			return 0, fmt.Errorf("%w: unterminated string", ErrBadBody)
		}
		i += j
		if b[i] == '"' {
			return i + 1, nil
		}
		i += 2 // backslash and the escaped byte
		if i > len(b) {
			return 0, fmt.Errorf("%w: unterminated string", ErrBadBody)
		}
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
