package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// GeminiOptions tunes OpenAIRequestToGemini. It has no settings yet; the zero
// value is the only value.
type GeminiOptions struct{}

// geminiForeignSignature is the thought signature Gemini documents for
// function calls it did not produce itself (history from another model, or a
// client that dropped the signature). Gemini 3 models answer 400 to a
// functionCall in the current turn without a signature.
const geminiForeignSignature = "skip_thought_signature_validator"

// OpenAIRequestToGemini converts an OpenAI chat completions request to a
// Gemini generateContent request body. The model and streaming are chosen by
// the URL (models/{model}:generateContent or
// :streamGenerateContent?alt=sse), so "model" and "stream" leave no trace
// in the body. A feature Gemini cannot honour is an *UnsupportedError. Beyond
// standard chat it reads top_k, sent as generationConfig.topK;
// reasoning_effort is refused as an unknown parameter.
func OpenAIRequestToGemini(body []byte, opt GeminiOptions) ([]byte, error) {
	body, ext := takeMembers(body, "top_k")
	r, err := parseOpenAIRequest(body, Gemini)
	if err != nil {
		return nil, err
	}
	topK, err := topKOf(ext)
	if err != nil {
		return nil, err
	}
	var out gmRequest
	gc := gmGenerationConfig{
		MaxOutputTokens: r.maxOutput(),
		Temperature:     r.Temperature,
		TopP:            r.TopP,
		Seed:            r.Seed,
	}
	if r.N != nil && *r.N > 1 {
		gc.CandidateCount = r.N
	}
	if r.PresencePenalty != nil && *r.PresencePenalty != 0 {
		gc.PresencePenalty = r.PresencePenalty
	}
	if r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0 {
		gc.FrequencyPenalty = r.FrequencyPenalty
	}
	if gc.StopSequences, err = r.stops(); err != nil {
		return nil, err
	}
	if r.Seed != nil && (*r.Seed > math.MaxInt32 || *r.Seed < math.MinInt32) {
		return nil, unsupported(Gemini, "a seed beyond 32 bits")
	}
	if len(gc.StopSequences) > 5 {
		return nil, unsupported(Gemini, "more than 5 stop sequences")
	}
	if err := geminiResponseFormat(r.ResponseFormat, &gc); err != nil {
		return nil, err
	}
	if string(mustMarshal(gc)) != "{}" {
		out.GenerationConfig = &gc
	}
	if err := geminiTools(r, &out); err != nil {
		return nil, err
	}

	var system []gmPart
	toolNames := map[string]string{} // tool call id -> function name
	for i, m := range r.Messages {
		parts, err := parseContent(m.Content)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system", "developer":
			texts, err := textOf(parts, Gemini, m.Role+" message")
			if err != nil {
				return nil, err
			}
			for _, t := range texts {
				if t != "" {
					system = append(system, gmPart{Text: t})
				}
			}
		case "user":
			gp, err := geminiUserParts(parts)
			if err != nil {
				return nil, err
			}
			out.Contents = appendContent(out.Contents, "user", gp)
		case "assistant":
			gp, err := geminiModelParts(m, parts, toolNames)
			if err != nil {
				return nil, err
			}
			out.Contents = appendContent(out.Contents, "model", gp)
		case "tool":
			name, ok := toolNames[m.ToolCallID]
			if !ok {
				return nil, errBadBody("openai request", fmt.Errorf("messages[%d]: tool_call_id %q names no earlier tool call", i, m.ToolCallID))
			}
			texts, err := textOf(parts, Gemini, "tool message")
			if err != nil {
				return nil, err
			}
			resp := geminiFunctionResponse(strings.Join(texts, ""))
			out.Contents = appendContent(out.Contents, "user", []gmPart{{FunctionResponse: &gmFunctionResponse{Name: name, Response: resp}}})
		default:
			return nil, errBadBody("openai request", fmt.Errorf("messages[%d]: unknown role %q", i, m.Role))
		}
	}
	if len(system) > 0 {
		out.SystemInstruction = &gmContent{Parts: system}
	}
	if len(out.Contents) == 0 {
		return nil, errBadBody("openai request", errors.New("no user or assistant messages"))
	}
	if topK != nil {
		return marshal(gmRequestTopK{gmRequest: out, GenerationConfig: &gmGenerationConfigTopK{gmGenerationConfig: gc, TopK: topK}})
	}
	return marshal(out)
}

// gmRequestTopK is a gmRequest whose generationConfig also has topK (the
// canonical body's non-standard top_k). The outer GenerationConfig shadows
// the embedded one when encoded.
type gmRequestTopK struct {
	gmRequest
	GenerationConfig *gmGenerationConfigTopK `json:"generationConfig"`
}

type gmGenerationConfigTopK struct {
	gmGenerationConfig
	TopK *int `json:"topK"`
}

// appendContent adds parts as a role turn, merging with the previous turn of
// the same role (a tool result and the user text after it are one user turn).
func appendContent(cs []gmContent, role string, parts []gmPart) []gmContent {
	if len(parts) == 0 {
		return cs
	}
	if n := len(cs); n > 0 && cs[n-1].Role == role {
		cs[n-1].Parts = append(cs[n-1].Parts, parts...)
		return cs
	}
	return append(cs, gmContent{Role: role, Parts: parts})
}

