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
		meta, ok := member(r.Body, "metadata")
		if !ok || len(meta) == 0 || meta[0] != '{' {
			return ""
		}
		return stringMember(meta, "user_id")
	}
	if u := stringMember(r.Body, "user"); u != "" {
		return u
	}
	return stringMember(r.Body, "safety_identifier")
}

// stringMember is the top-level member name of the JSON object obj when
// it is a string, decoded; "" otherwise.
func stringMember(obj []byte, name string) string {
	v, ok := member(obj, name)
	if !ok || len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, err := unquote(v)
	if err != nil {
		return ""
	}
	return s
}

// member returns the raw value of the top-level member name of the JSON
// object obj, and whether it has one: the last one, as JSON decoders
// keep, with keys compared as written (a key spelt with escapes is not
// found). A body that is not an object has none.
func member(obj []byte, name string) (val []byte, found bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	for first := true; ; first = false {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return val, found
		}
		if !first {
			if obj[i] != ',' {
				return nil, false
			}
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		kEnd, err := skipString(obj, i)
		if err != nil {
			return nil, false
		}
		key := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		vStart := skipSpace(obj, i+1)
		vEnd, err := skipValue(obj, vStart)
		if err != nil {
			return nil, false
		}
		if string(key) == name {
			val, found = obj[vStart:vEnd], true
		}
		i = vEnd
	}
}
