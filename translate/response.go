package translate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Responses carry "created": 0. The providers' bodies hold no creation time
// (Gemini's createTime is Vertex-only and not always sent), and reading the
// clock would make the output depend on when it ran; 0 keeps conversions
// deterministic. Ids are derived from the source's own ids, see each
// function.

// AnthropicResponseToOpenAI converts an Anthropic Messages response to an
// OpenAI chat.completion. The id is "chatcmpl-" followed by the message id.
// Text blocks are joined into the content, tool_use blocks become tool_calls
// with the same ids; the text of thinking blocks is joined into the
// message's non-standard reasoning_content (the member DeepSeek and vLLM
// use), which OpenAI's own clients ignore. Signatures and redacted_thinking
// blocks are left out: only Anthropic can read them.
func AnthropicResponseToOpenAI(body []byte) ([]byte, error) {
	var r anResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("anthropic response", err)
	}
	if r.Type != "message" {
		return nil, errBadBody("anthropic response", fmt.Errorf("type %q is not a message", r.Type))
	}
	var text, thinking strings.Builder
	msg := oaReasoningMessage{oaRespMessage: oaRespMessage{Role: "assistant", Annotations: []any{}}}
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			if b.Text != nil {
				text.WriteString(*b.Text)
			}
		case "thinking":
			if b.Thinking != nil {
				thinking.WriteString(*b.Thinking)
			}
		case "tool_use":
			var tc oaToolCall
			tc.ID, tc.Type = b.ID, "function"
			tc.Function.Name = b.Name
			tc.Function.Arguments = "{}"
			if !isNull(b.Input) {
				tc.Function.Arguments = string(compactJSON(b.Input))
			}
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		msg.Content = strPtr(text.String())
	}
	if thinking.Len() > 0 {
		msg.ReasoningContent = strPtr(thinking.String())
	}
	finish := "stop"
	if r.StopReason != nil {
		finish = anStopToOpenAI(*r.StopReason)
	}
	out := oaReasoningCompletion{
		oaCompletion: oaCompletion{
			ID:     "chatcmpl-" + r.ID,
			Object: "chat.completion",
			Model:  r.Model,
			Usage:  r.Usage.toOpenAI(),
		},
		Choices: []oaReasoningChoice{{oaChoice: oaChoice{Logprobs: jsonNull, FinishReason: &finish}, Message: msg}},
	}
	return marshal(out)
}

// oaReasoningCompletion is a chat.completion whose messages may carry
// reasoning, and its service_tier. Its Choices shadow the embedded ones.
type oaReasoningCompletion struct {
	oaCompletion
	ServiceTier string              `json:"service_tier,omitempty"`
	Choices     []oaReasoningChoice `json:"choices"`
}

type oaReasoningChoice struct {
	oaChoice
	Message oaReasoningMessage `json:"message"`
}

// oaReasoningMessage is a response message with the non-standard
// reasoning_content (DeepSeek, vLLM; written by this package) or reasoning
// (OpenRouter, newer vLLM; read only, when it is a string).
type oaReasoningMessage struct {
	oaRespMessage
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        json.RawMessage `json:"reasoning,omitempty"`
}

// reasoningText is the reasoning of a message or delta: reasoning_content,
// else a string reasoning, else "".
func reasoningText(content *string, reasoning json.RawMessage) string {
	if content != nil {
		return *content
	}
	var s string
	if json.Unmarshal(reasoning, &s) == nil {
		return s
	}
	return ""
}

// thinkingBlock is a thinking block for reasoning a non-Anthropic backend
// returned. It has no signature, which only Anthropic can make: signature is
// "", present because the Messages API always has it on a thinking block.
func thinkingBlock(text string) anBlock {
	empty := ""
	return anBlock{Type: "thinking", Thinking: &text, Signature: &empty}
}

