package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
)

// This file holds what the sim emulates of reasoning ("thinking"): how
// many tokens of thought each flavour's request asks for, and the
// signature of an Anthropic thinking block. The thought is words from the
// same list as answers, one per token, drawn after the answer's own.

// maxChoices is the largest "n" a chat completion may ask for, as OpenAI
// allows.
const maxChoices = 128

// thoughtTokens is the length of a thought whose request names no effort
// (Anthropic's thinking, Gemini's thinkingConfig, OpenAI's "medium").
const thoughtTokens = 16

// efforts maps OpenAI's reasoning effort to the tokens of thought the sim
// answers with: more effort, more thought.
var efforts = map[string]int{
	"none":    0,
	"minimal": 4,
	"low":     8,
	"medium":  thoughtTokens,
	"high":    32,
	"xhigh":   48,
}

// effortTokens is the thought of a reasoning effort; "" asks for none.
// field names the request member in the error. Errors wrap errBadRequest.
func effortTokens(effort, field string) (int, error) {
	if effort == "" {
		return 0, nil
	}
	n, ok := efforts[effort]
	if !ok {
		return 0, badRequest("Invalid value: '%s'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high' and 'xhigh'. (%s)", effort, field)
	}
	return n, nil
}

// anthropicThinking is the thinking member of a Messages request.
type anthropicThinking struct {
	Type         string `json:"type"` // enabled, disabled, adaptive
	BudgetTokens *int   `json:"budget_tokens"`
}

// thinkingTokens checks thinking as Anthropic does (budget_tokens at least
// 1,024 and below max_tokens) and returns the thought it asks for.
// Errors wrap errBadRequest.
func thinkingTokens(raw json.RawMessage, maxTokens int) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	var t anthropicThinking
	if err := json.Unmarshal(raw, &t); err != nil {
		return 0, badRequest("thinking: %v", err)
	}
	switch t.Type {
	case "disabled":
		return 0, nil
	case "adaptive":
		return thoughtTokens, nil
	case "enabled":
	default:
		return 0, badRequest("thinking.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'", t.Type)
	}
	if t.BudgetTokens == nil {
		return 0, badRequest("thinking.enabled.budget_tokens: Field required")
	}
	budget := *t.BudgetTokens
	if budget < 1024 {
		return 0, badRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
	}
	if maxTokens <= budget {
		return 0, badRequest("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
	}
	return thoughtTokens, nil
}

// geminiThinking is generationConfig.thinkingConfig of a generateContent
// request.
type geminiThinking struct {
	ThinkingBudget  *int   `json:"thinkingBudget"`
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingLevel   string `json:"thinkingLevel"`
}

// tokens is the thought a thinkingConfig asks for: none for a budget of
// 0, at most a positive budget, else thoughtTokens.
func (g *geminiThinking) tokens() int {
	if g == nil {
		return 0
	}
	if b := g.ThinkingBudget; b != nil && *b >= 0 {
		return min(*b, thoughtTokens)
	}
	return thoughtTokens
}

// thinkingSignature draws the signature of a thinking block: opaque
// base64, as Anthropic's is, that the sim never checks when it comes back.
func thinkingSignature(rng *rand.Rand) string {
	b := make([]byte, 48)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return base64.StdEncoding.EncodeToString(b)
}