func geminiUserParts(parts []oaPart) ([]gmPart, error) {
	var out []gmPart
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, gmPart{Text: p.Text})
			}
		case "image_url":
			u, err := p.imageURL()
			if err != nil {
				return nil, err
			}
			mime, data, ok := parseDataURL(u)
			if !ok {
				return nil, unsupported(Gemini, "an image by URL (only data: URLs)")
			}
			out = append(out, gmPart{InlineData: &gmBlob{MimeType: mime, Data: data}})
		case "file":
			if p.File == nil || p.File.FileData == "" {
				return nil, unsupported(Gemini, "file content by file_id")
			}
			mime, data, ok := parseDataURL(p.File.FileData)
			if !ok {
				return nil, errBadBody("openai request", errors.New("file_data is not a base64 data URL"))
			}
			out = append(out, gmPart{InlineData: &gmBlob{MimeType: mime, Data: data}})
		default:
			return nil, unsupported(Gemini, "user content of type %q", p.Type)
		}
	}
	return out, nil
}

func geminiModelParts(m oaMessage, parts []oaPart, toolNames map[string]string) ([]gmPart, error) {
	var out []gmPart
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, gmPart{Text: p.Text})
			}
		case "refusal":
			if p.Refusal != "" {
				out = append(out, gmPart{Text: p.Refusal})
			}
		default:
			return nil, unsupported(Gemini, "assistant content of type %q", p.Type)
		}
	}
	if m.Refusal != nil && *m.Refusal != "" && len(parts) == 0 {
		out = append(out, gmPart{Text: *m.Refusal})
	}
	for i, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, unsupported(Gemini, "tool call of type %q", tc.Type)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, errBadBody("openai request", errors.New("tool call without id or function name"))
		}
		args, err := argumentsObject(tc.Function.Arguments)
		if err != nil {
			return nil, err
		}
		toolNames[tc.ID] = tc.Function.Name
		part := gmPart{FunctionCall: &gmFunctionCall{Name: tc.Function.Name, Args: args}}
		if tc.ExtraContent != nil && tc.ExtraContent.Google.ThoughtSignature != "" {
			part.ThoughtSignature = tc.ExtraContent.Google.ThoughtSignature
		} else if i == 0 {
			part.ThoughtSignature = geminiForeignSignature
		}
		out = append(out, part)
	}
	return out, nil
}

// geminiFunctionResponse wraps a tool result for functionResponse.response,
// which must be a JSON object: a result that is one is sent as it is, any
// other text as {"output": text}, the key Gemini documents for results.
func geminiFunctionResponse(text string) json.RawMessage {
	t := bytes.TrimSpace([]byte(text))
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return compactJSON(t)
	}
	return mustMarshal(map[string]string{"output": text})
}

func geminiResponseFormat(rf *oaResponseFormat, gc *gmGenerationConfig) error {
	if rf == nil {
		return nil
	}
	switch rf.Type {
	case "", "text":
		return nil
	case "json_object":
		gc.ResponseMimeType = "application/json"
		return nil
	case "json_schema":
		if rf.JSONSchema == nil || isNull(rf.JSONSchema.Schema) {
			return errBadBody("openai request", errors.New("response_format json_schema without a schema"))
		}
		s, err := geminiSchema(rf.JSONSchema.Schema, "response_format.json_schema.schema", true)
		if err != nil {
			return err
		}
		if _, ok := s["description"]; !ok && rf.JSONSchema.Description != "" {
			s["description"] = rf.JSONSchema.Description
		}
		gc.ResponseMimeType = "application/json"
		gc.ResponseSchema = s
		return nil
	}
	return unsupported(Gemini, "%s response_format", rf.Type)
}

// geminiTools sets tools and toolConfig.
func geminiTools(r *oaRequest, out *gmRequest) error {
	if err := r.functionTools(Gemini); err != nil {
		return err
	}
	var decls []gmFunctionDeclaration
	for i, t := range r.Tools {
		d := gmFunctionDeclaration{Name: t.Function.Name, Description: t.Function.Description}
		if !isNull(t.Function.Parameters) {
			s, err := geminiSchema(t.Function.Parameters, fmt.Sprintf("tools[%d].function.parameters", i), false)
			if err != nil {
				return err
			}
			// Gemini refuses an OBJECT with no properties; a function that
			// takes no arguments has no parameters.
			if props, _ := s["properties"].(map[string]any); len(props) > 0 || s["type"] != "OBJECT" {
				d.Parameters = s
			}
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		out.Tools = []gmTool{{FunctionDeclarations: decls}}
	}
	tc, err := r.toolChoice(Gemini)
	if err != nil {
		return err
	}
	if len(decls) == 0 {
		return nil // no tools, nothing to choose
	}
	switch tc.mode {
	case "none":
		out.ToolConfig = &gmToolConfig{FunctionCallingConfig: gmFunctionCallingConfig{Mode: "NONE"}}
	case "auto":
		out.ToolConfig = &gmToolConfig{FunctionCallingConfig: gmFunctionCallingConfig{Mode: "AUTO"}}
	case "required":
		out.ToolConfig = &gmToolConfig{FunctionCallingConfig: gmFunctionCallingConfig{Mode: "ANY"}}
	case "function":
		out.ToolConfig = &gmToolConfig{FunctionCallingConfig: gmFunctionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{tc.name}}}
	}
	// Gemini may answer with several calls at once and has no switch to
	// stop it; a client that asked for one call at a time would break.
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls && len(decls) > 0 && tc.mode != "none" {
		return unsupported(Gemini, "parallel_tool_calls: false")
	}
	return nil
}
