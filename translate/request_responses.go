package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ResponsesRequestToOpenAI converts a Responses API request body
// (POST /v1/responses) to a Chat Completions request, the canonical format.
// It keeps "model"; a streaming request also asks for the usage chunk
// (stream_options.include_usage). A feature chat cannot carry (stored state,
// built-in tools, encrypted reasoning, …) is an *UnsupportedError with
// Target OpenAI; a malformed body is a plain error. The mapping is described
// at the top of responses.go. Safe for concurrent use.
func ResponsesRequestToOpenAI(body []byte) ([]byte, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, errBadBody("responses request", err)
	}
	if err := checkMembers(members, rsKnown, "parameter %q"); err != nil {
		return nil, err
	}
	var r rsRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("responses request", err)
	}
	if err := refusedOptions(&r, members); err != nil {
		return nil, err
	}
	out := rsChatRequest{
		Model:               r.Model,
		MaxCompletionTokens: r.MaxOutputTokens,
		Temperature:         r.Temperature,
		TopP:                r.TopP,
		Stream:              r.Stream,
		ParallelToolCalls:   r.ParallelToolCalls,
	}
	if r.Stream {
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	if r.User != nil {
		out.User = *r.User
	}
	if !isNull(r.Metadata) {
		out.Metadata = compactJSON(r.Metadata)
	}
	if err := responsesOptions(&r, &out); err != nil {
		return nil, err
	}
	if err := responsesTools(&r, &out); err != nil {
		return nil, err
	}
	if r.Instructions != nil && *r.Instructions != "" {
		out.Messages = append(out.Messages, oaOutMessage{Role: "system", Content: *r.Instructions})
	}
	msgs, err := responsesInput(r.Input)
	if err != nil {
		return nil, err
	}
	out.Messages = append(out.Messages, msgs...)
	if len(out.Messages) == 0 {
		return nil, errBadBody("responses request", errors.New("no input"))
	}
	return marshal(out)
}

// checkMembers refuses the first (in sorted order) non-null member of
// members not in known.
func checkMembers(members map[string]json.RawMessage, known []string, feature string) error {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !isNull(members[k]) && !slices.Contains(known, k) {
			return unsupported(OpenAI, feature, k)
		}
	}
	return nil
}

// refusedOptions refuses the request options chat has no way to honour.
func refusedOptions(r *rsRequest, members map[string]json.RawMessage) error {
	switch {
	case !isNull(r.PreviousResponseID):
		return unsupported(OpenAI, "previous_response_id (no stored responses)")
	case !isNull(members["conversation"]):
		return unsupported(OpenAI, "conversation (no stored conversations)")
	case !isNull(members["prompt"]):
		return unsupported(OpenAI, "prompt templates")
	case r.Background != nil && *r.Background:
		return unsupported(OpenAI, "background: true")
	case len(r.Include) > 0:
		return unsupported(OpenAI, "include %q", r.Include[0])
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return unsupported(OpenAI, "top_logprobs")
	}
	if r.Truncation != nil && *r.Truncation != "disabled" {
		return unsupported(OpenAI, "truncation %q", *r.Truncation)
	}
	return nil
}

// responsesOptions maps reasoning and text.
func responsesOptions(r *rsRequest, out *rsChatRequest) error {
	if r.Reasoning != nil {
		if err := checkMembers(r.Reasoning.raw, []string{"effort", "summary", "generate_summary"}, "reasoning.%s"); err != nil {
			return err
		}
		if r.Reasoning.Effort != nil {
			out.ReasoningEffort = *r.Reasoning.Effort
		}
	}
	if r.Text == nil {
		return nil
	}
	if err := checkMembers(r.Text.raw, []string{"format", "verbosity"}, "text.%s"); err != nil {
		return err
	}
	if r.Text.Verbosity != nil {
		out.Verbosity = *r.Text.Verbosity
	}
	f := r.Text.Format
	if f == nil {
		return nil
	}
	switch f.Type {
	case "", "text":
	case "json_object":
		out.ResponseFormat = &rsChatRespFormat{Type: "json_object"}
	case "json_schema":
		if f.Name == "" || isNull(f.Schema) {
			return errBadBody("responses request", errors.New("text.format json_schema without name or schema"))
		}
		js := &rsChatJSONSchema{Name: f.Name, Schema: compactJSON(f.Schema), Strict: f.Strict}
		if f.Description != nil {
			js.Description = *f.Description
		}
		out.ResponseFormat = &rsChatRespFormat{Type: "json_schema", JSONSchema: js}
	default:
		return unsupported(OpenAI, "text.format of type %q", f.Type)
	}
	return nil
}