// GeminiResponseToOpenAI converts a Gemini generateContent response to an
// OpenAI chat.completion, one choice per candidate. model is reported when
// the body has no modelVersion. The id is "chatcmpl-" followed by the
// responseId, or "chatcmpl-gemini" without one. A prompt Gemini blocked
// (promptFeedback.blockReason, no candidates) is one empty choice with
// finish_reason "content_filter".
func GeminiResponseToOpenAI(body []byte, model string) ([]byte, error) {
	var r gmResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("gemini response", err)
	}
	out := oaCompletion{
		ID:     geminiCompletionID(r.ResponseID),
		Object: "chat.completion",
		Model:  cmp.Or(r.ModelVersion, model),
		Usage:  r.UsageMetadata.toOpenAI(),
	}
	if out.Usage == nil {
		out.Usage = &oaUsage{}
	}
	for pos, c := range r.Candidates {
		text, calls := geminiParts(c.Content, r.ResponseID, c.Index)
		msg := oaRespMessage{Role: "assistant", ToolCalls: calls, Annotations: []any{}}
		if text != "" || len(calls) == 0 {
			msg.Content = strPtr(text)
		}
		finish := gmFinishToOpenAI(c.FinishReason, len(calls) > 0)
		if finish == "" {
			finish = "stop"
		}
		idx := c.Index
		if idx == 0 {
			idx = pos
		}
		out.Choices = append(out.Choices, oaChoice{Index: idx, Message: msg, Logprobs: jsonNull, FinishReason: &finish})
	}
	if len(out.Choices) == 0 {
		if r.PromptFeedback == nil || r.PromptFeedback.BlockReason == "" {
			return nil, errBadBody("gemini response", errors.New("no candidates and no block reason"))
		}
		finish := "content_filter"
		out.Choices = []oaChoice{{Message: oaRespMessage{Role: "assistant", Content: strPtr(""), Annotations: []any{}}, Logprobs: jsonNull, FinishReason: &finish}}
	}
	return marshal(out)
}

func geminiCompletionID(responseID string) string {
	if responseID == "" {
		return "chatcmpl-gemini"
	}
	return "chatcmpl-" + responseID
}

// geminiParts collects a candidate's text (thought summaries left out) and
// function calls.
func geminiParts(c *gmContent, responseID string, candidate int) (string, []oaToolCall) {
	if c == nil {
		return "", nil
	}
	var text strings.Builder
	var calls []oaToolCall
	for _, p := range c.Parts {
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			calls = append(calls, geminiToolCall(p.FunctionCall, responseID, candidate, len(calls)))
		default:
			text.WriteString(p.Text)
		}
	}
	return text.String(), calls
}

func geminiToolCall(fc *gmFunctionCall, responseID string, candidate, n int) oaToolCall {
	var tc oaToolCall
	tc.ID = geminiToolCallID(responseID, candidate, n, fc)
	tc.Type = "function"
	tc.Function.Name = fc.Name
	tc.Function.Arguments = "{}"
	if !isNull(fc.Args) {
		tc.Function.Arguments = string(compactJSON(fc.Args))
	}
	return tc
}

// OpenAIResponseToAnthropic converts an OpenAI chat.completion to an
// Anthropic Messages response, from its first choice (an Anthropic client
// cannot ask for more). The id is the completion id with "chatcmpl-" replaced
// by "msg_" (or removed when what follows already starts with "msg_").
// Tool call arguments must be a JSON object, as Anthropic's tool_use input is.
// Reasoning the backend returned (reasoning_content, or a string reasoning)
// becomes a first thinking block, with an empty signature (see
// thinkingBlock). Usage is as anUsageFromOpenAI describes; stop_sequence,
// stop_details, container and diagnostics are null.
func OpenAIResponseToAnthropic(body []byte) ([]byte, error) {
	var r oaReasoningCompletion
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("openai response", err)
	}
	if len(r.Choices) == 0 {
		return nil, errBadBody("openai response", errors.New("no choices"))
	}
	c := r.Choices[0]
	var content []anBlock
	if t := reasoningText(c.Message.ReasoningContent, c.Message.Reasoning); t != "" {
		content = append(content, thinkingBlock(t))
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		content = append(content, textBlock(*c.Message.Content))
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		content = append(content, textBlock(*c.Message.Refusal))
	}
	for _, tc := range c.Message.ToolCalls {
		input, err := argumentsObject(tc.Function.Arguments)
		if err != nil {
			return nil, errBadBody("openai response", fmt.Errorf("tool call %q: arguments are not a JSON object", tc.ID))
		}
		content = append(content, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input, Caller: directCaller})
	}
	if content == nil {
		content = []anBlock{}
	}
	stop := "end_turn"
	if c.FinishReason != nil {
		stop = openAIFinishToAnthropic(*c.FinishReason)
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		stop = "refusal"
	}
	// Some OpenAI-compatible servers end a turn of tool calls with "stop";
	// Anthropic clients look for tool_use to run the tools.
	if stop == "end_turn" && len(c.Message.ToolCalls) > 0 {
		stop = "tool_use"
	}
	out := anResponse{
		ID:         anthropicMessageID(r.ID),
		Type:       "message",
		Role:       "assistant",
		Model:      r.Model,
		Content:    content,
		StopReason: &stop,
		Usage:      anUsageFromOpenAI(r.Usage, r.ServiceTier),
	}
	return marshal(out)
}

// anthropicMessageID turns a completion id into a message id.
func anthropicMessageID(id string) string {
	rest := strings.TrimPrefix(id, "chatcmpl-")
	if strings.HasPrefix(rest, "msg_") {
		return rest
	}
	return "msg_" + rest
}
