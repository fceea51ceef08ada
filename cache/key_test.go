package cache

import (
	"errors"
	"net/http"
	"testing"
)

const baseBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50}`

func baseCall() Call {
	return Call{Op: "chat/completions", Format: "openai", Pool: "chat", Path: "/v1/chat/completions", Scope: "t:red", Body: []byte(baseBody), Header: http.Header{}}
}

func keyOf(t *testing.T, c Call) Key {
	t.Helper()
	k, err := KeyOf(c)
	if err != nil {
		t.Fatalf("KeyOf: %v", err)
	}
	return k
}

// TestKeyChangesWithWhatChangesTheAnswer: one case per part of a call
// that changes its answer; each must give another key.
func TestKeyChangesWithWhatChangesTheAnswer(t *testing.T) {
	base := keyOf(t, baseCall())
	body := func(b string) func(*Call) { return func(c *Call) { c.Body = []byte(b) } }
	cases := []struct {
		name string
		edit func(*Call)
	}{
		{"messages", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"temperature":0.2,"max_tokens":50}`)},
		{"role", body(`{"model":"gpt-4o","messages":[{"role":"system","content":"hi"}],"temperature":0.2,"max_tokens":50}`)},
		{"temperature", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.3,"max_tokens":50}`)},
		{"max_tokens", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":51}`)},
		{"top_p", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"top_p":0.9}`)},
		{"seed", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"seed":7}`)},
		{"stop", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"stop":["\n"]}`)},
		{"tools", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"tools":[{"type":"function","function":{"name":"f"}}]}`)},
		{"tool_choice", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"tool_choice":"none"}`)},
		{"response_format", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"response_format":{"type":"json_object"}}`)},
		{"reasoning_effort", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"reasoning_effort":"high"}`)},
		{"n", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"n":2}`)},
		{"logprobs", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"logprobs":true}`)},
		{"max_completion_tokens", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"max_completion_tokens":40}`)},
		{"reasoning", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"reasoning":{"effort":"high"}}`)},
		{"thinking", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"thinking":{"type":"enabled","budget_tokens":1024}}`)},
		{"service_tier", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"service_tier":"flex"}`)},
		{"stream_options", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"stream_options":{"include_usage":true}}`)},
		{"a number written otherwise", body(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.20,"max_tokens":50}`)},
		{"pool", func(c *Call) { c.Pool = "other" }},
		{"operation", func(c *Call) { c.Op = "completions" }},
		{"format", func(c *Call) { c.Format = "anthropic" }},
		{"path", func(c *Call) { c.Path = "/openai/deployments/chat/chat/completions" }},
		{"query", func(c *Call) { c.Query = "api-version=2024-10-21" }},
		{"stream", func(c *Call) { c.Stream = true }},
		{"team", func(c *Call) { c.Scope = "t:blue" }},
		{"key", func(c *Call) { c.Scope = "k:app" }},
		{"shared", func(c *Call) { c.Scope = "" }},
		{"anthropic-version", func(c *Call) { c.Header.Set("Anthropic-Version", "2023-06-01") }},
		{"anthropic-beta", func(c *Call) { c.Header.Set("Anthropic-Beta", "prompt-caching-2024-07-31") }},
	}
	seen := map[Key]string{base: "base"}
	for _, tc := range cases {
		c := baseCall()
		tc.edit(&c)
		k := keyOf(t, c)
		if other, dup := seen[k]; dup {
			t.Errorf("%s: same key as %s", tc.name, other)
		}
		seen[k] = tc.name
	}
}

// TestKeyIgnoresWhatDoesNotChangeTheAnswer: the documented ignored
// fields, the order of members and white space give the same key.
func TestKeyIgnoresWhatDoesNotChangeTheAnswer(t *testing.T) {
	base := keyOf(t, baseCall())
	cases := []struct{ name, body string }{
		{"model (the pool stands for it)", `{"model":"gpt-4o-alias","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50}`},
		{"member order", `{"max_tokens":50,"temperature":0.2,"messages":[{"content":"hi","role":"user"}],"model":"gpt-4o"}`},
		{"white space", "{ \"model\": \"gpt-4o\",\n \"messages\": [ {\"role\":\"user\", \"content\":\"hi\"} ], \"temperature\": 0.2, \"max_tokens\": 50 }"},
		{"user", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"user":"u-1"}`},
		{"metadata", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"metadata":{"run":"7"}}`},
		{"safety_identifier", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"safety_identifier":"s"}`},
		{"prompt_cache_key", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"prompt_cache_key":"p"}`},
		{"stream in the body (Call.Stream stands for it)", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"temperature":0.2,"max_tokens":50,"stream":false}`},
	}
	for _, tc := range cases {
		c := baseCall()
		c.Body = []byte(tc.body)
		c.Header.Set("X-Request-Id", "another")
		c.Header.Set("Authorization", "Bearer another-key")
		if k := keyOf(t, c); k != base {
			t.Errorf("%s changed the key", tc.name)
		}
	}
}

// TestKeyRefusesWhatIsNotCacheable: calls with effects or stored state.
func TestKeyRefusesWhatIsNotCacheable(t *testing.T) {
	cases := []struct{ name, op, body string }{
		{"stored chat completion", "chat/completions", `{"messages":[],"store":true}`},
		{"response stored by default", "responses", `{"input":"hi"}`},
		{"response stored", "responses", `{"input":"hi","store":true}`},
		{"response continuing one", "responses", `{"input":"hi","store":false,"previous_response_id":"resp_1"}`},
		{"response in a conversation", "responses", `{"input":"hi","store":false,"conversation":"conv_1"}`},
		{"background response", "responses", `{"input":"hi","store":false,"background":true}`},
		{"audio", "audio/speech", `{"input":"hi"}`},
		{"files", "files", `{}`},
		{"images", "images/generations", `{"prompt":"a cat"}`},
		{"realtime", "realtime", `{}`},
		{"not an object", "chat/completions", `[1,2]`},
		{"not JSON", "chat/completions", `{"messages":`},
	}
	for _, tc := range cases {
		c := baseCall()
		c.Op, c.Body = tc.op, []byte(tc.body)
		if _, err := KeyOf(c); !errors.Is(err, ErrNotCacheable) {
			t.Errorf("%s: err %v, want ErrNotCacheable", tc.name, err)
		}
	}
	for _, op := range []string{"chat/completions", "completions", "embeddings", "messages", "messages/count_tokens"} {
		c := baseCall()
		c.Op = op
		if _, err := KeyOf(c); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
	c := baseCall()
	c.Op, c.Body = "responses", []byte(`{"input":"hi","store":false}`)
	if _, err := KeyOf(c); err != nil {
		t.Errorf("a response with store false: %v", err)
	}
}
