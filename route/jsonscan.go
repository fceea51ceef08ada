package route

import (
	"bytes"
	"fmt"
)

// The limits a JSON request body must keep to. A body is checked against
// them by ScanJSON, in one pass over its bytes that allocates nothing,
// before anything decodes it: a body that breaks one is refused (400)
// before the gateway builds any of it in memory. They are far above any
// real request, so that they only ever stop a hostile one.
const (
	// MaxJSONDepth bounds the nesting of objects and arrays. A deep tool
	// schema nests a few dozen levels.
	MaxJSONDepth = 128
	// MaxJSONMessages bounds the elements of a body's top-level
	// "messages" array (a chat call, Anthropic's Messages, count_tokens).
	MaxJSONMessages = 100_000
	// MaxJSONInputItems bounds the elements of a body's top-level "input"
	// array (a Responses call's input items, embeddings' inputs).
	MaxJSONInputItems = 100_000
	// MaxJSONTools bounds the elements of a body's top-level "tools"
	// array. OpenAI takes at most 128 tools.
	MaxJSONTools = 10_000
	// MaxJSONContentParts bounds the elements of any "content" array below
	// the top level (the parts of one message or input item, the blocks
	// of a tool result), and of Anthropic's top-level "system" array.
	MaxJSONContentParts = 10_000
)

// JSONLimitError is a JSON body that breaks one of the limits above: it
// nests deeper than MaxJSONDepth, or one of its arrays is longer than its
// bound. It wraps ErrBadBody.
type JSONLimitError struct {
	// Limit names what is bounded: "nesting depth", "messages", "input
	// items", "tools" or "content parts".
	Limit string
	// Max is the bound.
	Max int
}

func (e *JSONLimitError) Error() string {
	if e.Limit == "nesting depth" {
		return fmt.Sprintf("the request body nests objects and arrays deeper than the gateway's limit of %d levels", e.Max)
	}
	return fmt.Sprintf("the request body has more %s in one array than the gateway's limit of %d", e.Limit, e.Max)
}

func (e *JSONLimitError) Unwrap() error { return ErrBadBody }

// arrayLimit is the bound that applies to one open array.
type arrayLimit uint8

const (
	noLimit arrayLimit = iota
	limitMessages
	limitInput
	limitTools
	limitContent
)

func (l arrayLimit) err() error {
	switch l {
	case limitMessages:
		return &JSONLimitError{Limit: "messages", Max: MaxJSONMessages}
	case limitInput:
		return &JSONLimitError{Limit: "input items", Max: MaxJSONInputItems}
	case limitTools:
		return &JSONLimitError{Limit: "tools", Max: MaxJSONTools}
	}
	return &JSONLimitError{Limit: "content parts", Max: MaxJSONContentParts}
}

func (l arrayLimit) max() int32 {
	switch l {
	case limitMessages:
		return MaxJSONMessages
	case limitInput:
		return MaxJSONInputItems
	case limitTools:
		return MaxJSONTools
	case limitContent:
		return MaxJSONContentParts
	}
	return 1<<31 - 1
}

var (
	keyMessages = []byte("messages")
	keyInput    = []byte("input")
	keyTools    = []byte("tools")
	keyContent  = []byte("content")
	keySystem   = []byte("system")
)

// limitOf is the bound on an array that is the value of the member key
// (raw, quotes included) of an object at depth (1: the top-level object).
// Keys are compared as a decoder reads them: escapes decoded, and in any
// case, since Go's decoder matches struct fields so.
func limitOf(raw []byte, depth int) arrayLimit {
	key := raw[1 : len(raw)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		if len(raw) > 64 {
			return noLimit // no escaped form of these names is that long
		}
		s, err := unquote(raw)
		if err != nil {
			return noLimit
		}
		key = []byte(s)
	}
	switch {
	case depth == 1 && bytes.EqualFold(key, keyMessages):
		return limitMessages
	case depth == 1 && bytes.EqualFold(key, keyInput):
		return limitInput
	case depth == 1 && bytes.EqualFold(key, keyTools):
		return limitTools
	case depth == 1 && bytes.EqualFold(key, keySystem), depth > 1 && bytes.EqualFold(key, keyContent):
		return limitContent
	}
	return noLimit
}

// JSONStats is what ScanJSON found in a valid body.
type JSONStats struct {
	// Values counts the body's values: objects, arrays, strings, numbers
	// and literals, at every depth (object keys are not values). What
	// decoding a body costs grows with it (see Request.DecodeMemory).
	Values int
}

// ScanJSON checks that body is one JSON value, with nothing but white
// space after it, within the limits above (MaxJSONDepth and the array
// bounds), and counts its values. It reads the bytes once and allocates
// nothing (but for an object key with escapes, which it decodes to
// compare). A body that is not JSON is ErrBadBody; one over a limit a
// *JSONLimitError.
func ScanJSON(body []byte) (JSONStats, error) {
	var s jsonScanner
	s.b = body
	err := s.scan()
	return JSONStats{Values: s.values}, err
}

