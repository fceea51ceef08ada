package translate

import (
	"bytes"
	"encoding/json"
)

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

// anThinking is the thinking member of a request.
type anThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
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
	Title     string          `json:"title,omitempty"`     // document
	Thinking  *string         `json:"thinking,omitempty"`  // thinking
	Signature *string         `json:"signature,omitempty"` // thinking: written as "" when there is none
	// Caller is who called a tool in a tool_use block of an answer:
	// {"type": "direct"} for the model itself, as every call a translated
	// answer holds is (programmatic calls from Anthropic's code execution
	// have no counterpart elsewhere). Never set on requests.
	Caller *anCaller `json:"caller,omitempty"`
	// A text block of a translated answer has no citations member: the
	// Messages API leaves it out of a block that cites nothing (and
	// clients that validate it take an array or nothing, never null).
}

// anCaller is the caller of a tool_use block.
type anCaller struct {
	Type string `json:"type"`
}

// directCaller is the caller of a tool the model called itself.
var directCaller = &anCaller{Type: "direct"}

type anSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// UnmarshalJSON reads a source object, and takes a string (the source of a
// search_result block is its URL or name) as an empty source, so that the
// block is refused by its type rather than as malformed JSON.
func (s *anSource) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		*s = anSource{}
		return nil
	}
	type plain anSource
	return json.Unmarshal(b, (*plain)(s))
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

// anResponse is a Message. Written by this package, stop_details,
// container and diagnostics are always null: a translated response has no
// refusal category, no code-execution container and no cache diagnostics.
type anResponse struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []anBlock       `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
	Diagnostics  json.RawMessage `json:"diagnostics"`
	Usage        anUsage         `json:"usage"`
}

// anUsage is a Message's usage. Every member the Messages API documents is
// written; inference_geo is null (a translated backend does not say where it
// ran).
type anUsage struct {
	InputTokens              int              `json:"input_tokens"`
	OutputTokens             int              `json:"output_tokens"`
	CacheCreationInputTokens int              `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int              `json:"cache_read_input_tokens"`
	CacheCreation            *anCacheCreation `json:"cache_creation,omitempty"`
	OutputTokensDetails      *anOutputDetails `json:"output_tokens_details,omitempty"`
	ServerToolUse            *anServerToolUse `json:"server_tool_use,omitempty"`
	ServiceTier              string           `json:"service_tier,omitempty"`
	Speed                    string           `json:"speed,omitempty"`
	InferenceGeo             *string          `json:"inference_geo"`
}

// anCacheCreation splits cache writes by time to live.
type anCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type anOutputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

type anServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
	WebFetchRequests  int `json:"web_fetch_requests"`
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
	if d := u.OutputTokensDetails; d != nil && d.ThinkingTokens > 0 {
		o.CompletionTokensDetails = &oaCompleteDetails{ReasoningTokens: d.ThinkingTokens}
	}
	return o
}

// anUsageFromOpenAI is the reverse of anUsage.toOpenAI: cached prompt tokens
// (prompt_tokens_details.cached_tokens) become cache_read_input_tokens and
// are taken out of input_tokens; reasoning tokens become
// output_tokens_details.thinking_tokens. OpenAI-format backends cache
// without a separate write, so cache_creation_input_tokens is 0. A nil u
// (the backend reported none) is all zeros. tier is the OpenAI service_tier
// of the response: "priority" stays priority, anything else is standard.
func anUsageFromOpenAI(u *oaUsage, tier string) anUsage {
	out := anUsage{
		CacheCreation: &anCacheCreation{},
		ServerToolUse: &anServerToolUse{},
		ServiceTier:   "standard",
		Speed:         "standard",
	}
	if tier == "priority" {
		out.ServiceTier = "priority"
	}
	if u == nil {
		out.OutputTokensDetails = &anOutputDetails{}
		return out
	}
	cached := 0
	if u.PromptTokensDetails != nil {
		cached = min(max(u.PromptTokensDetails.CachedTokens, 0), u.PromptTokens)
	}
	out.InputTokens = u.PromptTokens - cached
	out.OutputTokens = u.CompletionTokens
	out.CacheReadInputTokens = cached
	out.OutputTokensDetails = &anOutputDetails{}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ThinkingTokens = d.ReasoningTokens
	}
	return out
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
	Thinking    string `json:"thinking,omitempty"`
}

// anMessageDelta is the delta of a message_delta event; as written here,
// stop_details and container are null (see anResponse).
type anMessageDelta struct {
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	StopDetails  json.RawMessage `json:"stop_details"`
	Container    json.RawMessage `json:"container"`
}

// anDeltaUsage is the usage of a message_delta event: cumulative totals,
// each present only when the server sends it.
type anDeltaUsage struct {
	InputTokens              *int             `json:"input_tokens,omitempty"`
	OutputTokens             int              `json:"output_tokens"`
	CacheCreationInputTokens *int             `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int             `json:"cache_read_input_tokens,omitempty"`
	OutputTokensDetails      *anOutputDetails `json:"output_tokens_details,omitempty"`
	ServerToolUse            *anServerToolUse `json:"server_tool_use,omitempty"`
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

// ---- extended thinking and reasoning effort ----

// Budgets of thinking.budget_tokens and the reasoning_effort they map to.
// From Anthropic: below 4096 is "low", below 16384 "medium", else "high".
// To Anthropic, each effort gets a budget inside its own band, so a round
// trip keeps the effort: low 2048, medium 8192, high 16384, xhigh 32768.
// Anthropic's minimum budget is 1024.
const (
	thinkingLowBelow    = 4096
	thinkingMediumBelow = 16384
)

// effortOfBudget maps thinking.budget_tokens to a reasoning_effort.
func effortOfBudget(budget int) string {
	switch {
	case budget < thinkingLowBelow:
		return "low"
	case budget < thinkingMediumBelow:
		return "medium"
	default:
		return "high"
	}
}

// budgetOfEffort maps a reasoning_effort to thinking.budget_tokens; 0 means
// no thinking ("none", "minimal": Anthropic has no thinking smaller than
// 1024 tokens, and no thinking is the closer answer). ok is false for a
// value it does not know.
func budgetOfEffort(effort string) (budget int, ok bool) {
	switch effort {
	case "none", "minimal":
		return 0, true
	case "low":
		return 2048, true
	case "medium":
		return 8192, true
	case "high":
		return 16384, true
	case "xhigh":
		return 32768, true
	}
	return 0, false
}