// responsesTools maps function tools and tool_choice.
func responsesTools(r *rsRequest, out *rsChatRequest) error {
	for i, t := range r.Tools {
		if t.Type != "function" {
			return unsupported(OpenAI, "tool type %q", t.Type)
		}
		if err := checkMembers(t.raw, rsFunctionMembers, "function tool member %q"); err != nil {
			return err
		}
		if t.Name == "" {
			return errBadBody("responses request", fmt.Errorf("tools[%d] has no name", i))
		}
		f := rsChatFunction{Name: t.Name, Strict: t.Strict}
		if t.Description != nil {
			f.Description = *t.Description
		}
		if !isNull(t.Parameters) {
			f.Parameters = compactJSON(t.Parameters)
		}
		out.Tools = append(out.Tools, rsChatTool{Type: "function", Function: f})
	}
	if isNull(r.ToolChoice) {
		return nil
	}
	var s string
	if err := json.Unmarshal(r.ToolChoice, &s); err == nil {
		switch s {
		case "auto", "none", "required":
			out.ToolChoice = s
			return nil
		}
		return unsupported(OpenAI, "tool_choice %q", s)
	}
	var o struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.ToolChoice, &o); err != nil {
		return errBadBody("responses request: tool_choice", err)
	}
	if o.Type != "function" {
		return unsupported(OpenAI, "tool_choice of type %q", o.Type)
	}
	if o.Name == "" {
		return errBadBody("responses request", errors.New("tool_choice function without a name"))
	}
	out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": o.Name}}
	return nil
}

// responsesInput maps input: a string is one user message.
func responsesInput(raw json.RawMessage) ([]oaOutMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []oaOutMessage{{Role: "user", Content: s}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errBadBody("responses request: input", err)
	}
	var out []oaOutMessage
	for i, rawItem := range items {
		var it rsItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return nil, errBadBody(fmt.Sprintf("responses request: input[%d]", i), err)
		}
		typ := it.Type
		if typ == "" {
			switch {
			case it.Role != "":
				typ = "message"
			case it.ID != "":
				typ = "item_reference"
			}
		}
		var err error
		switch typ {
		case "message":
			var m oaOutMessage
			m, err = responsesMessage(&it)
			out = append(out, m)
		case "function_call":
			out, err = appendFunctionCall(out, &it)
		case "function_call_output":
			var m oaOutMessage
			m, err = functionCallOutput(&it)
			out = append(out, m)
		case "reasoning":
			if it.EncryptedContent != nil && *it.EncryptedContent != "" {
				err = unsupported(OpenAI, "reasoning items with encrypted_content")
			}
		case "item_reference":
			err = unsupported(OpenAI, "item_reference (no stored items)")
		default:
			err = unsupported(OpenAI, "input item of type %q", typ)
		}
		if err != nil {
			return nil, inItem(i, err)
		}
	}
	return out, nil
}

// inItem adds the item position to a malformed-body error; an
// UnsupportedError stays as it is.
func inItem(i int, err error) error {
	var u *UnsupportedError
	if errors.As(err, &u) {
		return err
	}
	return fmt.Errorf("input[%d]: %w", i, err)
}

func responsesMessage(it *rsItem) (oaOutMessage, error) {
	switch it.Role {
	case "user", "assistant", "system", "developer":
	default:
		return oaOutMessage{}, errBadBody("responses request", fmt.Errorf("unknown role %q", it.Role))
	}
	m := oaOutMessage{Role: it.Role}
	if isNull(it.Content) {
		return oaOutMessage{}, errBadBody("responses request", errors.New("message without content"))
	}
	var s string
	if err := json.Unmarshal(it.Content, &s); err == nil {
		m.Content = s
		return m, nil
	}
	var parts []rsInPart
	if err := json.Unmarshal(it.Content, &parts); err != nil {
		return oaOutMessage{}, errBadBody("responses request: content", err)
	}
	var out []rsChatPart
	for _, p := range parts {
		cp, err := chatPart(p, it.Role)
		if err != nil {
			return oaOutMessage{}, err
		}
		out = append(out, cp)
	}
	switch {
	case len(out) == 1 && out[0].Type == "text":
		m.Content = *out[0].Text
	case len(out) == 0:
		m.Content = ""
	default:
		m.Content = out
	}
	return m, nil
}

