package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the Anthropic Messages API flavour: the request the sim
// reads from POST /v1/messages, the message it answers, its stream events
// and its error bodies.

type anthropicBody struct {
	Model      string               `json:"model"`
	MaxTokens  *int                 `json:"max_tokens"`
	Messages   []anthropicInMessage `json:"messages"`
	System     json.RawMessage      `json:"system"`
	Stream     bool                 `json:"stream"`
	Tools      []anthropicTool      `json:"tools"`
	ToolChoice *anthropicToolChoice `json:"tool_choice"`
	Thinking   json.RawMessage      `json:"thinking"`
}

type anthropicInMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicInBlock is a content block of a request: text, tool_use,
// tool_result (whose content is a string or blocks), image, ...
type anthropicInBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// anthropicTool is an entry of tools. Client tools have an input_schema;
// server tools (web search, code execution, ...) have a versioned type and
// none, and the sim never calls them.
type anthropicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicToolChoice struct {
	Type string `json:"type"` // auto, any, tool, none
	Name string `json:"name"`
}

// parseMessages decodes an Anthropic Messages request. max_tokens is
// required, as Anthropic requires it. Errors wrap errBadRequest.
func parseMessages(body []byte) (*request, error) {
	var b anthropicBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, badRequest("could not parse the JSON body of your request: %v", err)
	}
	if b.MaxTokens == nil {
		return nil, badRequest("max_tokens: Field required")
	}
	if *b.MaxTokens < 1 {
		return nil, badRequest("max_tokens: Input should be greater than or equal to 1")
	}
	if len(b.Messages) == 0 {
		return nil, badRequest("messages: at least one message is required")
	}
	var text strings.Builder
	chars := 0
	add := func(s string) {
		chars += utf8.RuneCountInString(s)
		text.WriteString(s)
		text.WriteByte('\n')
	}
	sys, _, err := anthropicText(b.System, 0)
	if err != nil {
		return nil, badRequest("system: %v", err)
	}
	add(sys)
	lastIsResult := false
	for i, m := range b.Messages {
		s, results, err := anthropicText(m.Content, 0)
		if err != nil {
			return nil, badRequest("messages.%d.content: %v", i, err)
		}
		add(s)
		lastIsResult = results
	}
	r := &request{op: opMessages, model: b.Model, prompt: text.String(), promptTokens: estimateTokens(chars),
		maxTokens: *b.MaxTokens, stream: b.Stream, showThought: true}
	if r.reasoning, err = thinkingTokens(b.Thinking, *b.MaxTokens); err != nil {
		return nil, err
	}

	var tools []toolSpec
	for _, t := range b.Tools {
		if len(t.InputSchema) > 0 && (t.Type == "" || t.Type == "custom") {
			tools = append(tools, toolSpec{name: t.Name, schema: t.InputSchema})
		}
	}
	forbid, forced := false, ""
	if c := b.ToolChoice; c != nil {
		switch c.Type {
		case "none":
			forbid = true
		case "tool":
			forced = c.Name
		}
	}
	last := b.Messages[len(b.Messages)-1].Role == "user" && !lastIsResult
	if r.tool, err = chooseTool(tools, forbid, forced, last); err != nil {
		return nil, err
	}
	return r, nil
}

// anthropicText returns the text of a system prompt or message content (a
// string or an array of blocks: text blocks, and the text inside
// tool_result blocks) and whether it holds a tool_result. null is empty.
func anthropicText(raw json.RawMessage, depth int) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, false, err
	}
	var blocks []anthropicInBlock
	if depth > 2 || json.Unmarshal(raw, &blocks) != nil {
		return "", false, errors.New("must be a string or an array of content blocks")
	}
	var sb strings.Builder
	results := false
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			sb.WriteString(bl.Text)
		case "tool_result":
			results = true
			s, _, err := anthropicText(bl.Content, depth+1)
			if err != nil {
				return "", false, err
			}
			sb.WriteString(s)
		}
	}
	return sb.String(), results, nil
}

