package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Call is what a cache key is made of: the call as routed, and whose
// answer it is.
type Call struct {
	// Op is the call's operation (route.Operation: "chat/completions",
	// "messages"…); Format the caller's API format, in which the answer
	// is written.
	Op, Format string
	// Pool is the pool the call was routed to: aliases of one pool share
	// entries, and the body's "model" is not read.
	Pool string
	// Path and Query are the request's path (normalised) and query.
	Path, Query string
	// Stream says the caller asked for an event stream: a streamed and a
	// plain answer are different entries.
	Stream bool
	// Scope is whose answer it is: "t:team", "k:key", or "" (shared).
	Scope string
	// Body is the JSON body as the caller sent it.
	Body []byte
	// Header is the request's header: the few that change an answer
	// (KeyHeaders) are read.
	Header http.Header
}

// KeyHeaders are the request headers that change an answer, and so the
// key: the API versions and betas a provider reads.
var KeyHeaders = []string{"Anthropic-Version", "Anthropic-Beta", "Openai-Beta", "X-Goog-Api-Client"}

// IgnoredFields are the body's top-level fields left out of the key: the
// model (the pool as routed stands for it), the stream flag (Call.Stream)
// and the fields that say who asks or how the provider should file the
// call, not what the answer is. Every other field is in the key.
var IgnoredFields = []string{"model", "stream", "user", "metadata", "safety_identifier", "prompt_cache_key"}

// ErrNotCacheable is the cause of a call whose answer is never stored: an
// operation with effects or stored state, or a body that asks for them.
var ErrNotCacheable = errors.New("not cacheable")

// cacheableOps are the operations whose answers may be stored.
var cacheableOps = map[string]bool{
	"chat/completions": true, "completions": true, "embeddings": true,
	"messages": true, "messages/count_tokens": true, "responses": true,
}

// KeyOf returns c's key: a SHA-256 of the canonical call, whose body is
// re-encoded with its objects' members sorted and IgnoredFields left out,
// numbers as written. It returns an error wrapping ErrNotCacheable for a
// call whose answer must not be stored (Cacheable's rules) or whose body
// is not a JSON object.
func KeyOf(c Call) (Key, error) {
	if !cacheableOps[c.Op] {
		return Key{}, fmt.Errorf("%w: the operation %s", ErrNotCacheable, c.Op)
	}
	d := json.NewDecoder(bytes.NewReader(c.Body))
	d.UseNumber()
	var body map[string]any
	if err := d.Decode(&body); err != nil || body == nil {
		return Key{}, fmt.Errorf("%w: the body is not a JSON object", ErrNotCacheable)
	}
	if err := cacheable(c.Op, body); err != nil {
		return Key{}, err
	}
	for _, f := range IgnoredFields {
		delete(body, f)
	}
	canon, err := json.Marshal(body)
	if err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrNotCacheable, err)
	}
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	field("v1")
	field(c.Op)
	field(c.Format)
	field(c.Pool)
	field(c.Path)
	field(c.Query)
	field(strconv.FormatBool(c.Stream))
	field(c.Scope)
	for _, name := range KeyHeaders {
		for _, v := range c.Header.Values(name) {
			field(name + "=" + v)
		}
	}
	field(string(canon))
	var k Key
	h.Sum(k[:0])
	return k, nil
}

// cacheable refuses the bodies whose answers have effects or depend on
// state kept elsewhere: a chat completion or a response the provider
// stores (Responses store by default, so only "store": false is
// cacheable), a response that continues a stored one or a conversation,
// a background response.
func cacheable(op string, body map[string]any) error {
	switch op {
	case "chat/completions":
		if body["store"] == true {
			return fmt.Errorf("%w: store is true", ErrNotCacheable)
		}
	case "responses":
		if body["store"] != false {
			return fmt.Errorf("%w: a response without store: false is stored by the provider", ErrNotCacheable)
		}
		for _, f := range []string{"previous_response_id", "conversation"} {
			if v, ok := body[f]; ok && v != nil {
				return fmt.Errorf("%w: %s refers to stored state", ErrNotCacheable, f)
			}
		}
		if body["background"] == true {
			return fmt.Errorf("%w: a background response", ErrNotCacheable)
		}
	}
	return nil
}
