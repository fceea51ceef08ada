package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// AnthropicOptions tunes OpenAIRequestToAnthropic. The zero value is ready to
// use.
type AnthropicOptions struct {
	// MaxTokens is the max_tokens sent when the request sets neither
	// max_tokens nor max_completion_tokens: Anthropic requires a limit where
	// OpenAI defaults to the model's maximum. 0 means 4096. Too small a value
	// cuts answers short (finish_reason "length"); one above the model's
	// output limit makes Anthropic answer 400.
	MaxTokens int
}

const defaultAnthropicMaxTokens = 4096

// anthropicImageTypes are the media types Anthropic accepts for images.
var anthropicImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// OpenAIRequestToAnthropic converts an OpenAI chat completions request to an
// Anthropic Messages request for model. See the package documentation for the
// mapping; a feature Anthropic cannot honour is an *UnsupportedError. Beyond
// standard chat it reads top_k (sent as top_k) and reasoning_effort (sent as
// thinking, see anthropicThinking).
func OpenAIRequestToAnthropic(body []byte, model string, opt AnthropicOptions) ([]byte, error) {
	body, ext := takeMembers(body, "top_k", "reasoning_effort")
	r, err := parseOpenAIRequest(body, Anthropic)
	if err != nil {
		return nil, err
	}
	topK, err := topKOf(ext)
	if err != nil {
		return nil, err
	}
	switch {
	case r.N != nil && *r.N > 1:
		return nil, unsupported(Anthropic, "n > 1")
	case r.PresencePenalty != nil && *r.PresencePenalty != 0:
		return nil, unsupported(Anthropic, "presence_penalty")
	case r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0:
		return nil, unsupported(Anthropic, "frequency_penalty")
	case r.Seed != nil:
		return nil, unsupported(Anthropic, "seed")
	case r.Temperature != nil && *r.Temperature > 1:
		return nil, unsupported(Anthropic, "temperature > 1")
	}
	if rf := r.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, unsupported(Anthropic, "%s response_format", rf.Type)
	}

	out := anRequest{Model: model, Temperature: r.Temperature, TopP: r.TopP, TopK: topK, Stream: r.Stream}
	// top_p 1 samples from every token, as no top_p does; newer Claude
	// models refuse temperature and top_p together, so a top_p that
	// changes nothing is left out.
	if out.TopP != nil && *out.TopP == 1 {
		out.TopP = nil
	}
	switch mt := r.maxOutput(); {
	case mt != nil:
		out.MaxTokens = *mt
	case opt.MaxTokens > 0:
		out.MaxTokens = opt.MaxTokens
	default:
		out.MaxTokens = defaultAnthropicMaxTokens
	}
	if err := anthropicThinking(ext, r, &out); err != nil {
		return nil, err
	}
	if out.StopSequences, err = r.stops(); err != nil {
		return nil, err
	}
	if r.User != "" {
		out.Metadata = &anMetadata{UserID: r.User}
	}
	if err := anthropicTools(r, &out); err != nil {
		return nil, err
	}

	var system []anBlock
	var turns []anTurn
	for i, m := range r.Messages {
		parts, err := parseContent(m.Content)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "system", "developer":
			texts, err := textOf(parts, Anthropic, m.Role+" message")
			if err != nil {
				return nil, err
			}
			for _, t := range texts {
				if t != "" {
					system = append(system, textBlock(t))
				}
			}
		case "user":
			blocks, err := anthropicUserBlocks(parts)
			if err != nil {
				return nil, err
			}
			turns = appendTurn(turns, "user", blocks)
		case "assistant":
			blocks, err := anthropicAssistantBlocks(m, parts)
			if err != nil {
				return nil, err
			}
			turns = appendTurn(turns, "assistant", blocks)
		case "tool":
			if m.ToolCallID == "" {
				return nil, errBadBody("openai request", fmt.Errorf("messages[%d]: tool message without tool_call_id", i))
			}
			texts, err := textOf(parts, Anthropic, "tool message")
			if err != nil {
				return nil, err
			}
			content := mustMarshal(strings.Join(texts, ""))
			if len(texts) > 1 {
				var blocks []anBlock
				for _, t := range texts {
					if t != "" {
						blocks = append(blocks, textBlock(t))
					}
				}
				if len(blocks) > 0 {
					content = mustMarshal(blocks)
				}
			}
			turns = appendTurn(turns, "user", []anBlock{{Type: "tool_result", ToolUseID: anthropicID(m.ToolCallID), Content: content}})
		default:
			return nil, errBadBody("openai request", fmt.Errorf("messages[%d]: unknown role %q", i, m.Role))
		}
	}
	if len(system) > 0 {
		out.System = mustMarshal(system)
	}
	if len(turns) == 0 {
		return nil, errBadBody("openai request", errors.New("no user or assistant messages"))
	}
	for _, t := range turns {
		out.Messages = append(out.Messages, anMessage{Role: t.role, Content: mustMarshal(t.blocks)})
	}
	return marshal(out)
}

