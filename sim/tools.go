package sim

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// toolSpec is a tool a request offers: its name and the JSON schema of its
// parameters (OpenAI function.parameters, Anthropic input_schema, Gemini
// functionDeclarations[].parameters).
type toolSpec struct {
	name   string
	schema json.RawMessage
}

// toolPick is the call the sim answers with instead of text: the tool's
// name and its arguments, a compact JSON object.
type toolPick struct {
	name string
	args string
}

// chooseTool decides whether a request is answered with a tool call, and
// with which: none when no tool is offered, when the tool choice forbids
// calls (none) or when the last message is not a user turn (it is the
// result of an earlier call, or an assistant turn); otherwise the forced
// tool if forced names one, else the first offered. It returns
// errBadRequest when forced names no offered tool.
func chooseTool(tools []toolSpec, forbid bool, forced string, userTurnLast bool) (*toolPick, error) {
	if len(tools) == 0 || forbid || !userTurnLast {
		return nil, nil
	}
	t := tools[0]
	if forced != "" {
		found := false
		for _, c := range tools {
			if c.name == forced {
				t, found = c, true
				break
			}
		}
		if !found {
			return nil, badRequest("tool choice names %q, which is not among the tools offered", forced)
		}
	}
	return &toolPick{name: t.name, args: toolArguments(t.schema)}, nil
}

// jsonSchema is the part of a JSON schema (or Gemini's OpenAPI subset) that
// the sim reads to fill in arguments.
type jsonSchema struct {
	Type       json.RawMessage            `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Enum       []json.RawMessage          `json:"enum"`
	AnyOf      []json.RawMessage          `json:"anyOf"`
	OneOf      []json.RawMessage          `json:"oneOf"`
}

// toolArguments returns the arguments the sim calls a tool with: a JSON
// object with every required property of schema, in the order required
// lists them, set by its type: string "x", number and integer 1, boolean
// true, array [], object {}; a property with an enum takes its first value;
// anything else null. Optional properties are left out, so a schema without
// required properties (or one that does not parse) gives {}.
func toolArguments(schema json.RawMessage) string {
	var s jsonSchema
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	var b strings.Builder
	b.WriteByte('{')
	seen := map[string]bool{}
	for _, name := range s.Required {
		if seen[name] {
			continue
		}
		seen[name] = true
		if len(seen) > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(placeholder(s.Properties[name], 0))
	}
	b.WriteByte('}')
	return b.String()
}

// placeholder is the deterministic value of a property with schema prop.
// depth bounds the walk through anyOf/oneOf.
func placeholder(prop json.RawMessage, depth int) []byte {
	var s jsonSchema
	if len(prop) == 0 || depth > 8 || json.Unmarshal(prop, &s) != nil {
		return []byte("null")
	}
	if len(s.Enum) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, s.Enum[0]) == nil {
			return buf.Bytes()
		}
	}
	switch schemaType(s.Type) {
	case "string":
		return []byte(`"x"`)
	case "number", "integer":
		return []byte("1")
	case "boolean":
		return []byte("true")
	case "array":
		return []byte("[]")
	case "object":
		return []byte("{}")
	case "":
		for _, alt := range append(s.AnyOf, s.OneOf...) {
			if v := placeholder(alt, depth+1); string(v) != "null" {
				return v
			}
		}
	}
	return []byte("null")
}

// schemaType is a schema's type in lower case (Gemini writes "STRING"); of
// a list of types, the first that is not "null".
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.ToLower(one)
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t = strings.ToLower(t); t != "null" {
				return t
			}
		}
	}
	return ""
}

// toolCall is a tool call in an answer.
type toolCall struct {
	id   string // call_… (openai, azure), toolu_… (anthropic), "" (gemini)
	name string
	args string
}

// fragments splits the arguments into the pieces a stream sends, one per
// simulated token of four characters; their count is the call's
// completion tokens.
func (t *toolCall) fragments() []string {
	const perToken = 4
	var out []string
	s := t.args
	for s != "" {
		n, i := 0, 0
		for i < len(s) && n < perToken {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// toolCallID draws the id of a tool call in the flavour's format.
func toolCallID(rng *rand.Rand, fl Flavour) string {
	switch fl {
	case Anthropic:
		return randomID(rng, "toolu_01", 22)
	case Gemini:
		return ""
	default:
		return randomID(rng, "call_", 24)
	}
}
