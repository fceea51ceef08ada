package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Token estimates for backends that cannot count (an OpenAI-format backend
// has no count_tokens endpoint), and for message_start's input_tokens. They
// are estimates, good for context accounting, not billing.
const (
	// bytesPerToken: text of English and code runs at about 4 bytes a
	// token with the providers' tokenizers; other scripts cost more.
	bytesPerToken = 4
	// imageTokens is the flat cost of one image: about what Anthropic
	// charges for an image at its largest size before resizing
	// (width*height/750 for 1.15 megapixels), and more than OpenAI's
	// low-detail 85. Its base64 bytes are never counted as text.
	imageTokens = 1600
	// documentTokens is the flat cost of one PDF or other binary document
	// (Anthropic counts 1,500 to 3,000 tokens a page; the page count is
	// not known without parsing the file). A plain-text document counts
	// as its text.
	documentTokens = 3000
	// messageTokens is the overhead of one message (role and separators).
	messageTokens = 4
)

// CheckAnthropicCountTokens checks the body of POST
// /v1/messages/count_tokens as Anthropic's API does before it counts: a
// JSON object whose messages are a list, each message with a role and a
// content that is a string or a list of blocks, and a system, if any,
// that is a string or a list. The error says what is wrong in the API's
// words ("messages.0.content: Field required"). The gateway answers a
// count itself with route.Request.PromptTokens once this has passed.
//
// Safe for concurrent use.
func CheckAnthropicCountTokens(body []byte) error {
	members, err := decodeObject(body)
	if err != nil {
		return errors.New("the body is not a JSON object")
	}
	if !isNull(members["system"]) && !stringOrList(members["system"]) {
		return errors.New("system: Input should be a valid string or list")
	}
	raw := members["messages"]
	if isNull(raw) {
		return errors.New("messages: Field required")
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return errors.New("messages: Input should be a valid list of objects")
	}
	for i, m := range msgs {
		var role string
		if json.Unmarshal(m["role"], &role) != nil || role == "" {
			return fmt.Errorf("messages.%d.role: Field required", i)
		}
		if isNull(m["content"]) {
			return fmt.Errorf("messages.%d.content: Field required", i)
		}
		if !stringOrList(m["content"]) {
			return fmt.Errorf("messages.%d.content: Input should be a valid string or list", i)
		}
	}
	return nil
}

// stringOrList reports whether raw, a JSON value, is a string or a list.
func stringOrList(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && (t[0] == '"' || t[0] == '[')
}

// EstimateAnthropicTokens estimates the input tokens of a Messages API
// request body (the gateway's own count_tokens answer is
// route.Request.PromptTokens, not this): text at about
// 4 bytes per token, images and documents at a documented flat cost each
// (never their base64 bytes counted as text), tool definitions counted as
// their JSON. Returns an error for a malformed body.
//
// What counts: system, every message's text, tool_use input (as JSON),
// tool_result content, tools (as JSON), 4 tokens per message; images 1600
// tokens each, base64 and URL PDFs 3000 each, text documents as their text.
// Thinking and redacted_thinking blocks count nothing: Anthropic does not
// count thinking from earlier turns, and translation drops it. Other
// members (cache_control, ids, signatures) count nothing.
//
// Safe for concurrent use.
func EstimateAnthropicTokens(body []byte) (int, error) { return CountAnthropicTokens(body, nil) }

// CountAnthropicTokens is EstimateAnthropicTokens with text counted by
// count (a tokenizer's count of a string) instead of at 4 bytes a token;
// nil count is EstimateAnthropicTokens. Images, documents and the
// per-message overhead keep their flat costs.
//
// Safe for concurrent use if count is.
func CountAnthropicTokens(body []byte, count func(string) int) (int, error) {
	var r struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	if err := decodeRequestObject(body, &r); err != nil {
		return 0, errBadBody("anthropic count_tokens request", err)
	}
	e := estimate{count: count}
	if !isNull(r.System) {
		if err := e.anthropicContent(r.System); err != nil {
			return 0, errBadBody("anthropic count_tokens request: system", err)
		}
	}
	for i, m := range r.Messages {
		if m.Role == "" || isNull(m.Content) {
			return 0, errBadBody("anthropic count_tokens request", fmt.Errorf("messages[%d] has no role or content", i))
		}
		e.flat += messageTokens
		if err := e.anthropicContent(m.Content); err != nil {
			return 0, errBadBody("anthropic count_tokens request", fmt.Errorf("messages[%d]: %w", i, err))
		}
	}
	if err := e.tools(r.Tools); err != nil {
		return 0, errBadBody("anthropic count_tokens request: tools", err)
	}
	return e.tokens(), nil
}

// EstimateOpenAITokens is EstimateAnthropicTokens for a chat completions
// request body: message text and refusals, tool call names and arguments,
// tools (as JSON), 4 tokens per message; image_url parts 1600 tokens each,
// file and input_audio parts 3000 each. Returns an error for a malformed
// body.
//
// Safe for concurrent use.
func EstimateOpenAITokens(body []byte) (int, error) { return CountOpenAITokens(body, nil) }

// CountOpenAITokens is EstimateOpenAITokens with text counted by count,
// as CountAnthropicTokens.
//
// Safe for concurrent use if count is.
func CountOpenAITokens(body []byte, count func(string) int) (int, error) {
	var r struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			Name      string          `json:"name"`
			ToolCalls []oaToolCall    `json:"tool_calls"`
		} `json:"messages"`
		Tools json.RawMessage `json:"tools"`
	}
	if err := decodeRequestObject(body, &r); err != nil {
		return 0, errBadBody("openai request", err)
	}
	e := estimate{count: count}
	for i, m := range r.Messages {
		if m.Role == "" {
			return 0, errBadBody("openai request", fmt.Errorf("messages[%d] has no role", i))
		}
		e.flat += messageTokens
		e.addText(m.Name)
		parts, err := parseContent(m.Content)
		if err != nil {
			return 0, err
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				e.addText(p.Text)
			case "refusal":
				e.addText(p.Refusal)
			case "image_url":
				e.flat += imageTokens
			default: // file, input_audio and parts added later
				e.flat += documentTokens
			}
		}
		for _, tc := range m.ToolCalls {
			e.addText(tc.Function.Name)
			e.addText(tc.Function.Arguments)
		}
	}
	if err := e.tools(r.Tools); err != nil {
		return 0, errBadBody("openai request: tools", err)
	}
	return e.tokens(), nil
}

