package translate

import "encoding/json"

// This file holds the Gemini API (Generative Language API, v1beta) wire types.

type gmRequest struct {
	Contents          []gmContent         `json:"contents"`
	SystemInstruction *gmContent          `json:"systemInstruction,omitempty"`
	Tools             []gmTool            `json:"tools,omitempty"`
	ToolConfig        *gmToolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *gmGenerationConfig `json:"generationConfig,omitempty"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

// gmPart is a content part; exactly one of its data fields is set.
type gmPart struct {
	Text             string              `json:"text,omitempty"`
	InlineData       *gmBlob             `json:"inlineData,omitempty"`
	FunctionCall     *gmFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gmFunctionResponse `json:"functionResponse,omitempty"`
	Thought          bool                `json:"thought,omitempty"`
	ThoughtSignature string              `json:"thoughtSignature,omitempty"`
}

type gmBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gmFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gmFunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []gmFunctionDeclaration `json:"functionDeclarations"`
}

type gmFunctionDeclaration struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type gmToolConfig struct {
	FunctionCallingConfig gmFunctionCallingConfig `json:"functionCallingConfig"`
}

type gmFunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gmGenerationConfig struct {
	StopSequences    []string       `json:"stopSequences,omitempty"`
	ResponseMimeType string         `json:"responseMimeType,omitempty"`
	ResponseSchema   map[string]any `json:"responseSchema,omitempty"`
	CandidateCount   *int           `json:"candidateCount,omitempty"`
	MaxOutputTokens  *int           `json:"maxOutputTokens,omitempty"`
	Temperature      *float64       `json:"temperature,omitempty"`
	TopP             *float64       `json:"topP,omitempty"`
	Seed             *int64         `json:"seed,omitempty"`
	PresencePenalty  *float64       `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64       `json:"frequencyPenalty,omitempty"`
}

// ---- response ----

type gmResponse struct {
	Candidates     []gmCandidate     `json:"candidates"`
	PromptFeedback *gmPromptFeedback `json:"promptFeedback"`
	UsageMetadata  *gmUsage          `json:"usageMetadata"`
	ModelVersion   string            `json:"modelVersion"`
	ResponseID     string            `json:"responseId"`
	Error          json.RawMessage   `json:"error"` // an error sent inside a stream
}

type gmCandidate struct {
	Content      *gmContent `json:"content"`
	FinishReason string     `json:"finishReason"`
	Index        int        `json:"index"`
}

type gmPromptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type gmUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
}

// toOpenAI maps Gemini usage to OpenAI's. Thinking tokens are output tokens
// the caller pays for, as OpenAI's reasoning tokens are: they count in
// completion_tokens and are broken out in completion_tokens_details.
func (u *gmUsage) toOpenAI() *oaUsage {
	if u == nil {
		return nil
	}
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	total := u.TotalTokenCount
	if total == 0 {
		total = u.PromptTokenCount + completion
	}
	o := &oaUsage{PromptTokens: u.PromptTokenCount, CompletionTokens: completion, TotalTokens: total}
	if u.CachedContentTokenCount > 0 {
		o.PromptTokensDetails = &oaPromptDetails{CachedTokens: u.CachedContentTokenCount}
	}
	if u.ThoughtsTokenCount > 0 {
		o.CompletionTokensDetails = &oaCompleteDetails{ReasoningTokens: u.ThoughtsTokenCount}
	}
	return o
}

// ---- error ----

type gmErrorBody struct {
	Error gmError `json:"error"`
}

type gmError struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// gmFinishToOpenAI maps a Gemini finishReason to an OpenAI finish_reason;
// calledTools says the candidate holds functionCall parts. "" (not finished)
// maps to "". Blocked output (the safety family, recitation, blocklists,
// personal data) is "content_filter"; MAX_TOKENS is "length"; everything else
// (STOP, OTHER, MALFORMED_FUNCTION_CALL, LANGUAGE, …) ends the choice as
// "stop", or "tool_calls" when it holds calls.
func gmFinishToOpenAI(r string, calledTools bool) string {
	switch r {
	case "":
		return ""
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR":
		return "content_filter"
	}
	if calledTools {
		return "tool_calls"
	}
	return "stop"
}

// geminiToolCallID makes the OpenAI id of a functionCall part. Gemini gives
// calls no id of their own (or one only some models set), and OpenAI clients
// need one that is unique in the conversation and stable for tests: a digest
// of the response id, the candidate and call positions, and the call itself.
func geminiToolCallID(responseID string, candidate, n int, fc *gmFunctionCall) string {
	return "call_" + shortHash(responseID, itoa(candidate), itoa(n), fc.ID, fc.Name, string(fc.Args))
}
