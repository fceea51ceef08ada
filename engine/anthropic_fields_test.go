package engine

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postRaw posts body to path on the gateway and returns the status and
// the answer's bytes, unparsed: these tests check what is on the wire.
func (s *served) postRaw(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// sseData returns the JSON of each data line of an event stream.
func sseData(t *testing.T, stream string) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok || strings.TrimSpace(data) == "[DONE]" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("data line %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// textBlocks returns the members of each text block in a Message's
// content.
func textBlocks(t *testing.T, content json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil {
		t.Fatalf("content %s: %v", content, err)
	}
	var out []map[string]json.RawMessage
	for _, b := range blocks {
		if string(b["type"]) == `"text"` {
			out = append(out, b)
		}
	}
	return out
}

// TestTranslatedAnthropicTextHasNoNullCitations: translated answers to
// /v1/messages carried "citations": null on their text blocks, which
// clients that validate the Messages API's schema (an array, or nothing)
// refuse. A block without citations has no citations member, as in
// Anthropic's own answers, plain and streamed.
func TestTranslatedAnthropicTextHasNoNullCitations(t *testing.T) {
	for _, member := range []string{"aoai-weu", "openai", "gemini"} {
		t.Run(member, func(t *testing.T) {
			e := startProviders(t, []string{member}, nil, "")
			const msg = `{"model":"chat-prod","max_tokens":64,"messages":[{"role":"user","content":"hello"}]%s}`
			status, body := e.postRaw(t, "/v1/messages", strings.Replace(msg, "%s", "", 1))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			var m struct {
				Content json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatal(err)
			}
			texts := textBlocks(t, m.Content)
			if len(texts) == 0 {
				t.Fatalf("no text block in %s", body)
			}
			for _, b := range texts {
				if c, ok := b["citations"]; ok {
					t.Errorf("text block has citations %s: %s", c, body)
				}
			}

			status, stream := e.postRaw(t, "/v1/messages", strings.Replace(msg, "%s", `,"stream":true`, 1))
			if status != http.StatusOK {
				t.Fatalf("stream status %d: %s", status, stream)
			}
			started := 0
			for _, ev := range sseData(t, stream) {
				if string(ev["type"]) != `"content_block_start"` {
					continue
				}
				for _, b := range textBlocks(t, json.RawMessage("["+string(ev["content_block"])+"]")) {
					started++
					if c, ok := b["citations"]; ok {
						t.Errorf("streamed text block has citations %s", c)
					}
				}
			}
			if started == 0 {
				t.Fatalf("no text block started in %s", stream)
			}
		})
	}
}

// TestTranslatedToolUseNamesItsCaller: translated tool_use blocks lacked
// caller, which the Messages API always writes; a call the model made
// itself is {"type": "direct"}, plain and streamed.
func TestTranslatedToolUseNamesItsCaller(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "")
	const msg = `{"model":"chat-prod","max_tokens":64,"messages":[{"role":"user","content":"weather in Paris?"}],
		"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]%s}`
	check := func(block json.RawMessage) {
		t.Helper()
		var b struct {
			Type   string          `json:"type"`
			Caller json.RawMessage `json:"caller"`
		}
		if err := json.Unmarshal(block, &b); err != nil {
			t.Fatal(err)
		}
		if string(b.Caller) != `{"type":"direct"}` {
			t.Errorf("tool_use caller %s, want {\"type\":\"direct\"}: %s", b.Caller, block)
		}
	}
	status, body := e.postRaw(t, "/v1/messages", strings.Replace(msg, "%s", "", 1))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	uses := 0
	for _, b := range m.Content {
		if strings.Contains(string(b), `"type":"tool_use"`) {
			uses++
			check(b)
		}
	}
	status, stream := e.postRaw(t, "/v1/messages", strings.Replace(msg, "%s", `,"stream":true`, 1))
	if status != http.StatusOK {
		t.Fatalf("stream status %d: %s", status, stream)
	}
	for _, ev := range sseData(t, stream) {
		if cb := ev["content_block"]; string(ev["type"]) == `"content_block_start"` && strings.Contains(string(cb), `"type":"tool_use"`) {
			uses++
			check(cb)
		}
	}
	if uses != 2 {
		t.Fatalf("%d tool_use blocks, want one plain and one streamed:\n%s\n%s", uses, body, stream)
	}
}
