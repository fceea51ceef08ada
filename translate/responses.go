package translate

import (
	"encoding/json"
	"strings"
)

// # The OpenAI Responses API
//
// A client of POST /v1/responses is served through the canonical format:
// ResponsesRequestToOpenAI turns its request into a Chat Completions request,
// which the gateway sends on as it does any other (or converts again, for
// Anthropic and Gemini); OpenAIResponseToResponses and
// NewOpenAIToResponsesStream turn the chat answer back into a Responses
// object or event stream. Responses errors have the OpenAI error shape
// ({"error":{"message","type","param","code"}}), so ErrorToOpenAI serves
// Responses clients too and there is no Responses error converter. A
// feature chat cannot carry is an *UnsupportedError with Target OpenAI.
//
// Requests. input is a string (one user message) or a list of items.
// Message items (role user, assistant, system or developer; "type" may be
// left out) become chat messages of that role, developer included. Their
// content is a string or parts: input_text and output_text are text,
// refusal (assistant history) a chat refusal part, input_image an
// image_url part (detail low or high kept, auto left out; by file_id
// refused), input_file with file_data a chat "file" part (a data: URL as
// given, bare base64 taken as a PDF; by file_id or file_url refused). Images
// and files are allowed in user messages only, refusals in assistant
// messages only, as in chat. A function_call item becomes a tool call of an
// assistant message: it joins the assistant message just before it (the
// text of the same turn, or the calls before it), so consecutive calls make
// one assistant message with several tool_calls. function_call_output is a
// tool message; its output is a string or input_text parts (images and files
// in a tool output are refused, chat tool messages being text). reasoning
// items are left out when they hold only a summary or reasoning text,
// which another model cannot use; one with encrypted_content is refused, as
// a chat backend cannot decrypt it. item_reference items (and items that
// are only an id) are refused: nothing is stored to look them up in. Any
// other item type (built-in tool calls and their outputs, compaction, …)
// is refused. instructions become a leading system message.
//
// Tools are flat in Responses ({type, name, description, parameters,
// strict}) and nested in chat ({type, function: {…}}); only type function
// is mapped, built-in tools (web_search, file_search, computer_use,
// code_interpreter, mcp, image_generation, shell, custom, …) and function
// members other than those five are refused. strict is passed on when
// given. Without strict, Responses would rewrite the schema into strict mode
// where chat stays non-strict; the schema is not rewritten here, so the chat
// default applies, and the echoed tool says strict false. tool_choice
// "auto", "none" and "required" pass unchanged, {type: function, name}
// becomes {type: function, function: {name}}; allowed_tools and choices of
// built-in tools are refused. text.format text is chat's default and is
// left out; json_object and json_schema {name, description, schema, strict}
// become response_format. text.verbosity becomes chat's verbosity.
// max_output_tokens is max_completion_tokens; temperature, top_p,
// parallel_tool_calls, user and metadata pass as they are; reasoning.effort
// is reasoning_effort, reasoning.summary (and the older generate_summary)
// is ignored: chat has no summaries to ask for. stream sets stream and
// stream_options.include_usage, which the Responses stream needs for its
// final usage.
//
// Ignored, because a chat backend would do nothing differently: model
// (passed on), store (a translated response is not stored anywhere, whatever
// store says), service_tier, prompt_cache_key, prompt_cache_retention,
// safety_identifier, stream_options (obfuscation padding is never sent),
// max_tool_calls (it limits built-in tool calls, which are refused),
// truncation "disabled", background false, an empty include and
// top_logprobs 0. Refused: previous_response_id and conversation (there is
// no stored state to continue), background true, any include value,
// prompt (stored templates), truncation "auto", top_logprobs above 0,
// reasoning members other than effort and summary, text members other than
// format and verbosity, and every other top-level member. Null counts as
// absent. A body that is not a Responses request (not JSON, a member of the
// wrong type, a function_call without call_id, neither input nor
// instructions) is a plain error.
//
// Responses. The id is "resp_" + the chat id without its "chatcmpl-" prefix
// (or a digest of the body when the chat id is empty); item ids are "rs_",
// "msg_" and "fc_" + a digest of the response id and the item's position,
// so the same answer gets the same ids. created_at is the chat answer's
// "created" (0 when it has none, as a chat answer translated from another
// provider: the package reads no clock), and completed_at the same for a
// completed response, null otherwise. service_tier is the chat answer's
// ("default" when it names none); presence_penalty and frequency_penalty
// are 0 (a Responses request has neither), top_logprobs the request's
// (0). Only the first choice is read (Responses
// has no n). output holds, in order, a reasoning item when the chat message
// has reasoning_content (or "reasoning", as some servers name it) with the
// text as one summary_text, a message item (output_text with empty
// annotations and logprobs, then a refusal part for a refusal) when there
// is text or a refusal or nothing else, and a function_call item per tool
// call (call_id is the chat tool call id; empty arguments are "{}", which
// Responses clients parse, in streams too). status is "completed", or
// "incomplete" with incomplete_details.reason "max_output_tokens" for
// finish_reason length and "content_filter" for content_filter; then the
// last output item is "incomplete" too. The SDK-side output_text
// convenience is not written. usage maps prompt_tokens to input_tokens,
// cached_tokens to input_tokens_details.cached_tokens, completion_tokens to
// output_tokens, reasoning_tokens to output_tokens_details.reasoning_tokens.
// The request's instructions, tools, tool_choice, temperature, top_p,
// max_output_tokens, max_tool_calls, text, parallel_tool_calls, metadata,
// store, user, reasoning, prompt_cache_key and safety_identifier are echoed
// with the API's defaults (temperature and top_p 1, tool_choice "auto",
// parallel_tool_calls true, text {format: {type: text}}, store true, tools
// [], metadata {}, truncation "disabled"); previous_response_id is always
// null, being refused.
//
// Streams. The chat chunks become response.created and
// response.in_progress (at the first chunk with choices or usage), then per
// output item response.output_item.added, its content events and
// response.output_item.done: for text, response.content_part.added,
// response.output_text.delta, response.output_text.done and
// response.content_part.done (refusals likewise with response.refusal.delta
// and .done); for reasoning deltas, response.reasoning_summary_part.added,
// response.reasoning_summary_text.delta, .done and
// response.reasoning_summary_part.done; for each tool call (by its chat
// index, several at once if the source interleaves them),
// response.function_call_arguments.delta and .done. An item is closed when
// an item of another kind begins (tool calls stay open while other calls
// stream) and at the finish_reason; an answer with no item at all gets
// one empty message, as in the plain response. The stream ends with
// response.completed, or response.incomplete, carrying the whole response
// with usage, once the finish chunk and the usage chunk are both in (in
// either order, or in one chunk), at "[DONE]", or at End when the usage
// chunk never comes (then usage is null). Every event has a
// sequence_number counting from 0 and is framed "event: <type>\ndata:
// {…}\n\n"; there is no "[DONE]" in a Responses stream. A chat error chunk
// becomes a Responses "error" event ({type, code, message, param,
// sequence_number}) and a *StreamError.