// anthropicThinking maps reasoning_effort to thinking (see budgetOfEffort;
// "none" and "minimal" ask for none). Anthropic wants budget_tokens below
// max_tokens, which counts thinking and answer together: when max_tokens is
// not above the budget, it is raised to budget + max_tokens, so the answer
// keeps the room the request gave it (the total may then pass the client's
// limit, and a model's output maximum: Anthropic answers 400 then). With
// thinking Anthropic refuses a temperature other than 1, top_k, a top_p
// below 0.95 and forced tool use (tool_choice any or tool): those are
// *UnsupportedError. Reasoning content in assistant history
// (reasoning_content) is not sent back: Anthropic takes back only thinking
// blocks with its own signature.
func anthropicThinking(ext map[string]json.RawMessage, r *oaRequest, out *anRequest) error {
	raw, ok := ext["reasoning_effort"]
	if !ok {
		return nil
	}
	var effort string
	if err := json.Unmarshal(raw, &effort); err != nil {
		return errBadBody("openai request: reasoning_effort", err)
	}
	budget, known := budgetOfEffort(effort)
	switch {
	case !known:
		return unsupported(Anthropic, "reasoning_effort %q", effort)
	case budget == 0:
		return nil
	case out.Temperature != nil && *out.Temperature != 1:
		return unsupported(Anthropic, "temperature other than 1 with reasoning_effort")
	case out.TopK != nil:
		return unsupported(Anthropic, "top_k with reasoning_effort")
	case out.TopP != nil && *out.TopP < 0.95:
		return unsupported(Anthropic, "top_p below 0.95 with reasoning_effort")
	}
	if tc, _ := r.toolChoice(Anthropic); len(r.Tools) > 0 && (tc.mode == "required" || tc.mode == "function") {
		return unsupported(Anthropic, "forced tool use (tool_choice %s) with reasoning_effort", tc.mode)
	}
	if out.MaxTokens <= budget {
		out.MaxTokens += budget
	}
	out.Thinking = mustMarshal(anThinking{Type: "enabled", BudgetTokens: budget})
	return nil
}

// anTurn is one Anthropic message while it is being built.
type anTurn struct {
	role   string
	blocks []anBlock
}

// appendTurn adds blocks as a role turn, merging them into the previous turn
// when it has the same role: Anthropic wants user and assistant to alternate.
// A message with no blocks (an empty text) adds nothing.
func appendTurn(turns []anTurn, role string, blocks []anBlock) []anTurn {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].role == role {
		turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
		return turns
	}
	return append(turns, anTurn{role: role, blocks: blocks})
}

func anthropicUserBlocks(parts []oaPart) ([]anBlock, error) {
	var blocks []anBlock
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, textBlock(p.Text))
			}
		case "image_url":
			u, err := p.imageURL()
			if err != nil {
				return nil, err
			}
			b, err := anthropicImage(u)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		case "file":
			b, err := anthropicDocument(p)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		default:
			return nil, unsupported(Anthropic, "user content of type %q", p.Type)
		}
	}
	return blocks, nil
}

