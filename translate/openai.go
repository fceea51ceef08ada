package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// This file holds the OpenAI Chat Completions wire types: the request as the
// converters read it, and the response, chunk and error bodies they write.

// ---- request ----

type oaRequest struct {
	Model               string            `json:"model"`
	Messages            []oaMessage       `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	N                   *int              `json:"n"`
	Stop                json.RawMessage   `json:"stop"`
	Stream              bool              `json:"stream"`
	Tools               []oaTool          `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	ResponseFormat      *oaResponseFormat `json:"response_format"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	Seed                *int64            `json:"seed"`
	Logprobs            *bool             `json:"logprobs"`
	TopLogprobs         *int              `json:"top_logprobs"`
	LogitBias           map[string]any    `json:"logit_bias"`
	Modalities          []string          `json:"modalities"`
	Audio               json.RawMessage   `json:"audio"`
	User                string            `json:"user"`
}

type oaMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         string          `json:"name"`
	ToolCalls    []oaToolCall    `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	Refusal      *string         `json:"refusal"`
	FunctionCall json.RawMessage `json:"function_call"`
	Audio        json.RawMessage `json:"audio"`
}

// oaPart is one element of a multi-part message content.
type oaPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
	File     *struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
		Filename string `json:"filename"`
	} `json:"file"`
	Refusal string `json:"refusal"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type oaResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// oaIgnored are request members that change nothing a target could honour
// differently: routing, storage and telemetry hints. "user" is mapped where a
// target has a place for it.
var oaIgnored = []string{
	"model", "stream", "stream_options", "user", "metadata", "store",
	"service_tier", "prompt_cache_key", "safety_identifier",
}

// oaMapped are request members the converters translate or check.
var oaMapped = []string{
	"messages", "max_tokens", "max_completion_tokens", "temperature", "top_p",
	"n", "stop", "tools", "tool_choice", "parallel_tool_calls", "response_format",
	"presence_penalty", "frequency_penalty", "seed", "logprobs", "top_logprobs",
	"logit_bias", "modalities", "audio",
}

// parseOpenAIRequest decodes an OpenAI chat completions request for target.
// A member it does not know, with a non-null value, is a feature it cannot
// promise to honour: UnsupportedError. So is any option both targets lack.
func parseOpenAIRequest(body []byte, target Format) (*oaRequest, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, errBadBody("openai request", err)
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if isNull(members[k]) || slices.Contains(oaIgnored, k) || slices.Contains(oaMapped, k) {
			continue
		}
		return nil, unsupported(target, "parameter %q", k)
	}
	var r oaRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("openai request", err)
	}
	if len(r.Messages) == 0 {
		return nil, errBadBody("openai request", errors.New("messages is empty"))
	}
	if r.Logprobs != nil && *r.Logprobs {
		return nil, unsupported(target, "logprobs")
	}
	if r.TopLogprobs != nil && *r.TopLogprobs > 0 {
		return nil, unsupported(target, "top_logprobs")
	}
	if len(r.LogitBias) > 0 {
		return nil, unsupported(target, "logit_bias")
	}
	if !isNull(r.Audio) {
		return nil, unsupported(target, "audio output")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return nil, unsupported(target, "%s output", m)
		}
	}
	for i, m := range r.Messages {
		if !isNull(m.FunctionCall) {
			return nil, unsupported(target, "legacy function_call in messages[%d]", i)
		}
		if !isNull(m.Audio) {
			return nil, unsupported(target, "assistant audio in messages[%d]", i)
		}
	}
	return &r, nil
}

// maxOutput is the request's output token limit, max_completion_tokens
// winning over the older max_tokens; nil when neither is set.
func (r *oaRequest) maxOutput() *int {
	if r.MaxCompletionTokens != nil {
		return r.MaxCompletionTokens
	}
	return r.MaxTokens
}

// stops returns the stop sequences, accepting a string or a list.
func (r *oaRequest) stops() ([]string, error) {
	if isNull(r.Stop) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(r.Stop, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(r.Stop, &list); err != nil {
		return nil, errBadBody("openai request: stop", err)
	}
	return slices.DeleteFunc(list, func(s string) bool { return s == "" }), nil
}

// toolChoice is a decoded tool_choice: mode is "", "none", "auto",
// "required" or "function" (then name is set).
type toolChoice struct {
	mode string
	name string
}

func (r *oaRequest) toolChoice(target Format) (toolChoice, error) {
	if isNull(r.ToolChoice) {
		return toolChoice{}, nil
	}
	var s string
	if err := json.Unmarshal(r.ToolChoice, &s); err == nil {
		switch s {
		case "none", "auto", "required":
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, unsupported(target, "tool_choice %q", s)
	}
	var o struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(r.ToolChoice, &o); err != nil {
		return toolChoice{}, errBadBody("openai request: tool_choice", err)
	}
	if o.Type != "function" || o.Function.Name == "" {
		return toolChoice{}, unsupported(target, "tool_choice of type %q", o.Type)
	}
	return toolChoice{mode: "function", name: o.Function.Name}, nil
}

// functionTools checks that every tool is a function tool with a name.
func (r *oaRequest) functionTools(target Format) error {
	for i, t := range r.Tools {
		if t.Type != "function" {
			return unsupported(target, "tool type %q", t.Type)
		}
		if t.Function == nil || t.Function.Name == "" {
			return errBadBody("openai request", fmt.Errorf("tools[%d] has no function name", i))
		}
	}
	return nil
}

// parseContent returns a message content as parts: a string is one text
// part, null is none.
func parseContent(raw json.RawMessage) ([]oaPart, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []oaPart{{Type: "text", Text: s}}, nil
	}
	var parts []oaPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errBadBody("openai request: message content", err)
	}
	return parts, nil
}

// imageURL returns the url of an image_url part, which clients send as an
// object {"url": …} or, in older code, a bare string.
func (p *oaPart) imageURL() (string, error) {
	var o struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(p.ImageURL, &o); err == nil && o.URL != "" {
		return o.URL, nil
	}
	var s string
	if err := json.Unmarshal(p.ImageURL, &s); err == nil && s != "" {
		return s, nil
	}
	return "", errBadBody("openai request", errors.New("image_url part without a url"))
}

// parseDataURL splits "data:<mime>;base64,<data>".
func parseDataURL(u string) (mime, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mime, found = strings.CutSuffix(meta, ";base64")
	if !found || mime == "" {
		return "", "", false
	}
	return mime, data, true
}

// textOf joins the text of parts that must all be text (system and tool
// messages); other kinds are unsupported in that position for target.
func textOf(parts []oaPart, target Format, where string) ([]string, error) {
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, p.Text)
		case "refusal":
			out = append(out, p.Refusal)
		default:
			return nil, unsupported(target, "%s content of type %q", where, p.Type)
		}
	}
	return out, nil
}

// argumentsObject checks that tool call arguments are a JSON object ("" is
// taken as {}) and returns them compacted.
func argumentsObject(args string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(args))
	if len(t) == 0 {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errBadBody("openai request", errors.New("tool call arguments are not a JSON object"))
	}
	return compactJSON(t), nil
}

type oaToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	// ExtraContent carries Google's thought signature in Gemini's own
	// OpenAI-compatible API; read on requests to Gemini when a client kept it.
	ExtraContent *struct {
		Google struct {
			ThoughtSignature string `json:"thought_signature"`
		} `json:"google"`
	} `json:"extra_content,omitempty"`
}

// ---- response ----

type oaCompletion struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int             `json:"index"`
	Message      oaRespMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// oaRespMessage is a choice's message. Written by this package,
// annotations is an empty array, as OpenAI writes it on a message that
// cites nothing.
type oaRespMessage struct {
	Role        string       `json:"role"`
	Content     *string      `json:"content"`
	Refusal     *string      `json:"refusal"`
	ToolCalls   []oaToolCall `json:"tool_calls,omitempty"`
	Annotations []any        `json:"annotations"`
}

type oaUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     *oaPromptDetails   `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *oaCompleteDetails `json:"completion_tokens_details,omitempty"`
}

type oaPromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type oaCompleteDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

var jsonNull = json.RawMessage("null")

// ---- streaming chunk ----

type oaChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []oaChunkChoice `json:"choices"`
	Usage   *oaUsage        `json:"usage,omitempty"`
}

type oaChunkChoice struct {
	Index        int             `json:"index"`
	Delta        oaDelta         `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type oaDelta struct {
	Role      string       `json:"role,omitempty"`
	Content   *string      `json:"content,omitempty"`
	Refusal   *string      `json:"refusal,omitempty"`
	ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
}

// chunkWriter writes chat.completion.chunk events with a fixed id and model.
type chunkWriter struct {
	id    string
	model string
}

func (w *chunkWriter) event(choices []oaChunkChoice, usage *oaUsage) []byte {
	if choices == nil {
		choices = []oaChunkChoice{}
	}
	for i := range choices {
		choices[i].Logprobs = jsonNull
	}
	c := oaChunk{ID: w.id, Object: "chat.completion.chunk", Model: w.model, Choices: choices, Usage: usage}
	return sseData(mustMarshal(c))
}

// sseData frames one data-only server-sent event.
func sseData(data []byte) []byte {
	out := make([]byte, 0, len(data)+8)
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// sseNamed frames one server-sent event with an event name.
func sseNamed(name string, data []byte) []byte {
	out := make([]byte, 0, len(name)+len(data)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

var sseDone = []byte("data: [DONE]\n\n")

func strPtr(s string) *string { return &s }

// ---- error ----

type oaErrorBody struct {
	Error oaError `json:"error"`
}

type oaError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