// ---- request, as ResponsesRequestToOpenAI reads it ----

type rsRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []rsTool        `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Text               *rsText         `json:"text"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	MaxToolCalls       *int            `json:"max_tool_calls"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	TopLogprobs        *int            `json:"top_logprobs"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	User               *string         `json:"user"`
	Metadata           json.RawMessage `json:"metadata"`
	Reasoning          *rsReasoning    `json:"reasoning"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	Truncation         *string         `json:"truncation"`
	Background         *bool           `json:"background"`
	Include            []string        `json:"include"`
	PromptCacheKey     *string         `json:"prompt_cache_key"`
	SafetyIdentifier   *string         `json:"safety_identifier"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
}

// rsKnown are the request members ResponsesRequestToOpenAI maps, checks or
// ignores; any other non-null member is refused.
var rsKnown = []string{
	"model", "input", "instructions", "tools", "tool_choice", "text",
	"max_output_tokens", "max_tool_calls", "temperature", "top_p", "top_logprobs",
	"parallel_tool_calls", "user", "metadata", "reasoning", "stream", "store",
	"truncation", "background", "include", "service_tier", "prompt_cache_key",
	"prompt_cache_retention", "safety_identifier", "stream_options",
	"previous_response_id", "conversation", "prompt",
}

// rsTool is a Responses tool: flat, unlike chat's.
type rsTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	raw         map[string]json.RawMessage
}

