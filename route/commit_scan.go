package route

import (
	"bytes"
	"encoding/json"
)

// openAIContentScan is openAIContent read off the bytes, without decoding:
// the events before a stream's first content (Azure's
// prompt_filter_results, a role-only delta) are judged with no allocation.
// It reads what encoding/json would (keys matched regardless of case, a
// null or empty value as none) and reports ok false, for openAIContent to
// decode, where the two could differ: a key with escapes or beyond ASCII,
// or a key it reads given twice.
func openAIContentScan(data []byte) (content, ok bool) {
	if !json.Valid(data) {
		return true, true // unreadable: content, as the decoder says
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return true, true // null, or not an object: no choices
	}
	var choices, errv []byte
	ok = asciiMembers(data, func(key, v []byte) bool {
		switch {
		case bytes.EqualFold(key, []byte("choices")):
			if choices != nil {
				return false
			}
			choices = v
		case bytes.EqualFold(key, []byte("error")):
			if errv != nil {
				return false
			}
			errv = v
		}
		return true
	})
	if !ok {
		return false, false
	}
	if choices == nil || string(choices) == "null" || !emptyJSON(errv) || choices[0] != '[' {
		return true, true
	}
	undecided := false
	eachElement(choices, func(el []byte) bool {
		c, ok := choiceContent(el)
		switch {
		case !ok:
			undecided = true
		case c:
			content = true
		}
		return ok && !c // one choice with content is enough
	})
	if content {
		return true, true
	}
	return false, !undecided
}

// choiceContent is openAIContentScan for one element of choices.
func choiceContent(el []byte) (content, ok bool) {
	switch {
	case string(el) == "null":
		return false, true
	case el[0] != '{':
		return true, true // not a choice: the decoder fails
	}
	var delta, text, finish []byte
	ok = asciiMembers(el, func(key, v []byte) bool {
		var seen *[]byte
		switch {
		case bytes.EqualFold(key, []byte("delta")):
			seen = &delta
		case bytes.EqualFold(key, []byte("text")):
			seen = &text
		case bytes.EqualFold(key, []byte("finish_reason")):
			seen = &finish
		default:
			return true
		}
		if *seen != nil {
			return false
		}
		*seen = v
		return true
	})
	switch {
	case !ok:
		return false, false
	case !emptyJSON(text) || !emptyJSON(finish):
		return true, true
	case delta == nil || string(delta) == "null":
		return false, true
	case delta[0] != '{':
		return true, true // not an object: the decoder fails
	}
	var keys [8][]byte
	n := 0
	ok = asciiMembers(delta, func(key, v []byte) bool {
		for _, k := range keys[:min(n, len(keys))] {
			if bytes.Equal(k, key) {
				return false // a map keeps the last: decode
			}
		}
		if n >= len(keys) {
			return false
		}
		keys[n] = key
		n++
		if string(key) != "role" && !emptyJSON(v) {
			content = true
		}
		return true
	})
	return content, ok
}

// asciiMembers calls f with each member of the object obj (valid JSON): its
// key, without quotes, and its value. It reports false, for the decoder to
// judge, when f does for any member, or a key has escapes or a byte
// beyond ASCII (which the decoder reads otherwise than bytes.EqualFold).
func asciiMembers(obj []byte, f func(key, v []byte) bool) bool {
	ok := true
	wellFormed := eachMember(obj, func(raw, v []byte) {
		if !ok {
			return
		}
		key := raw[1 : len(raw)-1]
		for _, b := range key {
			if b == '\\' || b >= 0x80 {
				ok = false
				return
			}
		}
		ok = f(key, v)
	})
	return ok && wellFormed
}

// eachElement calls f with each element of the array arr (valid JSON),
// until f returns false.
func eachElement(arr []byte, f func(el []byte) bool) {
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end, err := skipValue(arr, i)
		if err != nil || !f(arr[i:end]) {
			return
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
}