// chatPart maps one content part of a message of role.
func chatPart(p rsInPart, role string) (rsChatPart, error) {
	switch p.Type {
	case "input_text", "output_text":
		if p.Text == nil {
			return rsChatPart{}, errBadBody("responses request", fmt.Errorf("%s part without text", p.Type))
		}
		return rsChatPart{Type: "text", Text: p.Text}, nil
	case "refusal":
		if role != "assistant" {
			return rsChatPart{}, unsupported(OpenAI, "refusal in %s content", role)
		}
		if p.Refusal == nil {
			return rsChatPart{}, errBadBody("responses request", errors.New("refusal part without refusal"))
		}
		return rsChatPart{Type: "refusal", Refusal: p.Refusal}, nil
	case "input_image":
		if role != "user" {
			return rsChatPart{}, unsupported(OpenAI, "input_image in %s content", role)
		}
		if p.FileID != nil && *p.FileID != "" {
			return rsChatPart{}, unsupported(OpenAI, "input_image by file_id")
		}
		if p.ImageURL == nil || *p.ImageURL == "" {
			return rsChatPart{}, errBadBody("responses request", errors.New("input_image without image_url"))
		}
		img := &rsChatImage{URL: *p.ImageURL}
		switch p.Detail {
		case "", "auto":
		case "low", "high":
			img.Detail = p.Detail
		default:
			return rsChatPart{}, unsupported(OpenAI, "image detail %q", p.Detail)
		}
		return rsChatPart{Type: "image_url", ImageURL: img}, nil
	case "input_file":
		if role != "user" {
			return rsChatPart{}, unsupported(OpenAI, "input_file in %s content", role)
		}
		switch {
		case p.FileID != nil && *p.FileID != "":
			return rsChatPart{}, unsupported(OpenAI, "input_file by file_id")
		case p.FileURL != nil && *p.FileURL != "":
			return rsChatPart{}, unsupported(OpenAI, "input_file by file_url")
		case p.FileData == nil || *p.FileData == "":
			return rsChatPart{}, errBadBody("responses request", errors.New("input_file without file_data"))
		}
		data := *p.FileData
		if !strings.HasPrefix(data, "data:") {
			data = "data:application/pdf;base64," + data
		}
		return rsChatPart{Type: "file", File: &oaOutFile{Filename: p.Filename, FileData: data}}, nil
	}
	return rsChatPart{}, unsupported(OpenAI, "content of type %q", p.Type)
}

// appendFunctionCall adds a function_call to the assistant message just
// before it, or starts one.
func appendFunctionCall(out []oaOutMessage, it *rsItem) ([]oaOutMessage, error) {
	if it.CallID == "" || it.Name == "" {
		return nil, errBadBody("responses request", errors.New("function_call without call_id or name"))
	}
	var tc oaToolCall
	tc.ID, tc.Type = it.CallID, "function"
	tc.Function.Name = it.Name
	if it.Arguments != nil {
		tc.Function.Arguments = *it.Arguments
	}
	if n := len(out); n > 0 && out[n-1].Role == "assistant" {
		last := &out[n-1]
		if s, ok := last.Content.(string); ok && s == "" {
			last.Content = nil
		}
		last.ToolCalls = append(last.ToolCalls, tc)
		return out, nil
	}
	return append(out, oaOutMessage{Role: "assistant", ToolCalls: []oaToolCall{tc}}), nil
}

// functionCallOutput maps a function_call_output to a tool message.
func functionCallOutput(it *rsItem) (oaOutMessage, error) {
	if it.CallID == "" {
		return oaOutMessage{}, errBadBody("responses request", errors.New("function_call_output without call_id"))
	}
	m := oaOutMessage{Role: "tool", ToolCallID: it.CallID, Content: ""}
	if isNull(it.Output) {
		return m, nil
	}
	var s string
	if err := json.Unmarshal(it.Output, &s); err == nil {
		m.Content = s
		return m, nil
	}
	var parts []rsInPart
	if err := json.Unmarshal(it.Output, &parts); err != nil {
		return oaOutMessage{}, errBadBody("responses request: function_call_output", err)
	}
	var texts []rsChatPart
	for _, p := range parts {
		if p.Type != "input_text" && p.Type != "output_text" {
			return oaOutMessage{}, unsupported(OpenAI, "function_call_output content of type %q", p.Type)
		}
		if p.Text == nil {
			return oaOutMessage{}, errBadBody("responses request", errors.New("input_text part without text"))
		}
		texts = append(texts, rsChatPart{Type: "text", Text: p.Text})
	}
	switch len(texts) {
	case 0:
	case 1:
		m.Content = *texts[0].Text
	default:
		m.Content = texts
	}
	return m, nil
}