// rsFunctionMembers are the members of a function tool that map to chat.
var rsFunctionMembers = []string{"type", "name", "description", "parameters", "strict"}

func (t *rsTool) UnmarshalJSON(b []byte) error {
	m, err := decodeObject(b)
	if err != nil {
		return err
	}
	type plain rsTool
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = rsTool(p)
	t.raw = m
	return nil
}

type rsText struct {
	Format    *rsTextFormat `json:"format"`
	Verbosity *string       `json:"verbosity"`
	raw       map[string]json.RawMessage
}

func (t *rsText) UnmarshalJSON(b []byte) error {
	m, err := decodeObject(b)
	if err != nil {
		return err
	}
	type plain rsText
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = rsText(p)
	t.raw = m
	return nil
}

type rsTextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

type rsReasoning struct {
	Effort          *string `json:"effort"`
	Summary         *string `json:"summary"`
	GenerateSummary *string `json:"generate_summary"`
	raw             map[string]json.RawMessage
}

func (r *rsReasoning) UnmarshalJSON(b []byte) error {
	m, err := decodeObject(b)
	if err != nil {
		return err
	}
	type plain rsReasoning
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = rsReasoning(p)
	r.raw = m
	return nil
}

// rsItem is one input item, of any type.
type rsItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        *string         `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent *string         `json:"encrypted_content"`
}

// rsInPart is one part of an input message's content.
type rsInPart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	Refusal  *string `json:"refusal"`
	ImageURL *string `json:"image_url"`
	FileID   *string `json:"file_id"`
	Detail   string  `json:"detail"`
	FileData *string `json:"file_data"`
	FileURL  *string `json:"file_url"`
	Filename string  `json:"filename"`
}

// ---- the chat request ResponsesRequestToOpenAI writes ----

type rsChatRequest struct {
	Model               string            `json:"model,omitempty"`
	Messages            []oaOutMessage    `json:"messages"`
	MaxCompletionTokens *int              `json:"max_completion_tokens,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	TopP                *float64          `json:"top_p,omitempty"`
	Stream              bool              `json:"stream,omitempty"`
	StreamOptions       *oaStreamOptions  `json:"stream_options,omitempty"`
	Tools               []rsChatTool      `json:"tools,omitempty"`
	ToolChoice          any               `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *rsChatRespFormat `json:"response_format,omitempty"`
	ReasoningEffort     string            `json:"reasoning_effort,omitempty"`
	Verbosity           string            `json:"verbosity,omitempty"`
	User                string            `json:"user,omitempty"`
	Metadata            json.RawMessage   `json:"metadata,omitempty"`
}

// rsChatPart is a chat content part, with what Responses parts can carry.
type rsChatPart struct {
	Type     string       `json:"type"`
	Text     *string      `json:"text,omitempty"`
	Refusal  *string      `json:"refusal,omitempty"`
	ImageURL *rsChatImage `json:"image_url,omitempty"`
	File     *oaOutFile   `json:"file,omitempty"`
}

type rsChatImage struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type rsChatTool struct {
	Type     string         `json:"type"`
	Function rsChatFunction `json:"function"`
}

type rsChatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type rsChatRespFormat struct {
	Type       string            `json:"type"`
	JSONSchema *rsChatJSONSchema `json:"json_schema,omitempty"`
}

type rsChatJSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ---- the chat answer, as the response and stream converters read it ----

type rsChatCompletion struct {
	ID          string `json:"id"`
	Created     int64  `json:"created"`
	Model       string `json:"model"`
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
		Message      rsChatMessage `json:"message"`
		FinishReason *string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage"`
}

