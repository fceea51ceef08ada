package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// oaOutRequest is the canonical request AnthropicRequestToOpenAI writes.
type oaOutRequest struct {
	Model               string           `json:"model,omitempty"`
	Messages            []oaOutMessage   `json:"messages"`
	MaxCompletionTokens *int             `json:"max_completion_tokens,omitempty"`
	Temperature         *float64         `json:"temperature,omitempty"`
	TopP                *float64         `json:"top_p,omitempty"`
	Stop                []string         `json:"stop,omitempty"`
	Stream              bool             `json:"stream,omitempty"`
	StreamOptions       *oaStreamOptions `json:"stream_options,omitempty"`
	Tools               []oaOutTool      `json:"tools,omitempty"`
	ToolChoice          any              `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool            `json:"parallel_tool_calls,omitempty"`
	User                string           `json:"user,omitempty"`
	TopK                *int             `json:"top_k,omitempty"`            // non-standard, see ForOpenAI
	ReasoningEffort     string           `json:"reasoning_effort,omitempty"` // see ForOpenAI
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaOutMessage struct {
	Role       string       `json:"role"`
	Content    any          `json:"content"` // a string, []oaOutPart, or nil
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaOutPart struct {
	Type     string     `json:"type"`
	Text     *string    `json:"text,omitempty"`
	ImageURL *oaOutURL  `json:"image_url,omitempty"`
	File     *oaOutFile `json:"file,omitempty"`
}

type oaOutURL struct {
	URL string `json:"url"`
}

type oaOutFile struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

type oaOutTool struct {
	Type     string        `json:"type"`
	Function oaOutFunction `json:"function"`
}

type oaOutFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// anInRequest is an Anthropic Messages request as AnthropicRequestToOpenAI
// reads it.
type anInRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System        json.RawMessage `json:"system"`
	MaxTokens     *int            `json:"max_tokens"`
	Metadata      *anMetadata     `json:"metadata"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Tools         []anTool        `json:"tools"`
	ToolChoice    *anToolChoice   `json:"tool_choice"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	} `json:"thinking"`
	OutputConfig *struct {
		Effort string          `json:"effort"`
		Format json.RawMessage `json:"format"`
	} `json:"output_config"`
	ContextManagement *struct {
		Edits []struct {
			Type string `json:"type"`
		} `json:"edits"`
	} `json:"context_management"`
}

// anKnown are the Anthropic request members AnthropicRequestToOpenAI
// translates or checks; service_tier, cache_control (automatic prompt
// caching) and context_management's clearing edits are hints it may ignore.
// Any other member is refused.
var anKnown = []string{
	"model", "messages", "system", "max_tokens", "metadata", "stop_sequences",
	"stream", "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking",
	"output_config", "context_management", "service_tier", "cache_control",
}

// AnthropicRequestToOpenAI converts an inbound Anthropic Messages request
// (/v1/messages) to the canonical OpenAI chat completions request. It keeps
// "model" and "stream"; a streaming request also asks for the usage chunk
// (stream_options.include_usage), which the Anthropic stream needs for its
// final usage. Extended thinking becomes reasoning_effort and top_k stays
// top_k, two members beyond standard chat that ForOpenAI checks against the
// backend; cache_control and clearing context_management edits are dropped
// (see the package documentation). A feature the canonical format cannot
// carry is an *UnsupportedError with Target OpenAI.
func AnthropicRequestToOpenAI(body []byte) ([]byte, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, errBadBody("anthropic request", err)
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !isNull(members[k]) && !slices.Contains(anKnown, k) {
			return nil, unsupported(OpenAI, "parameter %q", k)
		}
	}
	var r anInRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("anthropic request", err)
	}
	effort, err := inboundEffort(&r)
	if err != nil {
		return nil, err
	}
	if err := inboundContextManagement(&r); err != nil {
		return nil, err
	}
	if len(r.Messages) == 0 {
		return nil, errBadBody("anthropic request", errors.New("messages is empty"))
	}

	out := oaOutRequest{
		Model:               r.Model,
		MaxCompletionTokens: r.MaxTokens,
		Temperature:         r.Temperature,
		TopP:                r.TopP,
		Stop:                r.StopSequences,
		Stream:              r.Stream,
		TopK:                r.TopK,
		ReasoningEffort:     effort,
	}
	if r.Stream {
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	if r.Metadata != nil {
		out.User = r.Metadata.UserID
	}
	if err := inboundTools(&r, &out); err != nil {
		return nil, err
	}
	if !isNull(r.System) {
		sys, ok, err := inboundSystem(r.System)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Messages = append(out.Messages, sys)
		}
	}
	for i, m := range r.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return nil, inMessage(i, err)
		}
		var msgs []oaOutMessage
		switch m.Role {
		case "user":
			msgs, err = inboundUser(blocks)
		case "assistant":
			msgs, err = inboundAssistant(blocks)
		default:
			err = errBadBody("anthropic request", fmt.Errorf("unknown role %q", m.Role))
		}
		if err != nil {
			return nil, inMessage(i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	return marshal(out)
}

// inboundEffort maps thinking and output_config.effort to reasoning_effort
// ("" for none). output_config.effort, when given, is the effort (xhigh and
// max, which OpenAI-format backends lack or name differently, become
// "high"), unless thinking is disabled. Otherwise thinking "enabled" maps
// its budget_tokens as effortOfBudget documents, "adaptive" is "high"
// (Anthropic's default effort), "disabled" or none is no reasoning_effort.
// Other thinking types (e.g. "between_tools") and output_config.format
// (structured output, not mapped) are *UnsupportedError. thinking.display
// is not honoured: the backend's reasoning is shown when it returns any.
func inboundEffort(r *anInRequest) (string, error) {
	if oc := r.OutputConfig; oc != nil && !isNull(oc.Format) {
		return "", unsupported(OpenAI, "output_config.format")
	}
	effort := ""
	if oc := r.OutputConfig; oc != nil {
		switch oc.Effort {
		case "":
		case "low", "medium", "high":
			effort = oc.Effort
		case "xhigh", "max":
			effort = "high"
		default:
			return "", unsupported(OpenAI, "output_config.effort %q", oc.Effort)
		}
	}
	th := r.Thinking
	if th == nil {
		return effort, nil
	}
	switch th.Type {
	case "disabled":
		return "", nil
	case "enabled":
		if th.BudgetTokens == nil {
			return "", errBadBody("anthropic request", errors.New("thinking enabled without budget_tokens"))
		}
		if effort == "" {
			effort = effortOfBudget(*th.BudgetTokens)
		}
	case "adaptive":
		if effort == "" {
			effort = "high"
		}
	default:
		return "", unsupported(OpenAI, "thinking of type %q", th.Type)
	}
	return effort, nil
}

// inboundContextManagement checks context_management. Its clearing edits
// (clear_tool_uses_*, clear_thinking_*) only ask Anthropic to trim old tool
// results and thinking from the context it builds; the client keeps the
// whole history. A chat backend gets the whole history instead: they are
// dropped knowingly. Any other edit (compact_*, which returns compaction
// blocks the client must send back) is an *UnsupportedError.
func inboundContextManagement(r *anInRequest) error {
	if r.ContextManagement == nil {
		return nil
	}
	for _, e := range r.ContextManagement.Edits {
		if !strings.HasPrefix(e.Type, "clear_tool_uses_") && !strings.HasPrefix(e.Type, "clear_thinking_") {
			return unsupported(OpenAI, "context_management edit %q", e.Type)
		}
	}
	return nil
}

// inMessage adds the message position to a malformed-body error; an
// UnsupportedError stays as it is, its text being the answer to the client.
func inMessage(i int, err error) error {
	var u *UnsupportedError
	if errors.As(err, &u) {
		return err
	}
	return fmt.Errorf("messages[%d]: %w", i, err)
}

// anthropicBlocks decodes a message content: a string is one text block.
func anthropicBlocks(raw json.RawMessage) ([]anBlock, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []anBlock{textBlock(s)}, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errBadBody("anthropic request: content", err)
	}
	return blocks, nil
}

// inboundSystem maps the system prompt; ok is false when it is empty.
func inboundSystem(raw json.RawMessage) (m oaOutMessage, ok bool, err error) {
	blocks, err := anthropicBlocks(raw)
	if err != nil {
		return oaOutMessage{}, false, err
	}
	var parts []oaOutPart
	for _, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return oaOutMessage{}, false, unsupported(OpenAI, "system block of type %q", b.Type)
		}
		if *b.Text != "" {
			parts = append(parts, oaOutPart{Type: "text", Text: b.Text})
		}
	}
	return oaOutMessage{Role: "system", Content: contentOf(parts)}, len(parts) > 0, nil
}

// contentOf is a lone text as a string, anything else as parts.
func contentOf(parts []oaOutPart) any {
	if len(parts) == 1 && parts[0].Type == "text" {
		return *parts[0].Text
	}
	if len(parts) == 0 {
		return ""
	}
	return parts
}

// inboundUser turns a user turn into OpenAI messages: each tool_result
// becomes a "tool" message, and the other blocks a user message, keeping
// their order.
//
// A chat tool message holds text only, so the images and documents of a
// tool_result go, in order, into a user message right after the run of tool
// messages it belongs to (OpenAI wants every tool message straight after
// the assistant's tool calls), ahead of the turn's own user blocks.
func inboundUser(blocks []anBlock) ([]oaOutMessage, error) {
	var out []oaOutMessage
	var parts []oaOutPart
	var pending []oaOutPart // media from tool results, not yet placed
	flush := func() {
		if len(parts) > 0 {
			parts = append(pending, parts...)
			pending = nil
			out = append(out, oaOutMessage{Role: "user", Content: contentOf(parts)})
			parts = nil
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != nil {
				parts = append(parts, oaOutPart{Type: "text", Text: b.Text})
			}
		case "image", "document":
			p, err := inboundMedia(b)
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case "tool_result":
			flush()
			m, media, err := inboundToolResult(b)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			pending = append(pending, media...)
		default:
			return nil, unsupported(OpenAI, "user content block of type %q", b.Type)
		}
	}
	parts, pending = append(pending, parts...), nil
	flush()
	return out, nil
}

// inboundMedia maps an image, or a document (a base64 PDF only).
func inboundMedia(b anBlock) (oaOutPart, error) {
	if b.Type == "image" {
		return inboundImage(b)
	}
	if b.Source == nil || b.Source.Type != "base64" || b.Source.MediaType != "application/pdf" {
		return oaOutPart{}, unsupported(OpenAI, "a document other than a base64 PDF")
	}
	name := b.Title
	if name == "" {
		name = "document.pdf"
	}
	return oaOutPart{Type: "file", File: &oaOutFile{Filename: name, FileData: "data:application/pdf;base64," + b.Source.Data}}, nil
}

func inboundImage(b anBlock) (oaOutPart, error) {
	if b.Source == nil {
		return oaOutPart{}, errBadBody("anthropic request", errors.New("image without source"))
	}
	switch b.Source.Type {
	case "base64":
		return oaOutPart{Type: "image_url", ImageURL: &oaOutURL{URL: "data:" + b.Source.MediaType + ";base64," + b.Source.Data}}, nil
	case "url":
		return oaOutPart{Type: "image_url", ImageURL: &oaOutURL{URL: b.Source.URL}}, nil
	}
	return oaOutPart{}, unsupported(OpenAI, "image source of type %q", b.Source.Type)
}

// inboundToolResult maps a tool_result to a tool message and the media
// (image and document parts) it held, which the caller places in a user
// message. OpenAI tool messages hold text only, and have no error flag:
// is_error is written into the text as an "Error: " prefix so the model
// still learns the call failed.
func inboundToolResult(b anBlock) (oaOutMessage, []oaOutPart, error) {
	var texts []string
	var media []oaOutPart
	if !isNull(b.Content) {
		blocks, err := anthropicBlocks(b.Content)
		if err != nil {
			return oaOutMessage{}, nil, err
		}
		for _, c := range blocks {
			switch {
			case c.Type == "text" && c.Text != nil:
				texts = append(texts, *c.Text)
			case c.Type == "image" || c.Type == "document":
				p, err := inboundMedia(c)
				if err != nil {
					return oaOutMessage{}, nil, err
				}
				media = append(media, p)
			default:
				return oaOutMessage{}, nil, unsupported(OpenAI, "tool_result content of type %q", c.Type)
			}
		}
	}
	text := strings.Join(texts, "\n")
	if b.IsError {
		text = "Error: " + text
		if len(texts) == 0 {
			text = "Error"
		}
	}
	return oaOutMessage{Role: "tool", Content: text, ToolCallID: b.ToolUseID}, media, nil
}

// inboundAssistant maps an assistant turn: text blocks become the content,
// tool_use blocks tool_calls. Thinking blocks from earlier turns are the
// model's private reasoning, which another model cannot use: they are left
// out.
func inboundAssistant(blocks []anBlock) ([]oaOutMessage, error) {
	var texts []string
	var calls []oaToolCall
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != nil {
				texts = append(texts, *b.Text)
			}
		case "tool_use":
			var tc oaToolCall
			tc.ID, tc.Type = b.ID, "function"
			tc.Function.Name = b.Name
			tc.Function.Arguments = "{}"
			if !isNull(b.Input) {
				tc.Function.Arguments = string(compactJSON(b.Input))
			}
			calls = append(calls, tc)
		case "thinking", "redacted_thinking":
		default:
			return nil, unsupported(OpenAI, "assistant content block of type %q", b.Type)
		}
	}
	m := oaOutMessage{Role: "assistant", ToolCalls: calls}
	if len(texts) > 0 {
		m.Content = strings.Join(texts, "")
	}
	if m.Content == nil && len(calls) == 0 {
		m.Content = ""
	}
	return []oaOutMessage{m}, nil
}

func inboundTools(r *anInRequest, out *oaOutRequest) error {
	for _, t := range r.Tools {
		if t.Type != "" && t.Type != "custom" {
			return unsupported(OpenAI, "server tool %q", t.Type)
		}
		params := json.RawMessage(nil)
		if !isNull(t.InputSchema) {
			params = compactJSON(t.InputSchema)
		}
		out.Tools = append(out.Tools, oaOutTool{Type: "function", Function: oaOutFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Type {
	case "auto":
		out.ToolChoice = "auto"
	case "any":
		out.ToolChoice = "required"
	case "none":
		out.ToolChoice = "none"
	case "tool":
		out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}}
	default:
		return unsupported(OpenAI, "tool_choice of type %q", tc.Type)
	}
	if tc.DisableParallelToolUse && tc.Type != "none" {
		f := false
		out.ParallelToolCalls = &f
	}
	return nil
}