// jsonScanner is ScanJSON's state: the open containers, each an object or
// an array, with the bound and the count of an array's elements.
type jsonScanner struct {
	b      []byte
	i      int
	depth  int
	values int
	obj    [MaxJSONDepth]bool
	limit  [MaxJSONDepth]arrayLimit
	count  [MaxJSONDepth]int32
}

func (s *jsonScanner) syntax(what string) error {
	if s.i >= len(s.b) {
		return fmt.Errorf("%w: it ends before its JSON value does (%s)", ErrBadBody, what)
	}
	return fmt.Errorf("%w: invalid JSON at byte %d: %s", ErrBadBody, s.i, what)
}

// scan reads the whole body: a value, then the end of its container or
// the next element, until the top-level value has ended.
func (s *jsonScanner) scan() error {
	b := s.b
	s.i = skipSpace(b, 0)
	next := noLimit // the bound on an array read next (set by its key)
	for {
		// A value.
		if s.i >= len(b) {
			return s.syntax("a value was expected")
		}
		s.values++
		switch c := b[s.i]; {
		case c == '{' || c == '[':
			if s.depth == MaxJSONDepth {
				return &JSONLimitError{Limit: "nesting depth", Max: MaxJSONDepth}
			}
			d := s.depth
			s.obj[d], s.limit[d], s.count[d] = c == '{', next, 0
			s.depth++
			s.i = skipSpace(b, s.i+1)
			if c == '[' {
				if s.i < len(b) && b[s.i] == ']' {
					s.i++
					s.depth-- // the empty array: its end
					break
				}
				s.count[d] = 1
				next = noLimit
				continue // its first element
			}
			if s.i < len(b) && b[s.i] == '}' {
				s.i++
				s.depth--
				break
			}
			var err error
			if next, err = s.key(); err != nil {
				return err
			}
			continue
		case c == '"':
			end, err := s.str(s.i)
			if err != nil {
				return err
			}
			s.i = end
		case c == '-' || c >= '0' && c <= '9':
			if err := s.number(); err != nil {
				return err
			}
		case c == 't', c == 'f', c == 'n':
			if err := s.literal(); err != nil {
				return err
			}
		default:
			return s.syntax("a value was expected")
		}
		// The end of a value: the next element, member or the end of
		// its container, until the top-level value has ended.
		var err error
		if next, err = s.after(); err != nil || s.depth < 0 {
			return err
		}
	}
}

// after reads what follows a value that has ended: a comma and the next
// element or member's key, or the end of containers. It returns with the
// next value due, or with s.depth -1 once the top-level value has ended.
func (s *jsonScanner) after() (arrayLimit, error) {
	b := s.b
	for {
		s.i = skipSpace(b, s.i)
		if s.depth == 0 {
			if s.i < len(b) {
				return noLimit, fmt.Errorf("%w: there is data after the JSON value, at byte %d", ErrBadBody, s.i)
			}
			s.depth = -1
			return noLimit, nil
		}
		if s.i >= len(b) {
			return noLimit, s.syntax("a comma or the end of an object or array was expected")
		}
		d := s.depth - 1
		c := b[s.i]
		switch {
		case c == ',':
			s.i = skipSpace(b, s.i+1)
			if s.obj[d] {
				return s.key()
			}
			s.count[d]++
			if s.count[d] > s.limit[d].max() {
				return noLimit, s.limit[d].err()
			}
			return noLimit, nil
		case c == '}' && s.obj[d], c == ']' && !s.obj[d]:
			s.i++
			s.depth--
		default:
			return noLimit, s.syntax("a comma or the end of an object or array was expected")
		}
	}
}

// key reads an object member's key and its colon, and returns the bound
// on the member's value should it be an array.
func (s *jsonScanner) key() (arrayLimit, error) {
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return noLimit, s.syntax("an object key was expected")
	}
	end, err := s.str(s.i)
	if err != nil {
		return noLimit, err
	}
	l := limitOf(b[s.i:end], s.depth)
	s.i = skipSpace(b, end)
	if s.i >= len(b) || b[s.i] != ':' {
		return noLimit, s.syntax("a colon was expected")
	}
	s.i = skipSpace(b, s.i+1)
	return l, nil
}

// str returns the index past the string that starts at b[i] == '"',
// checking its escapes and that it holds no control character.
func (s *jsonScanner) str(i int) (int, error) {
	b := s.b
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(b) {
				break
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					s.i = i
					return 0, s.syntax("a \\u escape needs four hex digits")
				}
				i += 4
			default:
				s.i = i
				return 0, s.syntax("an invalid escape in a string")
			}
		case c < 0x20:
			s.i = i
			return 0, s.syntax("a control character in a string")
		}
	}
	s.i = len(b)
	return 0, s.syntax("a string is not closed")
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// number reads a JSON number at s.i.
func (s *jsonScanner) number() error {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		s.i = i
		return s.syntax("a number was expected")
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			s.i = j
			return s.syntax("a digit was expected after the decimal point")
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			s.i = j
			return s.syntax("a digit was expected in the exponent")
		}
		i = j
	}
	s.i = i
	return nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literal reads true, false or null at s.i.
func (s *jsonScanner) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return nil
		}
	}
	return s.syntax("true, false or null was expected")
}
