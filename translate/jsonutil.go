package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/fnv"
	"strconv"
)

// marshal encodes v as compact JSON without HTML escaping (model output is
// full of "<" and "&", and the escaped form only makes bodies longer).
// Every value this package marshals is built from marshalable types, so an
// error is a programming mistake; it still returns it rather than panic.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// mustMarshal is marshal for values that cannot fail (no channels, funcs or
// invalid RawMessages).
func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		panic("translate: marshal: " + err.Error())
	}
	return b
}

// isNull reports whether raw is absent or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// decodeObject decodes body into a map of its top-level members, failing when
// body is not a JSON object.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	return m, nil
}

var errNotObject = errors.New("not a JSON object")

// compactJSON returns raw compacted, or raw unchanged when it is not valid.
func compactJSON(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// shortHash is a short, stable hex digest of its parts, used to make ids that
// are deterministic (golden tests) yet unique enough within a conversation.
func shortHash(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// ---- order-preserving decoding (JSON Schema "properties" order matters to Gemini) ----

// object is a JSON object that remembers the order of its keys.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// decodeOrdered decodes raw into nil, bool, json.Number, string, []any or
// *object values.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrderedValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func decodeOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &object{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := o.vals[k]; !dup {
				o.keys = append(o.keys, k)
			}
			o.vals[k] = v
		}
		_, err := dec.Token() // '}'
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	}
	return nil, errors.New("unexpected delimiter")
}

// ---- tolerant scanning of bodies and body prefixes ----

// frame is one open container while walking a JSON document.
type frame struct {
	obj     bool   // object (true) or array
	key     string // the current member's key (objects)
	idx     int    // the current element's index (arrays)
	wantKey bool   // the next string token is a key
}

// walk tokenizes body, which may be a truncated prefix of a JSON document,
// and calls fn for every value (scalars and the opening delimiter of
// containers) with the stack of containers that holds it: stack[len-1].key
// is the value's own key when its parent is an object. It stops when fn
// returns false or at the first byte it cannot tokenize, and reports whether
// it stopped on a syntax error (as opposed to the end of input or fn).
func walk(body []byte, fn func(stack []frame, tok json.Token) bool) (syntaxErr bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []frame
	afterValue := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			_, syn := err.(*json.SyntaxError)
			return syn
		}
		n := len(stack)
		if n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				afterValue()
				continue
			}
			k, _ := tok.(string)
			stack[n-1].key = k
			stack[n-1].wantKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if !fn(stack, tok) {
					return false
				}
				stack = append(stack, frame{obj: d == '{', wantKey: d == '{'})
			case '}', ']':
				if n > 0 {
					stack = stack[:n-1]
				}
				afterValue()
			}
			continue
		}
		if !fn(stack, tok) {
			return false
		}
		afterValue()
	}
}

// keysAre reports whether the object keys along stack are exactly keys, where
// "" matches any array element.
func keysAre(stack []frame, keys ...string) bool {
	if len(stack) != len(keys) {
		return false
	}
	for i, f := range stack {
		if f.obj != (keys[i] != "") || (f.obj && f.key != keys[i]) {
			return false
		}
	}
	return true
}

func itoa(i int) string { return strconv.Itoa(i) }
