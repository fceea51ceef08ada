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
// with the same ids; thinking blocks are left out (OpenAI has no place for
// them).
func AnthropicResponseToOpenAI(body []byte) ([]byte, error) {
	var r anResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("anthropic response", err)
	}
	if r.Type != "message" {
		return nil, errBadBody("anthropic response", fmt.Errorf("type %q is not a message", r.Type))
	}
	var text strings.Builder
	msg := oaRespMessage{Role: "assistant"}
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			if b.Text != nil {
				text.WriteString(*b.Text)
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
	finish := "stop"
	if r.StopReason != nil {
		finish = anStopToOpenAI(*r.StopReason)
	}
	out := oaCompletion{
		ID:      "chatcmpl-" + r.ID,
		Object:  "chat.completion",
		Model:   r.Model,
		Choices: []oaChoice{{Message: msg, Logprobs: jsonNull, FinishReason: &finish}},
		Usage:   r.Usage.toOpenAI(),
	}
	return marshal(out)
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
		msg := oaRespMessage{Role: "assistant", ToolCalls: calls}
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
		out.Choices = []oaChoice{{Message: oaRespMessage{Role: "assistant", Content: strPtr("")}, Logprobs: jsonNull, FinishReason: &finish}}
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
func OpenAIResponseToAnthropic(body []byte) ([]byte, error) {
	var r oaCompletion
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("openai response", err)
	}
	if len(r.Choices) == 0 {
		return nil, errBadBody("openai response", errors.New("no choices"))
	}
	c := r.Choices[0]
	var content []anBlock
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
		content = append(content, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
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
		Usage:      anUsageFromOpenAI(r.Usage),
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
