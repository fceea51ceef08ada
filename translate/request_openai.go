package translate

import (
	"encoding/json"
	"fmt"
	"slices"
)

// This file holds the members a canonical chat body may carry beyond the
// standard Chat Completions fields, and the last step that readies such a
// body for an OpenAI-format backend.
//
// AnthropicRequestToOpenAI writes two non-standard members: top_k (from the
// Anthropic request's top_k; vLLM, SGLang, llama.cpp and others accept it)
// and reasoning_effort (standard for OpenAI reasoning models only). Chat
// backends that answer with reasoning put it in a message's or delta's
// reasoning_content (DeepSeek, vLLM); clients may send it back in assistant
// history.

// OpenAIOptions says what an OpenAI-format backend accepts beyond the
// standard chat fields. The zero value accepts neither extension: a request
// using one is refused, never silently changed.
type OpenAIOptions struct {
	// TopK: the backend honours a top_k member (vLLM, SGLang, llama.cpp,
	// …). Default false: OpenAI and Azure OpenAI answer 400 to it.
	TopK bool
	// Reasoning: the backend honours reasoning_effort (OpenAI o-series and
	// gpt-5 models, and servers that copy them). Default false: other
	// models answer 400 to it.
	Reasoning bool
	// Model is the backend's model (or deployment), named as the cause
	// of the *UnsupportedError for a reasoning_effort it cannot honour.
	// Optional: "" names none.
	Model string
}

// ForOpenAI returns canon ready for an OpenAI-format backend: top_k ->
// *UnsupportedError unless opt.TopK; reasoning_effort -> *UnsupportedError
// unless opt.Reasoning (a reasoning_effort of "none" asks for no reasoning,
// which is what such a backend does: it is removed instead); reasoning_content
// in assistant history removed (it is the model's own output, which an
// OpenAI-format backend does not take back). canon is returned unchanged, the
// same slice, when nothing applies. A canon that is not a JSON object, or
// whose messages are not a list of objects, is an error that is not an
// *UnsupportedError.
//
// ForOpenAI is safe for concurrent use; it does not modify canon.
func ForOpenAI(canon []byte, opt OpenAIOptions) ([]byte, error) {
	members, err := decodeObject(canon)
	if err != nil {
		return nil, errBadBody("openai request", err)
	}
	changed := false
	if v, ok := members["top_k"]; ok && !isNull(v) && !opt.TopK {
		return nil, unsupported(OpenAI, "top_k")
	}
	if v, ok := members["reasoning_effort"]; ok && !isNull(v) && !opt.Reasoning {
		var effort string
		if json.Unmarshal(v, &effort) != nil || effort != "none" {
			cause := "the model is not a reasoning model"
			if opt.Model != "" {
				cause = fmt.Sprintf("its model %q is not a reasoning model", opt.Model)
			}
			return nil, &UnsupportedError{Target: OpenAI, Feature: "reasoning_effort", Cause: cause}
		}
		delete(members, "reasoning_effort")
		changed = true
	}
	if raw, ok := members["messages"]; ok && !isNull(raw) {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, errBadBody("openai request: messages", err)
		}
		stripped := false
		for _, m := range msgs {
			if _, has := m["reasoning_content"]; has && string(m["role"]) == `"assistant"` {
				delete(m, "reasoning_content")
				stripped = true
			}
		}
		if stripped {
			members["messages"] = mustMarshal(msgs)
			changed = true
		}
	}
	if !changed {
		return canon, nil
	}
	return marshal(members)
}

// takeMembers removes the named top-level members from an OpenAI request
// body and returns them (null values are left out of taken). body comes
// back unchanged when it holds none of them, or when it is not a JSON
// object (parseOpenAIRequest then reports it). The converters use it for
// the extensions parseOpenAIRequest would refuse as unknown.
func takeMembers(body []byte, keys ...string) (rest []byte, taken map[string]json.RawMessage) {
	members, err := decodeObject(body)
	if err != nil {
		return body, nil
	}
	found := false
	for k := range members {
		if slices.Contains(keys, k) {
			found = true
			if v := members[k]; !isNull(v) {
				if taken == nil {
					taken = map[string]json.RawMessage{}
				}
				taken[k] = v
			}
			delete(members, k)
		}
	}
	if !found {
		return body, nil
	}
	return mustMarshal(members), taken
}

// topKOf decodes a top_k taken by takeMembers; nil when absent. A top_k
// below 1 is absent too: vLLM and SGLang read 0 and -1 as "no top-k", and
// Anthropic and Gemini take only a positive integer.
func topKOf(taken map[string]json.RawMessage) (*int, error) {
	raw, ok := taken["top_k"]
	if !ok {
		return nil, nil
	}
	var k int
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, errBadBody("openai request: top_k", err)
	}
	if k < 1 {
		return nil, nil
	}
	return &k, nil
}
