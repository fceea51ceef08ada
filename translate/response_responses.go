package translate

import (
	"encoding/json"
	"errors"
)

// OpenAIResponseToResponses converts a chat.completion body to a Responses
// API response object, from its first choice. req is the original Responses
// request body, whose instructions, tools, tool_choice, temperature, top_p,
// max_output_tokens, text, parallel_tool_calls, metadata, store, user and
// reasoning are echoed as the API echoes them (with the API's defaults when
// absent); it may be nil, and then every echoed field has its default. A
// malformed body or req is a plain error. The mapping is described at the
// top of responses.go. Safe for concurrent use.
func OpenAIResponseToResponses(body, req []byte) ([]byte, error) {
	var c rsChatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, errBadBody("openai response", err)
	}
	if len(c.Choices) == 0 {
		return nil, errBadBody("openai response", errors.New("no choices"))
	}
	e, err := parseEcho(req)
	if err != nil {
		return nil, err
	}
	id := responseID(c.ID, string(body))
	out := e.response(id, c.Model)
	out.CreatedAt = c.Created
	ch := c.Choices[0]
	finish := ""
	if ch.FinishReason != nil {
		finish = *ch.FinishReason
	}
	out.finish(finish, c.ServiceTier)
	out.Output = outputItems(id, &ch.Message, out.Status)
	out.Usage = usageFromChat(c.Usage)
	return marshal(out)
}

// outputItems lists a chat message's output items: reasoning, the message,
// the function calls. When status is incomplete the last item is too.
func outputItems(id string, m *rsChatMessage, status string) []any {
	var items []any
	if r := m.reasoning(); r != "" {
		items = append(items, rsReasoningItem{
			ID: itemID("rs_", id, len(items)), Type: "reasoning",
			Summary: []rsSummaryText{{Type: "summary_text", Text: r}},
		})
	}
	var content []any
	if m.Content != nil && *m.Content != "" {
		content = append(content, outputText(*m.Content))
	}
	if m.Refusal != nil && *m.Refusal != "" {
		content = append(content, rsRefusalPart{Type: "refusal", Refusal: *m.Refusal})
	}
	if len(content) == 0 && len(m.ToolCalls) == 0 && len(items) == 0 {
		content = append(content, outputText(""))
	}
	if len(content) > 0 {
		items = append(items, &rsMessageItem{
			ID: itemID("msg_", id, len(items)), Type: "message", Status: "completed",
			Role: "assistant", Content: content,
		})
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if args == "" {
			args = "{}" // Responses clients parse arguments as JSON
		}
		items = append(items, &rsFunctionCallItem{
			ID: itemID("fc_", id, len(items)), Type: "function_call", Status: "completed",
			Arguments: args, CallID: tc.ID, Name: tc.Function.Name,
		})
	}
	if status == "incomplete" && len(items) > 0 {
		switch it := items[len(items)-1].(type) {
		case *rsMessageItem:
			it.Status = "incomplete"
		case *rsFunctionCallItem:
			it.Status = "incomplete"
		}
	}
	if items == nil {
		items = []any{}
	}
	return items
}
