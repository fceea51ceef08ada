package translate

import "encoding/json"

// This file holds the Anthropic Messages API wire types.

type anRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	System        json.RawMessage `json:"system,omitempty"`
	Messages      []anMessage     `json:"messages"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	Tools         []anTool        `json:"tools,omitempty"`
	ToolChoice    *anToolChoice   `json:"tool_choice,omitempty"`
	Metadata      *anMetadata     `json:"metadata,omitempty"`
	Thinking      json.RawMessage `json:"thinking,omitempty"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

// anBlock is a content block of any type; each type uses some of the fields.
type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Source    *anSource       `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
	Title     string          `json:"title,omitempty"` // document
}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anTool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: &s} }

// ---- response ----

type anResponse struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// toOpenAI maps Anthropic usage to OpenAI's: OpenAI's prompt_tokens counts
// every input token, cached or not, where Anthropic's input_tokens leaves out
// the tokens written to or read from the prompt cache.
func (u anUsage) toOpenAI() *oaUsage {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	o := &oaUsage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens}
	if u.CacheReadInputTokens > 0 {
		o.PromptTokensDetails = &oaPromptDetails{CachedTokens: u.CacheReadInputTokens}
	}
	return o
}

// anUsageFromOpenAI is the reverse of anUsage.toOpenAI: cached prompt tokens
// become cache reads.
func anUsageFromOpenAI(u *oaUsage) anUsage {
	if u == nil {
		return anUsage{}
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	}
	return anUsage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
}

// ---- stream events ----

type anStreamEvent struct {
	Type         string          `json:"type"`
	Message      *anResponse     `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock *anBlock        `json:"content_block,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"`
	Usage        *anDeltaUsage   `json:"usage,omitempty"`
}

type anBlockDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	PartialJSON string `json:"partial_json,omitempty"`
}

type anMessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// anDeltaUsage is the usage of a message_delta event: cumulative totals,
// each present only when the server sends it.
type anDeltaUsage struct {
	InputTokens              *int `json:"input_tokens,omitempty"`
	OutputTokens             int  `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens,omitempty"`
}

// ---- error ----

type anErrorBody struct {
	Type  string  `json:"type"`
	Error anError `json:"error"`
}

type anError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ---- stop reasons ----

// anStopToOpenAI maps an Anthropic stop_reason to an OpenAI finish_reason.
// pause_turn (a server tool paused a long turn) ends this response without an
// error, as "stop"; an unknown reason is reported as "stop" too.
func anStopToOpenAI(r string) string {
	switch r {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return "stop"
	}
}

// openAIFinishToAnthropic maps an OpenAI finish_reason to an Anthropic
// stop_reason. OpenAI does not say which stop sequence matched, so "stop"
// always becomes end_turn.
func openAIFinishToAnthropic(r string) string {
	switch r {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}