// rsChatMessage is a chat message or delta; reasoning_content (or
// "reasoning") is a non-standard field some servers use for the model's
// reasoning text.
type rsChatMessage struct {
	Content          *string      `json:"content"`
	Refusal          *string      `json:"refusal"`
	ReasoningContent *string      `json:"reasoning_content"`
	Reasoning        *string      `json:"reasoning"`
	ToolCalls        []oaToolCall `json:"tool_calls"`
}

func (m *rsChatMessage) reasoning() string {
	if m.ReasoningContent != nil && *m.ReasoningContent != "" {
		return *m.ReasoningContent
	}
	if m.Reasoning != nil {
		return *m.Reasoning
	}
	return ""
}

// ---- the Responses object the converters write ----

type rsResponse struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	CompletedAt        *int64          `json:"completed_at"` // null unless status is completed
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              json.RawMessage `json:"error"`
	IncompleteDetails  *rsIncomplete   `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	MaxToolCalls       *int            `json:"max_tool_calls"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	PromptCacheKey     *string         `json:"prompt_cache_key"`
	Reasoning          rsReasoningEcho `json:"reasoning"`
	SafetyIdentifier   *string         `json:"safety_identifier"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	PresencePenalty    float64         `json:"presence_penalty"`
	FrequencyPenalty   float64         `json:"frequency_penalty"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              []rsToolEcho    `json:"tools"`
	TopP               float64         `json:"top_p"`
	TopLogprobs        int             `json:"top_logprobs"`
	ServiceTier        string          `json:"service_tier"`
	Truncation         string          `json:"truncation"`
	Usage              *rsUsage        `json:"usage"`
	User               *string         `json:"user"`
	Metadata           json.RawMessage `json:"metadata"`
}

type rsIncomplete struct {
	Reason string `json:"reason"`
}

type rsReasoningEcho struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type rsToolEcho struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type rsUsage struct {
	InputTokens         int             `json:"input_tokens"`
	InputTokensDetails  rsInputDetails  `json:"input_tokens_details"`
	OutputTokens        int             `json:"output_tokens"`
	OutputTokensDetails rsOutputDetails `json:"output_tokens_details"`
	TotalTokens         int             `json:"total_tokens"`
}

type rsInputDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type rsOutputDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// usageFromChat maps chat usage to Responses usage; nil stays nil.
func usageFromChat(u *oaUsage) *rsUsage {
	if u == nil {
		return nil
	}
	out := &rsUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	if u.PromptTokensDetails != nil {
		out.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		out.OutputTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return out
}

// Output items. Each is its own type, so that the members an item must
// always have (a message's content, a reasoning item's summary) are written
// even when empty.

type rsMessageItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"` // "message"
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type rsOutputText struct {
	Type        string `json:"type"` // "output_text"
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type rsRefusalPart struct {
	Type    string `json:"type"` // "refusal"
	Refusal string `json:"refusal"`
}

type rsFunctionCallItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // "function_call"
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type rsReasoningItem struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"` // "reasoning"
	Summary []rsSummaryText `json:"summary"`
}

type rsSummaryText struct {
	Type string `json:"type"` // "summary_text"
	Text string `json:"text"`
}

func outputText(text string) rsOutputText {
	return rsOutputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}

// responseID derives the Responses id from a chat completion id; seed
// stands in for an empty one.
func responseID(chatID, seed string) string {
	rest := strings.TrimPrefix(chatID, "chatcmpl-")
	if rest == "" {
		return "resp_" + shortHash("responses", seed)
	}
	return "resp_" + rest
}

// itemID is the id of the output item at position pos of response id.
func itemID(prefix, id string, pos int) string {
	return prefix + shortHash(id, prefix, itoa(pos))
}

// echo is what a response repeats of its request.
type echo struct {
	r     rsRequest
	model string
}

// parseEcho reads the request members a response echoes; nil is a request
// that set none of them.
func parseEcho(req []byte) (*echo, error) {
	e := &echo{}
	if len(req) == 0 {
		return e, nil
	}
	if err := json.Unmarshal(req, &e.r); err != nil {
		return nil, errBadBody("responses request", err)
	}
	e.model = e.r.Model
	return e, nil
}

// response is the Responses object for id and model, status in_progress,
// no output, with the request's settings echoed.
func (e *echo) response(id, model string) *rsResponse {
	r := &e.r
	out := &rsResponse{
		ID:                id,
		Object:            "response",
		Status:            "in_progress",
		Error:             jsonNull,
		Instructions:      r.Instructions,
		MaxOutputTokens:   r.MaxOutputTokens,
		MaxToolCalls:      r.MaxToolCalls,
		Model:             model,
		Output:            []any{},
		ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		PromptCacheKey:    r.PromptCacheKey,
		SafetyIdentifier:  r.SafetyIdentifier,
		Store:             r.Store == nil || *r.Store,
		Temperature:       1,
		Text:              json.RawMessage(`{"format":{"type":"text"}}`),
		ToolChoice:        json.RawMessage(`"auto"`),
		Tools:             []rsToolEcho{},
		TopP:              1,
		ServiceTier:       "default",
		Truncation:        "disabled",
		User:              r.User,
		Metadata:          json.RawMessage("{}"),
	}
	if model == "" {
		out.Model = e.model
	}
	if r.TopLogprobs != nil {
		out.TopLogprobs = *r.TopLogprobs
	}
	if r.Temperature != nil {
		out.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		out.TopP = *r.TopP
	}
	if r.Text != nil {
		out.Text = mustMarshal(textEcho(r.Text))
	}
	if !isNull(r.ToolChoice) {
		out.ToolChoice = compactJSON(r.ToolChoice)
	}
	if !isNull(r.Metadata) {
		out.Metadata = compactJSON(r.Metadata)
	}
	if r.Reasoning != nil {
		out.Reasoning = rsReasoningEcho{Effort: r.Reasoning.Effort, Summary: r.Reasoning.Summary}
		if out.Reasoning.Summary == nil {
			out.Reasoning.Summary = r.Reasoning.GenerateSummary
		}
	}
	for _, t := range r.Tools {
		params := t.Parameters
		if isNull(params) {
			params = jsonNull
		}
		out.Tools = append(out.Tools, rsToolEcho{
			Type: t.Type, Name: t.Name, Description: t.Description,
			Parameters: compactJSON(params), Strict: t.Strict != nil && *t.Strict,
		})
	}
	return out
}

// textEcho is the text setting as the API echoes it: format text by
// default.
func textEcho(t *rsText) any {
	type format struct {
		Type        string          `json:"type"`
		Name        string          `json:"name,omitempty"`
		Description *string         `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	out := struct {
		Format    format  `json:"format"`
		Verbosity *string `json:"verbosity,omitempty"`
	}{Format: format{Type: "text"}, Verbosity: t.Verbosity}
	if f := t.Format; f != nil && f.Type != "" {
		out.Format = format{Type: f.Type, Name: f.Name, Description: f.Description, Strict: f.Strict}
		if !isNull(f.Schema) {
			out.Format.Schema = compactJSON(f.Schema)
		}
	}
	return out
}

// finish sets what r says once its answer is in: its status (and why it
// is incomplete) from the chat finish_reason, completed_at for a completed
// response, and the service tier the chat answer reports (tier, "" when it
// reports none).
func (r *rsResponse) finish(finish, tier string) {
	r.Status, r.IncompleteDetails = finishStatus(finish)
	if r.Status == "completed" {
		at := r.CreatedAt
		r.CompletedAt = &at
	}
	if tier != "" {
		r.ServiceTier = tier
	}
}

// finishStatus maps a chat finish_reason to a Responses status and the
// reason it is incomplete.
func finishStatus(finish string) (status string, incomplete *rsIncomplete) {
	switch finish {
	case "length":
		return "incomplete", &rsIncomplete{Reason: "max_output_tokens"}
	case "content_filter":
		return "incomplete", &rsIncomplete{Reason: "content_filter"}
	}
	return "completed", nil
}
