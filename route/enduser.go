package route

import "github.com/switchover-gw/switchover/translate"

// EndUser is the end user the request is made for, as its body names it:
// in the OpenAI format the top-level "user" (chat, completions,
// embeddings, images, Responses), or, without one, "safety_identifier",
// which OpenAI's API introduced to replace it; in the Anthropic format
// (Messages) metadata.user_id. "prompt_cache_key" is not an end user: it
// buckets requests for the provider's cache and may be shared by many.
// It is "" when the body names none, the value is not a string, or the
// body is not JSON (a multipart one). It reads the members it needs
// without decoding the rest of the body.
func (r *Request) EndUser() string {
	if r.ContentType != "" {
		return ""
	}
	if r.Format == translate.Anthropic {
		var meta [1][]byte
		if !topMembers(r.Body, []string{"metadata"}, meta[:]) || len(meta[0]) == 0 || meta[0][0] != '{' {
			return ""
		}
		var id [1][]byte
		topMembers(meta[0], []string{"user_id"}, id[:])
		return stringValue(id[0])
	}
	var v [2][]byte
	topMembers(r.Body, []string{"user", "safety_identifier"}, v[:])
	if u := stringValue(v[0]); u != "" {
		return u
	}
	return stringValue(v[1])
}

// stringValue is the raw JSON value v decoded when it is a string; ""
// otherwise.
func stringValue(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, err := unquote(v)
	if err != nil {
		return ""
	}
	return s
}

// topMembers reads the raw values of the top-level members names of the
// JSON object obj into vals (nil for one it lacks), in one pass: of each,
// the last one, as JSON decoders keep, with keys compared as written (a
// key spelt with escapes is not found). It reports whether obj is an
// object it could read to its end; if not, vals are left nil.
func topMembers(obj []byte, names []string, vals [][]byte) bool {
	clear(vals)
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return i < len(obj)
		}
		ok := true
		if !first {
			ok = obj[i] == ','
			i = skipSpace(obj, i+1)
		}
		var kEnd, vStart, vEnd int
		var err error
		if ok && i < len(obj) && obj[i] == '"' {
			kEnd, err = skipString(obj, i)
			if err == nil {
				j := skipSpace(obj, kEnd)
				ok = j < len(obj) && obj[j] == ':'
				vStart = skipSpace(obj, j+1)
				vEnd, err = skipValue(obj, vStart)
			}
		} else {
			ok = false
		}
		if !ok || err != nil {
			clear(vals)
			return false
		}
		key := obj[i+1 : kEnd-1]
		for n, name := range names {
			if string(key) == name {
				vals[n] = obj[vStart:vEnd]
			}
		}
		i = vEnd
	}
}
