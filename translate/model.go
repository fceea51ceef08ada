package translate

import (
	"bytes"
	"encoding/json"
)

// ModelOf returns the first non-empty model a response names: the top-level "model" of an
// OpenAI or Anthropic body (or of the "message" in Anthropic's message_start
// event), Gemini's "modelVersion" (also in the JSON list that
// streamGenerateContent without alt=sse sends). prefix may be a truncated
// start of a body or of one SSE event's data, or the event text itself
// ("data: {…"): ModelOf reads as far as the bytes go and does not need valid
// JSON. It returns "" when it finds no model.
func ModelOf(from Format, prefix []byte) string {
	// The common case, cheaply: the first non-empty "model" string by
	// bytes. Inside JSON strings quotes are escaped, so a match is a key.
	// OpenAI responses carry no object before their model in which a
	// "model" key could hide (tool arguments are strings), and Anthropic
	// puts model before content (message_start nests it, as wanted).
	// Gemini's modelVersion comes last, after candidates whose function
	// call args are objects, so Gemini takes the token walk below.
	if from == OpenAI || from == Anthropic {
		if m := searchString(prefix, "model"); m != "" {
			return m
		}
	}
	start := bytes.IndexAny(prefix, "{[")
	if start < 0 {
		return ""
	}
	body := prefix[start:]
	var model string
	syntaxErr := walk(body, func(stack []frame, tok json.Token) bool {
		s, ok := tok.(string)
		if !ok {
			return true
		}
		switch from {
		case OpenAI:
			ok = keysAre(stack, "model")
		case Anthropic:
			ok = keysAre(stack, "model") || keysAre(stack, "message", "model")
		case Gemini:
			ok = keysAre(stack, "modelVersion") || keysAre(stack, "", "modelVersion")
		default:
			ok = false
		}
		if ok && s != "" {
			model = s
			return false
		}
		return true
	})
	if model == "" && syntaxErr {
		key := "model"
		if from == Gemini {
			key = "modelVersion"
		}
		model = searchString(body, key)
	}
	return model
}

// searchString finds the first non-empty "key": "value" in b by bytes and
// returns the value, or "" when it is missing or cut off. Empty values (the
// first chunk of an Azure stream names no model) are passed over.
func searchString(b []byte, key string) string {
	pat := []byte(`"` + key + `"`)
	for i := 0; ; {
		j := bytes.Index(b[i:], pat)
		if j < 0 {
			return ""
		}
		k := skipWS(b, i+j+len(pat))
		i += j + len(pat)
		if k >= len(b) || b[k] != ':' {
			continue
		}
		k = skipWS(b, k+1)
		if k >= len(b) || b[k] != '"' {
			continue
		}
		end := -1
		for e := k + 1; e < len(b) && end < 0; e++ {
			switch b[e] {
			case '\\':
				e++
			case '"':
				end = e
			}
		}
		if end < 0 {
			return "" // cut off
		}
		var s string
		if json.Unmarshal(b[k:end+1], &s) != nil {
			return ""
		}
		if s != "" {
			return s
		}
		i = end + 1
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