// anthropicMessage is a Messages API response, with every member the
// Messages API writes: stop_details and container are null (the sim has
// no refusal categories and no code execution).
type anthropicMessage struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []any           `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
	Usage        anthropicUsage  `json:"usage"`
}

// anthropicUsage is a message's usage: the sim caches nothing, calls no
// server tool and runs on the standard tier.
type anthropicUsage struct {
	InputTokens              int64                    `json:"input_tokens"`
	CacheCreationInputTokens int64                    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64                    `json:"cache_read_input_tokens"`
	CacheCreation            anthropicCacheCreation   `json:"cache_creation"`
	OutputTokens             int64                    `json:"output_tokens"`
	OutputTokensDetails      anthropicOutputDetails   `json:"output_tokens_details"`
	ServerToolUse            anthropicServerToolUsage `json:"server_tool_use"`
	ServiceTier              string                   `json:"service_tier"`
	InferenceGeo             *string                  `json:"inference_geo"`
}

type anthropicCacheCreation struct {
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
}

// anthropicOutputDetails counts the thinking among the output tokens.
type anthropicOutputDetails struct {
	ThinkingTokens int64 `json:"thinking_tokens"`
}

type anthropicServerToolUsage struct {
	WebSearchRequests int64 `json:"web_search_requests"`
	WebFetchRequests  int64 `json:"web_fetch_requests"`
}

// anthropicTextBlock is a text block. It has no citations member: Anthropic
// writes none on a block that cites nothing.
type anthropicTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// anthropicThinkingBlock is a thinking block: the thought and its
// signature.
type anthropicThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthropicToolUseBlock struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Caller anthropicCaller `json:"caller"`
}

// anthropicCaller says who called a tool: the model itself, for the sim.
type anthropicCaller struct {
	Type string `json:"type"`
}

// stopReason maps the answer's finish to Anthropic's stop_reason.
func (a *answer) stopReason() string {
	switch a.finish {
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	case "tool_calls":
		return "tool_use"
	default:
		return "end_turn"
	}
}

// anthropicBody is the whole (non-streamed) message.
func (a *answer) anthropicBody() anthropicMessage {
	stop := a.stopReason()
	m := a.anthropicStart()
	m.StopReason = &stop
	m.Usage = a.anthropicUsage(a.completionTokens())
	if len(a.thought) > 0 {
		m.Content = append(m.Content, anthropicThinkingBlock{Type: "thinking", Thinking: strings.Join(a.thought, ""), Signature: a.signature})
	}
	if a.tool != nil {
		m.Content = append(m.Content, a.toolUseBlock(json.RawMessage(a.tool.args)))
	} else {
		m.Content = append(m.Content, anthropicTextBlock{Type: "text", Text: a.text()})
	}
	return m
}

func (a *answer) toolUseBlock(input json.RawMessage) anthropicToolUseBlock {
	return anthropicToolUseBlock{Type: "tool_use", ID: a.tool.id, Name: a.tool.name, Input: input, Caller: anthropicCaller{Type: "direct"}}
}

// anthropicStart is the message of message_start: no content yet, no stop
// reason, one output token.
func (a *answer) anthropicStart() anthropicMessage {
	return anthropicMessage{
		ID: a.id, Type: "message", Role: "assistant", Model: a.model, Content: []any{},
		StopDetails: nullJSON, Container: nullJSON, Usage: a.anthropicUsage(1),
	}
}

// anthropicUsage is the usage with output output tokens, of which the
// thought's are thinking tokens.
func (a *answer) anthropicUsage(output int64) anthropicUsage {
	return anthropicUsage{
		InputTokens: a.promptTokens, OutputTokens: output,
		OutputTokensDetails: anthropicOutputDetails{ThinkingTokens: min(a.reasoningTokens(), output)},
		ServiceTier:         "standard",
	}
}

// anthropicEvents lays out a stream: message_start (waits
// plan.firstToken); with a thought first a thinking block (start, ping,
// one thinking_delta per word, a signature_delta, stop); then
// content_block_start, ping (once per stream), one content_block_delta
// per word (text_delta) or per argument fragment (input_json_delta; the
// block is then a tool_use block with empty input), each after the very
// first waiting plan.perToken, content_block_stop, message_delta with the
// stop reason and the usage, and message_stop.
func (a *answer) anthropicEvents(plan timing) []sseEvent {
	var evs []sseEvent
	add := func(name string, delay time.Duration, v any) {
		evs = append(evs, sseEvent{name: name, delay: delay, data: mustJSON(v)})
	}
	type typed struct {
		Type string `json:"type"`
	}
	add("message_start", plan.firstToken, struct {
		Type    string           `json:"type"`
		Message anthropicMessage `json:"message"`
	}{"message_start", a.anthropicStart()})

	index := 0
	block := func(b any) {
		add("content_block_start", 0, struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock any    `json:"content_block"`
		}{"content_block_start", index, b})
	}
	blockDelta := func(delay time.Duration, d any) {
		add("content_block_delta", delay, struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta any    `json:"delta"`
		}{"content_block_delta", index, d})
	}
	stop := func() {
		add("content_block_stop", 0, struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", index})
		index++
	}
	pinged := false
	ping := func() {
		if !pinged {
			add("ping", 0, typed{"ping"})
			pinged = true
		}
	}
	wait := func(i int) time.Duration {
		if i == 0 && index == 0 {
			return 0
		}
		return plan.perToken
	}
	if len(a.thought) > 0 {
		block(anthropicThinkingBlock{Type: "thinking"})
		ping()
		for i, w := range a.thought {
			blockDelta(wait(i), struct {
				Type     string `json:"type"`
				Thinking string `json:"thinking"`
			}{"thinking_delta", w})
		}
		blockDelta(0, struct {
			Type      string `json:"type"`
			Signature string `json:"signature"`
		}{"signature_delta", a.signature})
		stop()
	}
	if a.tool != nil {
		block(a.toolUseBlock(json.RawMessage("{}")))
		ping()
		for i, p := range a.tool.fragments() {
			blockDelta(wait(i), struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
			}{"input_json_delta", p})
		}
	} else {
		block(anthropicTextBlock{Type: "text"})
		ping()
		for i, w := range a.words {
			blockDelta(wait(i), struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}{"text_delta", w})
		}
	}
	stop()
	delta := anthropicMessageDelta{Type: "message_delta", Delta: anthropicStopDelta{StopReason: a.stopReason(), StopDetails: nullJSON, Container: nullJSON},
		Usage: a.anthropicUsage(a.completionTokens())}
	add("message_delta", 0, delta)
	add("message_stop", 0, typed{"message_stop"})
	evs[len(evs)-2].final, evs[len(evs)-1].final = true, true
	return evs
}

// anthropicMessageDelta is the message_delta event near the end of a
// stream.
// Its usage is cumulative, every member written.
type anthropicMessageDelta struct {
	Type  string             `json:"type"`
	Delta anthropicStopDelta `json:"delta"`
	Usage anthropicUsage     `json:"usage"`
}

type anthropicStopDelta struct {
	StopReason   string          `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
}

// anthropicErrorBody is Anthropic's error shape:
// {"type":"error","error":{"type":"...","message":"..."}}.
type anthropicErrorBody struct {
	Type  string         `json:"type"`
	Error anthropicError `json:"error"`
}

type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func anthropicErr(status int, typ, msg string) apiError {
	return apiError{status: status, body: anthropicErrorBody{Type: "error", Error: anthropicError{Type: typ, Message: msg}}}
}

// anthropicOverloaded is the 529 Anthropic answers when it is overloaded.
func anthropicOverloaded() apiError {
	return anthropicErr(529, "overloaded_error", "Overloaded")
}

// anthropicRateLimited is the 429 body for a refusal by the limit kind.
func anthropicRateLimited(model string, a admission, lim limits) apiError {
	if a.limitedBy == limitTokens {
		return anthropicErr(http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("This request would exceed your organization's rate limit of %d tokens per minute (org: switchover-sim, model: %s). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.", lim.tpm, model))
	}
	return anthropicErr(http.StatusTooManyRequests, "rate_limit_error",
		fmt.Sprintf("This request would exceed your organization's rate limit of %d requests per minute (org: switchover-sim, model: %s). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please try again later.", lim.rpm, model))
}
