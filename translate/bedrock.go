package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Amazon Bedrock's Converse API is a format of its own, close to
// Anthropic's Messages: a system prompt apart, messages of content blocks,
// tool use and results as blocks, a stop reason and token usage. The
// gateway reaches Bedrock through Anthropic's format: a request in any
// inbound format is translated to Messages as for an Anthropic backend,
// then AnthropicToConverse makes it a Converse request, and the answer
// (ConverseToAnthropic, ConverseStreamToAnthropic) comes back as
// Anthropic's, which the existing translators turn into the caller's
// format. InvokeModel with Anthropic's native body (AnthropicToInvoke)
// keeps Anthropic's format both ways.

// BedrockAnthropicVersion is the anthropic_version InvokeModel takes in
// the body of Claude models.
const BedrockAnthropicVersion = "bedrock-2023-05-31"

// brRequest is the part of an Anthropic Messages request that Converse
// can express.
type brRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"`
	Messages      []brMessage     `json:"messages"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Tools         []brTool        `json:"tools"`
	ToolChoice    *brToolChoice   `json:"tool_choice"`
	Thinking      json.RawMessage `json:"thinking"`
	Metadata      json.RawMessage `json:"metadata"`
}

type brMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type brTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type brToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// brBlock is a content block of an Anthropic request.
type brBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	Source       *brSource       `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	Thinking     string          `json:"thinking"`
	Signature    string          `json:"signature"`
	Data         string          `json:"data"`
	CacheControl json.RawMessage `json:"cache_control"`
	Title        string          `json:"title"`
}

type brSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// Converse's request.
type cvRequest struct {
	Messages                     []cvMessage     `json:"messages"`
	System                       []cvBlock       `json:"system,omitempty"`
	InferenceConfig              *cvInference    `json:"inferenceConfig,omitempty"`
	ToolConfig                   *cvToolConfig   `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any  `json:"additionalModelRequestFields,omitempty"`
	RequestMetadata              json.RawMessage `json:"requestMetadata,omitempty"`
}

type cvMessage struct {
	Role    string    `json:"role"`
	Content []cvBlock `json:"content"`
}

type cvInference struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type cvToolConfig struct {
	Tools      []cvTool        `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"`
}

type cvTool struct {
	ToolSpec cvToolSpec `json:"toolSpec"`
}

type cvToolSpec struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	InputSchema cvSchema `json:"inputSchema"`
}

type cvSchema struct {
	JSON json.RawMessage `json:"json"`
}

// cvBlock is a Converse content block: exactly one member is set.
type cvBlock struct {
	Text             *string      `json:"text,omitempty"`
	Image            *cvMedia     `json:"image,omitempty"`
	Document         *cvMedia     `json:"document,omitempty"`
	ToolUse          *cvToolUse   `json:"toolUse,omitempty"`
	ToolResult       *cvResult    `json:"toolResult,omitempty"`
	ReasoningContent *cvReasoning `json:"reasoningContent,omitempty"`
	CachePoint       *cvCache     `json:"cachePoint,omitempty"`
	JSON             any          `json:"json,omitempty"`
}

type cvMedia struct {
	Format string `json:"format"`
	Name   string `json:"name,omitempty"`
	Source struct {
		Bytes string `json:"bytes"`
	} `json:"source"`
}

type cvToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type cvResult struct {
	ToolUseID string    `json:"toolUseId"`
	Content   []cvBlock `json:"content"`
	Status    string    `json:"status,omitempty"`
}

type cvReasoning struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
	RedactedContent string `json:"redactedContent,omitempty"`
}

type cvCache struct {
	Type string `json:"type"`
}

func unsupportedConverse(feature string) error {
	return &UnsupportedError{Target: "bedrock-converse", Feature: feature}
}