// decodeRequestObject decodes a request body that must be a JSON object
// with a non-empty messages list.
func decodeRequestObject(body []byte, v any) error {
	members, err := decodeObject(body)
	if err != nil {
		return err
	}
	if isNull(members["messages"]) {
		return errors.New("messages is missing")
	}
	return json.Unmarshal(body, v)
}

// estimate sums text bytes and flat token costs.
type estimate struct {
	text  int // bytes of text, at bytesPerToken
	flat  int // tokens
	count func(string) int
}

// addText counts s: by count when set (into flat), else as bytes of text.
func (e *estimate) addText(s string) {
	if e.count != nil {
		e.flat += e.count(s)
		return
	}
	e.text += len(s)
}

func (e *estimate) tokens() int {
	return (e.text+bytesPerToken-1)/bytesPerToken + e.flat
}

// tools counts a tools list as its compact JSON.
func (e *estimate) tools(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return err
	}
	e.addText(b.String())
	return nil
}

// anthropicContent counts a content: a string, or a list of blocks.
func (e *estimate) anthropicContent(raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		e.addText(s)
		return nil
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return err
	}
	for _, b := range blocks {
		if err := e.anthropicBlock(b); err != nil {
			return err
		}
	}
	return nil
}

// anthropicBlock counts one content block.
func (e *estimate) anthropicBlock(b map[string]json.RawMessage) error {
	var typ string
	_ = json.Unmarshal(b["type"], &typ)
	switch typ {
	case "image":
		e.flat += imageTokens
		return nil
	case "document":
		var src struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}
		_ = json.Unmarshal(b["source"], &src)
		if src.Type == "text" {
			e.addText(src.Data)
		} else {
			e.flat += documentTokens
		}
		return nil
	case "thinking", "redacted_thinking":
		return nil
	}
	for k, v := range b {
		switch k {
		case "text", "name":
			var s string
			if json.Unmarshal(v, &s) == nil {
				e.addText(s)
			}
		case "input":
			e.addText(string(compactJSON(v)))
		case "content": // tool_result
			if !isNull(v) {
				if err := e.anthropicContent(v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