func anthropicImage(u string) (anBlock, error) {
	if mime, data, ok := parseDataURL(u); ok {
		if !containsFold(anthropicImageTypes, mime) {
			return anBlock{}, unsupported(Anthropic, "image type %q", mime)
		}
		return anBlock{Type: "image", Source: &anSource{Type: "base64", MediaType: strings.ToLower(mime), Data: data}}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return anBlock{Type: "image", Source: &anSource{Type: "url", URL: u}}, nil
	}
	return anBlock{}, unsupported(Anthropic, "image URL scheme of %.16q", u)
}

// anthropicDocument maps an OpenAI file part holding a base64 PDF.
func anthropicDocument(p oaPart) (anBlock, error) {
	if p.File == nil || p.File.FileData == "" {
		return anBlock{}, unsupported(Anthropic, "file content by file_id")
	}
	mime, data, ok := parseDataURL(p.File.FileData)
	if !ok {
		return anBlock{}, errBadBody("openai request", errors.New("file_data is not a base64 data URL"))
	}
	if !strings.EqualFold(mime, "application/pdf") {
		return anBlock{}, unsupported(Anthropic, "file type %q", mime)
	}
	return anBlock{Type: "document", Source: &anSource{Type: "base64", MediaType: "application/pdf", Data: data}, Title: p.File.Filename}, nil
}

func anthropicAssistantBlocks(m oaMessage, parts []oaPart) ([]anBlock, error) {
	var blocks []anBlock
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, textBlock(p.Text))
			}
		case "refusal":
			if p.Refusal != "" {
				blocks = append(blocks, textBlock(p.Refusal))
			}
		default:
			return nil, unsupported(Anthropic, "assistant content of type %q", p.Type)
		}
	}
	if m.Refusal != nil && *m.Refusal != "" && len(parts) == 0 {
		blocks = append(blocks, textBlock(*m.Refusal))
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, unsupported(Anthropic, "tool call of type %q", tc.Type)
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, errBadBody("openai request", errors.New("tool call without id or function name"))
		}
		args, err := argumentsObject(tc.Function.Arguments)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, anBlock{Type: "tool_use", ID: anthropicID(tc.ID), Name: tc.Function.Name, Input: args})
	}
	return blocks, nil
}

// anthropicTools sets tools and tool_choice.
func anthropicTools(r *oaRequest, out *anRequest) error {
	if err := r.functionTools(Anthropic); err != nil {
		return err
	}
	for _, t := range r.Tools {
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if !isNull(t.Function.Parameters) {
			schema = compactJSON(t.Function.Parameters)
		}
		out.Tools = append(out.Tools, anTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	tc, err := r.toolChoice(Anthropic)
	if err != nil {
		return err
	}
	if len(out.Tools) == 0 {
		return nil // no tools, nothing to choose: Anthropic refuses tool_choice alone
	}
	noParallel := r.ParallelToolCalls != nil && !*r.ParallelToolCalls
	switch tc.mode {
	case "none":
		out.ToolChoice = &anToolChoice{Type: "none"}
	case "auto":
		out.ToolChoice = &anToolChoice{Type: "auto", DisableParallelToolUse: noParallel}
	case "required":
		out.ToolChoice = &anToolChoice{Type: "any", DisableParallelToolUse: noParallel}
	case "function":
		out.ToolChoice = &anToolChoice{Type: "tool", Name: tc.name, DisableParallelToolUse: noParallel}
	default:
		if noParallel && len(out.Tools) > 0 {
			out.ToolChoice = &anToolChoice{Type: "auto", DisableParallelToolUse: true}
		}
	}
	return nil
}

// anthropicID makes a tool call id acceptable to Anthropic, whose ids match
// ^[a-zA-Z0-9_-]+$: every other byte becomes "_". The same id always maps
// to the same result, so a tool_use and its tool_result still pair up.
func anthropicID(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