// AnthropicToConverse translates an Anthropic Messages request body to a
// Converse request body (the model goes in the URL, streaming is the
// choice of ConverseStream). Anthropic's top_k and thinking go in
// additionalModelRequestFields, which Claude models on Bedrock read;
// cache_control becomes a cachePoint after its block. It fails with an
// UnsupportedError for what Converse cannot carry: images and documents
// by URL, server tools.
func AnthropicToConverse(body []byte) ([]byte, error) {
	var in brRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errBadBody("anthropic request", err)
	}
	out := cvRequest{Messages: make([]cvMessage, 0, len(in.Messages))}
	if len(in.System) > 0 && string(in.System) != "null" {
		sys, err := converseBlocks(in.System)
		if err != nil {
			return nil, err
		}
		out.System = sys
	}
	for _, m := range in.Messages {
		blocks, err := converseBlocks(m.Content)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, cvMessage{Role: m.Role, Content: blocks})
	}
	if in.MaxTokens != nil || in.Temperature != nil || in.TopP != nil || len(in.StopSequences) > 0 {
		out.InferenceConfig = &cvInference{MaxTokens: in.MaxTokens, Temperature: in.Temperature, TopP: in.TopP, StopSequences: in.StopSequences}
	}
	if err := converseTools(&in, &out); err != nil {
		return nil, err
	}
	extra := map[string]any{}
	if in.TopK != nil {
		extra["top_k"] = *in.TopK
	}
	if len(in.Thinking) > 0 && string(in.Thinking) != "null" {
		extra["thinking"] = in.Thinking
	}
	if len(extra) > 0 {
		out.AdditionalModelRequestFields = extra
	}
	return json.Marshal(out)
}

// converseTools sets out's toolConfig from in's tools and tool_choice.
// Converse has no "none": the tools are then left out, unless the
// messages hold tool blocks, which Converse refuses without a toolConfig.
func converseTools(in *brRequest, out *cvRequest) error {
	if len(in.Tools) == 0 {
		return nil
	}
	tc := &cvToolConfig{}
	for _, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			return unsupportedConverse("the server tool " + t.Type)
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tc.Tools = append(tc.Tools, cvTool{ToolSpec: cvToolSpec{Name: t.Name, Description: t.Description, InputSchema: cvSchema{JSON: schema}}})
	}
	if c := in.ToolChoice; c != nil {
		switch c.Type {
		case "auto":
			tc.ToolChoice = json.RawMessage(`{"auto":{}}`)
		case "any":
			tc.ToolChoice = json.RawMessage(`{"any":{}}`)
		case "tool":
			b, _ := json.Marshal(map[string]any{"tool": map[string]string{"name": c.Name}})
			tc.ToolChoice = b
		case "none":
			if !mentionsTools(out.Messages) {
				return nil
			}
		}
	}
	out.ToolConfig = tc
	return nil
}

func mentionsTools(ms []cvMessage) bool {
	for _, m := range ms {
		for _, b := range m.Content {
			if b.ToolUse != nil || b.ToolResult != nil {
				return true
			}
		}
	}
	return false
}

// converseBlocks translates Anthropic content (a string or blocks) to
// Converse blocks.
func converseBlocks(raw json.RawMessage) ([]cvBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []cvBlock{{Text: &s}}, nil
	}
	var in []brBlock
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, errBadBody("anthropic content", err)
	}
	out := make([]cvBlock, 0, len(in))
	for i := range in {
		b, err := converseBlock(&in[i])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		if len(in[i].CacheControl) > 0 && string(in[i].CacheControl) != "null" {
			out = append(out, cvBlock{CachePoint: &cvCache{Type: "default"}})
		}
	}
	return out, nil
}

