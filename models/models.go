// Package models names a model the same way whichever cloud serves it:
// Anthropic's claude-sonnet-4-5-20250929, Bedrock's
// anthropic.claude-sonnet-4-5-20250929-v1:0 (and its us. or eu.
// cross-region inference profiles), Vertex AI's
// claude-sonnet-4-5@20250929, Gemini's models/gemini-2.5-flash and
// OpenRouter's anthropic/claude-sonnet-4.5 are all claude-sonnet-4-5. It
// keeps a table of what each known model can do (context window, tools,
// vision, thinking), so that a pool whose members are one model on
// several clouds can be checked for members that disagree. It has no
// state and is safe for concurrent use.
package models

import (
	"regexp"
	"strings"
)

// Model is what a model can do, by its canonical id.
type Model struct {
	// ID is the canonical id: the model's name without provider prefix,
	// version date or deployment suffix.
	ID string
	// Context is the context window in tokens (prompt and answer).
	Context int
	// Tools, Vision and Thinking say whether the model takes tool
	// definitions, images, and a reasoning budget or effort.
	Tools, Vision, Thinking bool
}

// table is the known models, by canonical id, as their makers document
// them (2026-03).
var table = map[string]Model{
	"claude-opus-4-5":        {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-opus-4-1":        {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-opus-4":          {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-sonnet-4-5":      {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-sonnet-4":        {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-haiku-4-5":       {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"claude-3-5-haiku":       {Context: 200_000, Tools: true},
	"gpt-5":                  {Context: 400_000, Tools: true, Vision: true, Thinking: true},
	"gpt-5-mini":             {Context: 400_000, Tools: true, Vision: true, Thinking: true},
	"gpt-4.1":                {Context: 1_047_576, Tools: true, Vision: true},
	"gpt-4.1-mini":           {Context: 1_047_576, Tools: true, Vision: true},
	"gpt-4o":                 {Context: 128_000, Tools: true, Vision: true},
	"gpt-4o-mini":            {Context: 128_000, Tools: true, Vision: true},
	"o3":                     {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"o4-mini":                {Context: 200_000, Tools: true, Vision: true, Thinking: true},
	"gemini-2.5-pro":         {Context: 1_048_576, Tools: true, Vision: true, Thinking: true},
	"gemini-2.5-flash":       {Context: 1_048_576, Tools: true, Vision: true, Thinking: true},
	"gemini-2.5-flash-lite":  {Context: 1_048_576, Tools: true, Vision: true, Thinking: true},
	"gemini-2.0-flash":       {Context: 1_048_576, Tools: true, Vision: true},
	"llama-3.3-70b-instruct": {Context: 128_000, Tools: true},
	"deepseek-r1":            {Context: 128_000, Thinking: true},
	"deepseek-v3":            {Context: 128_000, Tools: true},
}

// aliases are the names that no rule turns into the canonical id.
var aliases = map[string]string{
	"llama3-3-70b-instruct":       "llama-3.3-70b-instruct", // Bedrock's meta.llama3-3-70b-instruct-v1:0
	"llama-3.3-70b-versatile":     "llama-3.3-70b-instruct", // Groq
	"meta-llama-3.3-70b-instruct": "llama-3.3-70b-instruct",
	"r1":                          "deepseek-r1", // Bedrock's deepseek.r1-v1:0
	"deepseek-reasoner":           "deepseek-r1", // DeepSeek's API
	"deepseek-chat":               "deepseek-v3",
}

var (
	// bedrockProfile is a cross-region inference profile's prefix.
	bedrockProfile = regexp.MustCompile(`^(us|eu|apac|jp|au|ca|us-gov|global)\.`)
	// bedrockVendor is a Bedrock model id's vendor prefix.
	bedrockVendor = regexp.MustCompile(`^(anthropic|meta|mistral|amazon|cohere|deepseek|openai|ai21|writer|qwen)\.`)
	// bedrockVersion is a Bedrock model id's version suffix: -v1:0, -v2.
	bedrockVersion = regexp.MustCompile(`-v\d+(:\d+)?$`)
	// dated is a version date: -20250929, -2024-08-06, Vertex's @20250929
	// or @001.
	dated = regexp.MustCompile(`(-\d{4}-\d{2}-\d{2}|-\d{8}|@[0-9a-z-]+)$`)
)

// Canonical returns the canonical id of a model id as a provider names
// it (see the package comment). An id it does not know is returned
// lower-cased, without prefix and date, all the same.
func Canonical(id string) string {
	s := strings.ToLower(strings.TrimSpace(id))
	if i := strings.LastIndex(s, "/models/"); i >= 0 { // Vertex's publishers/…/models/…
		s = s[i+len("/models/"):]
	}
	s = strings.TrimPrefix(s, "models/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 { // OpenRouter's vendor/model, Together's org/model
		s = s[i+1:]
	}
	if bedrockVendor.MatchString(bedrockProfile.ReplaceAllString(s, "")) {
		s = bedrockVersion.ReplaceAllString(bedrockVendor.ReplaceAllString(bedrockProfile.ReplaceAllString(s, ""), ""), "")
	}
	s = dated.ReplaceAllString(s, "")
	if strings.HasPrefix(s, "claude-") {
		s = strings.ReplaceAll(s, ".", "-") // OpenRouter's claude-sonnet-4.5
	}
	if a, ok := aliases[s]; ok {
		return a
	}
	return s
}

// Lookup returns what the model named id (any provider's name for it)
// can do, and whether it is known.
func Lookup(id string) (Model, bool) {
	c := Canonical(id)
	m, ok := table[c]
	m.ID = c
	return m, ok
}