func converseBlock(b *brBlock) (cvBlock, error) {
	switch b.Type {
	case "text":
		t := b.Text
		return cvBlock{Text: &t}, nil
	case "image", "document":
		if b.Source == nil || b.Source.Type != "base64" {
			return cvBlock{}, unsupportedConverse("an " + b.Type + " not given as base64 data")
		}
		m := &cvMedia{Format: mediaFormat(b.Source.MediaType)}
		m.Source.Bytes = b.Source.Data
		if b.Type == "image" {
			return cvBlock{Image: m}, nil
		}
		m.Name = b.Title
		if m.Name == "" {
			m.Name = "document"
		}
		return cvBlock{Document: m}, nil
	case "tool_use":
		in := b.Input
		if len(in) == 0 {
			in = json.RawMessage(`{}`)
		}
		return cvBlock{ToolUse: &cvToolUse{ToolUseID: b.ID, Name: b.Name, Input: in}}, nil
	case "tool_result":
		r := &cvResult{ToolUseID: b.ToolUseID, Content: []cvBlock{}}
		if b.IsError {
			r.Status = "error"
		}
		if len(b.Content) > 0 && string(b.Content) != "null" {
			c, err := converseBlocks(b.Content)
			if err != nil {
				return cvBlock{}, err
			}
			r.Content = c
		}
		return cvBlock{ToolResult: r}, nil
	case "thinking":
		rc := &cvReasoning{}
		rc.ReasoningText = &struct {
			Text      string `json:"text"`
			Signature string `json:"signature,omitempty"`
		}{b.Thinking, b.Signature}
		return cvBlock{ReasoningContent: rc}, nil
	case "redacted_thinking":
		return cvBlock{ReasoningContent: &cvReasoning{RedactedContent: b.Data}}, nil
	}
	return cvBlock{}, unsupportedConverse("a content block of type " + b.Type)
}

// mediaFormat is Converse's format name for a media type: image/png is
// png, application/pdf pdf, text/plain txt.
func mediaFormat(mt string) string {
	switch mt {
	case "text/plain":
		return "txt"
	case "image/jpg":
		return "jpeg"
	}
	_, f, _ := strings.Cut(mt, "/")
	return f
}

// Converse's response.
type cvResponse struct {
	Output struct {
		Message *struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string   `json:"stopReason"`
	Usage      *cvUsage `json:"usage"`
}

type cvUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

func (u *cvUsage) anthropic() map[string]int {
	if u == nil {
		return map[string]int{"input_tokens": 0, "output_tokens": 0}
	}
	m := map[string]int{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}
	if u.CacheReadInputTokens > 0 {
		m["cache_read_input_tokens"] = u.CacheReadInputTokens
	}
	if u.CacheWriteInputTokens > 0 {
		m["cache_creation_input_tokens"] = u.CacheWriteInputTokens
	}
	return m
}

// anthropicStop is Anthropic's stop reason for Converse's: the reasons
// both APIs have pass as they are, a guardrail or content filter stop is
// a refusal, and one Anthropic's API does not have (Converse's
// malformed_model_output and malformed_tool_use, listed in the Bedrock
// documentation, or a reason added later) ends the turn, end_turn, so
// that an Anthropic client never reads a stop_reason outside its enum.
func anthropicStop(r string) string {
	switch r {
	case "end_turn", "tool_use", "max_tokens", "stop_sequence", "model_context_window_exceeded":
		return r
	case "guardrail_intervened", "content_filtered":
		return "refusal"
	}
	return "end_turn"
}

// ConverseToAnthropic translates a Converse response body to an Anthropic
// Messages response with the given model and id.
func ConverseToAnthropic(body []byte, model, id string) ([]byte, error) {
	var in cvResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errBadBody("converse response", err)
	}
	content := []any{}
	if m := in.Output.Message; m != nil {
		for _, raw := range m.Content {
			if b, ok := anthropicBlock(raw); ok {
				content = append(content, b)
			}
		}
	}
	return json.Marshal(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": anthropicStop(in.StopReason), "stop_sequence": nil, "usage": in.Usage.anthropic(),
	})
}

// cvOutBlock is a content block of a Converse answer.
type cvOutBlock struct {
	Text             *string      `json:"text"`
	ToolUse          *cvToolUse   `json:"toolUse"`
	ReasoningContent *cvReasoning `json:"reasoningContent"`
}

// anthropicBlock is the Anthropic content block of a Converse one; ok is
// false for blocks Anthropic's format has no place for.
func anthropicBlock(raw json.RawMessage) (map[string]any, bool) {
	var b cvOutBlock
	if json.Unmarshal(raw, &b) != nil {
		return nil, false
	}
	switch {
	case b.Text != nil:
		return map[string]any{"type": "text", "text": *b.Text}, true
	case b.ToolUse != nil:
		in := b.ToolUse.Input
		if len(in) == 0 {
			in = json.RawMessage(`{}`)
		}
		return map[string]any{"type": "tool_use", "id": b.ToolUse.ToolUseID, "name": b.ToolUse.Name, "input": in}, true
	case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
		return map[string]any{"type": "thinking", "thinking": b.ReasoningContent.ReasoningText.Text, "signature": b.ReasoningContent.ReasoningText.Signature}, true
	case b.ReasoningContent != nil && b.ReasoningContent.RedactedContent != "":
		return map[string]any{"type": "redacted_thinking", "data": b.ReasoningContent.RedactedContent}, true
	}
	return nil, false
}

// AnthropicToInvoke makes an Anthropic Messages request the body of
// InvokeModel for a Claude model: no model or stream (the URL says both),
// anthropic_version bedrock-2023-05-31 unless the body names one, and the
// caller's anthropic-beta values as anthropic_beta.
func AnthropicToInvoke(body []byte, betas []string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, errBadBody("anthropic request", err)
	}
	delete(m, "model")
	delete(m, "stream")
	if _, ok := m["anthropic_version"]; !ok {
		m["anthropic_version"] = json.RawMessage(`"` + BedrockAnthropicVersion + `"`)
	}
	if len(betas) > 0 {
		if _, ok := m["anthropic_beta"]; !ok {
			b, _ := json.Marshal(betas)
			m["anthropic_beta"] = b
		}
	}
	return json.Marshal(m)
}

// BedrockError is Anthropic's error body and the status to answer with
// for a Bedrock error: the exception's name (x-amzn-ErrorType, or the
// body's __type or code) and its status. Quota and throttling exceptions
// are 429 (ServiceQuotaExceededException comes as 400); a model not
// ready is 503, as are the service's own failures, so the breaker counts
// them and the gateway fails over; validation and access errors keep
// their 4xx and are the caller's to fix.
func BedrockError(exception string, status int, body []byte) (int, []byte) {
	name, _, _ := strings.Cut(exception, ":")
	if name != "" && name[0] >= 'a' && name[0] <= 'z' {
		name = string(name[0]-'a'+'A') + name[1:] // a stream's exception event names it in lower camel case
	}
	var e struct {
		Message  string `json:"message"`
		Message2 string `json:"Message"`
		Type     string `json:"__type"`
	}
	_ = json.Unmarshal(body, &e)
	if name == "" {
		name = e.Type
		if i := strings.LastIndexByte(name, '#'); i >= 0 {
			name = name[i+1:]
		}
	}
	msg := e.Message
	if msg == "" {
		msg = e.Message2
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	status, typ := bedrockStatus(name, status)
	if name != "" {
		msg = name + ": " + msg
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	return status, b
}

// bedrockStatus is the status and Anthropic error type of a Bedrock
// exception that came with status.
func bedrockStatus(name string, status int) (int, string) {
	switch name {
	case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
		return 429, "rate_limit_error"
	case "ModelNotReadyException", "ServiceUnavailableException":
		return 503, "overloaded_error"
	case "InternalServerException", "ModelStreamErrorException":
		return 500, "api_error"
	case "ModelTimeoutException":
		return 504, "api_error"
	case "ModelErrorException":
		return 502, "api_error"
	case "ValidationException":
		return 400, "invalid_request_error"
	case "AccessDeniedException":
		return 403, "permission_error"
	case "UnrecognizedClientException", "ExpiredTokenException", "InvalidSignatureException", "IncompleteSignatureException":
		return 401, "authentication_error"
	case "ResourceNotFoundException":
		return 404, "not_found_error"
	}
	return status, anthropicTypeByStatus(status)
}

// bedrockExceptionEvent is the SSE error event of a stream's exception.
func bedrockExceptionEvent(name string, payload []byte) []byte {
	_, b := BedrockError(name, 500, payload)
	return fmt.Appendf(nil, "event: error\ndata: %s\n\n", b)
}
