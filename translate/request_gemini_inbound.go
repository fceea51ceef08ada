package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Gemini inbound: a client of Google's own API (generateContent,
// streamGenerateContent) served through the canonical format. The mapping
// is documented in the package documentation, under "Gemini clients".

// gmInRequest is a generateContent request as GeminiRequestToOpenAI reads
// it. Members are in Google's JSON names (lowerCamelCase), as Google's
// SDKs send them.
type gmInRequest struct {
	Contents          []gmInContent                `json:"contents"`
	SystemInstruction *gmInContent                 `json:"systemInstruction"`
	Tools             []map[string]json.RawMessage `json:"tools"`
	ToolConfig        *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig json.RawMessage `json:"generationConfig"`
}

type gmInContent struct {
	Role  string                       `json:"role"`
	Parts []map[string]json.RawMessage `json:"parts"`
}

// gmInGeneration is generationConfig as read; gmInGenerationKnown lists
// the members it maps.
type gmInGeneration struct {
	StopSequences      []string        `json:"stopSequences"`
	ResponseMimeType   string          `json:"responseMimeType"`
	ResponseSchema     json.RawMessage `json:"responseSchema"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	ResponseModalities []string        `json:"responseModalities"`
	CandidateCount     *int            `json:"candidateCount"`
	MaxOutputTokens    *int            `json:"maxOutputTokens"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"topP"`
	TopK               *float64        `json:"topK"`
	Seed               *int64          `json:"seed"`
	PresencePenalty    *float64        `json:"presencePenalty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty"`
	ThinkingConfig     *struct {
		IncludeThoughts *bool  `json:"includeThoughts"`
		ThinkingBudget  *int   `json:"thinkingBudget"`
		ThinkingLevel   string `json:"thinkingLevel"`
	} `json:"thinkingConfig"`
}

var gmInGenerationKnown = []string{
	"stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
	"candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty",
	"frequencyPenalty", "thinkingConfig",
}

// gmInKnown are the generateContent request members GeminiRequestToOpenAI
// maps; "model" (the SDKs' path already names it) is ignored. Any other
// member (safetySettings, cachedContent, …) is refused.
var gmInKnown = []string{"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model"}

// GeminiInboundOptions tunes GeminiRequestToOpenAI. The zero value is a
// request that does not stream, for no model.
type GeminiInboundOptions struct {
	// Model is the canonical body's "model": the pool or model the URL
	// names (models/{model}:generateContent).
	Model string
	// Stream makes a streaming request (streamGenerateContent), which
	// also asks for the usage chunk: the Gemini stream's last chunk
	// carries usageMetadata.
	Stream bool
}

// GeminiRequestToOpenAI converts an inbound Gemini generateContent request
// (the body of models/{model}:generateContent or :streamGenerateContent)
// to the canonical OpenAI chat completions request. A feature the
// canonical format cannot carry is an *UnsupportedError with Target
// OpenAI; a malformed body is any other error.
func GeminiRequestToOpenAI(body []byte, opt GeminiInboundOptions) ([]byte, error) {
	members, err := decodeObject(body)
	if err != nil {
		return nil, errBadBody("gemini request", err)
	}
	if err := refuseUnknown(members, gmInKnown, ""); err != nil {
		return nil, err
	}
	var r gmInRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("gemini request", err)
	}
	if len(r.Contents) == 0 {
		return nil, errBadBody("gemini request", errors.New("contents is not specified"))
	}
	out := gmOutRequest{oaOutRequest: oaOutRequest{Model: opt.Model, Stream: opt.Stream}}
	if opt.Stream {
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	if err := gmInGenerationConfig(r.GenerationConfig, &out); err != nil {
		return nil, err
	}
	if err := gmInTools(&r, &out); err != nil {
		return nil, err
	}
	if r.SystemInstruction != nil {
		var parts []oaOutPart
		for i, p := range r.SystemInstruction.Parts {
			text, err := gmInTextPart(p, fmt.Sprintf("systemInstruction.parts[%d]", i))
			if err != nil {
				return nil, err
			}
			if text != "" {
				parts = append(parts, oaOutPart{Type: "text", Text: &text})
			}
		}
		if len(parts) > 0 {
			out.Messages = append(out.Messages, oaOutMessage{Role: "system", Content: contentOf(parts)})
		}
	}
	calls := &gmInCalls{byName: map[string][]string{}}
	for i, c := range r.Contents {
		var msgs []oaOutMessage
		switch c.Role {
		case "", "user", "function":
			msgs, err = gmInUser(c.Parts, calls)
		case "model":
			msgs, err = gmInModel(c.Parts, calls, i)
		default:
			err = errBadBody("gemini request", fmt.Errorf("please use a valid role: user, model (not %q)", c.Role))
		}
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	return marshal(out)
}

// refuseUnknown refuses a non-null member of members not in known; where
// prefixes its name in the error ("generationConfig.").
func refuseUnknown(members map[string]json.RawMessage, known []string, where string) error {
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !isNull(members[k]) && !slices.Contains(known, k) {
			return unsupported(OpenAI, "parameter %q", where+k)
		}
	}
	return nil
}

// gmInGenerationConfig maps generationConfig into out.
func gmInGenerationConfig(raw json.RawMessage, out *gmOutRequest) error {
	if isNull(raw) || len(raw) == 0 {
		return nil
	}
	members, err := decodeObject(raw)
	if err != nil {
		return errBadBody("gemini request: generationConfig", err)
	}
	if err := refuseUnknown(members, gmInGenerationKnown, "generationConfig."); err != nil {
		return err
	}
	var g gmInGeneration
	if err := json.Unmarshal(raw, &g); err != nil {
		return errBadBody("gemini request: generationConfig", err)
	}
	out.Temperature, out.TopP, out.MaxCompletionTokens = g.Temperature, g.TopP, g.MaxOutputTokens
	out.Seed, out.PresencePenalty, out.FrequencyPenalty = g.Seed, g.PresencePenalty, g.FrequencyPenalty
	if g.TopK != nil {
		k := int(*g.TopK)
		out.TopK = &k
	}
	if g.CandidateCount != nil && *g.CandidateCount > 1 {
		out.N = g.CandidateCount
	}
	for _, s := range g.StopSequences {
		if s != "" {
			out.Stop = append(out.Stop, s)
		}
	}
	for _, m := range g.ResponseModalities {
		if !strings.EqualFold(m, "TEXT") {
			return unsupported(OpenAI, "responseModalities %q", m)
		}
	}
	if err := gmInResponseFormat(&g, out); err != nil {
		return err
	}
	if tc := g.ThinkingConfig; tc != nil {
		switch {
		case tc.ThinkingLevel != "":
			switch l := strings.ToLower(tc.ThinkingLevel); l {
			case "minimal", "low", "medium", "high":
				out.ReasoningEffort = l
			default:
				return unsupported(OpenAI, "thinkingLevel %q", tc.ThinkingLevel)
			}
		case tc.ThinkingBudget != nil && *tc.ThinkingBudget == 0:
			out.ReasoningEffort = "none"
		case tc.ThinkingBudget != nil && *tc.ThinkingBudget < 0:
			out.ReasoningEffort = "medium" // dynamic thinking: the model decides
		case tc.ThinkingBudget != nil:
			out.ReasoningEffort = effortOfBudget(*tc.ThinkingBudget)
		}
	}
	return nil
}

// gmInResponseFormat maps responseMimeType and a response schema to
// response_format.
func gmInResponseFormat(g *gmInGeneration, out *gmOutRequest) error {
	hasSchema, hasJSONSchema := !isNull(g.ResponseSchema) && len(g.ResponseSchema) > 0, !isNull(g.ResponseJSONSchema) && len(g.ResponseJSONSchema) > 0
	switch g.ResponseMimeType {
	case "", "text/plain":
		if hasSchema || hasJSONSchema {
			return errBadBody("gemini request", errors.New("generationConfig: a response schema needs responseMimeType application/json"))
		}
		return nil
	case "application/json":
	default:
		return unsupported(OpenAI, "responseMimeType %q", g.ResponseMimeType)
	}
	switch {
	case hasSchema && hasJSONSchema:
		return errBadBody("gemini request", errors.New("generationConfig: responseSchema and responseJsonSchema are exclusive"))
	case hasSchema:
		s, err := jsonSchemaOfGemini(g.ResponseSchema, "generationConfig.responseSchema")
		if err != nil {
			return err
		}
		out.ResponseFormat = &oaOutResponseFormat{Type: "json_schema", JSONSchema: &oaOutJSONSchema{Name: "response", Schema: s}}
	case hasJSONSchema:
		out.ResponseFormat = &oaOutResponseFormat{Type: "json_schema", JSONSchema: &oaOutJSONSchema{Name: "response", Schema: compactJSON(g.ResponseJSONSchema)}}
	default:
		out.ResponseFormat = &oaOutResponseFormat{Type: "json_object"}
	}
	return nil
}

// gmInTools maps functionDeclarations and toolConfig. Tools of other kinds
// (googleSearch, codeExecution, urlContext, …) are Google's own and are
// refused.
func gmInTools(r *gmInRequest, out *gmOutRequest) error {
	names := map[string]bool{}
	for i, t := range r.Tools {
		for k, v := range t {
			if k != "functionDeclarations" && !isNull(v) {
				return unsupported(OpenAI, "tool %q", k)
			}
		}
		var decls []map[string]json.RawMessage
		if raw, ok := t["functionDeclarations"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &decls); err != nil {
				return errBadBody("gemini request", fmt.Errorf("tools[%d].functionDeclarations: %w", i, err))
			}
		}
		for j, d := range decls {
			where := fmt.Sprintf("tools[%d].functionDeclarations[%d]", i, j)
			if err := refuseUnknown(d, []string{"name", "description", "parameters", "parametersJsonSchema", "response", "responseJsonSchema"}, where+"."); err != nil {
				return err
			}
			var f struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
				JSONSchema  json.RawMessage `json:"parametersJsonSchema"`
			}
			b, _ := json.Marshal(d)
			if err := json.Unmarshal(b, &f); err != nil || f.Name == "" {
				return errBadBody("gemini request", fmt.Errorf("%s: a function declaration needs a name", where))
			}
			fn := oaOutFunction{Name: f.Name, Description: f.Description}
			switch {
			case !isNull(f.Parameters) && len(f.Parameters) > 0:
				s, err := jsonSchemaOfGemini(f.Parameters, where+".parameters")
				if err != nil {
					return err
				}
				fn.Parameters = s
			case !isNull(f.JSONSchema) && len(f.JSONSchema) > 0:
				fn.Parameters = compactJSON(f.JSONSchema)
			}
			names[f.Name] = true
			out.Tools = append(out.Tools, oaOutTool{Type: "function", Function: fn})
		}
	}
	if r.ToolConfig == nil || r.ToolConfig.FunctionCallingConfig == nil || len(out.Tools) == 0 {
		return nil
	}
	fc := r.ToolConfig.FunctionCallingConfig
	allowed := fc.AllowedFunctionNames
	switch fc.Mode {
	case "", "MODE_UNSPECIFIED", "AUTO":
		if len(allowed) > 0 {
			return unsupported(OpenAI, "allowedFunctionNames with mode AUTO")
		}
		out.ToolChoice = "auto"
	case "NONE":
		out.ToolChoice = "none"
	case "ANY":
		switch {
		case len(allowed) == 0 || len(allowed) == len(names) && allIn(allowed, names):
			out.ToolChoice = "required"
		case len(allowed) == 1:
			out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": allowed[0]}}
		default:
			return unsupported(OpenAI, "allowedFunctionNames naming some of several functions")
		}
	default:
		return unsupported(OpenAI, "functionCallingConfig mode %q", fc.Mode)
	}
	return nil
}

func allIn(list []string, set map[string]bool) bool {
	for _, s := range list {
		if !set[s] {
			return false
		}
	}
	return true
}

// gmInCalls pairs function responses with the calls they answer: by the
// call's id when the client kept it, else by name, in order.
type gmInCalls struct {
	byName map[string][]string // function name -> ids of its calls not yet answered
}

// callID is the canonical id of the n-th function call of contents[turn]:
// the call's own id when it has one.
func gmInCallID(fc *gmFunctionCall, turn, n int) string {
	if fc.ID != "" {
		return fc.ID
	}
	return "call_" + shortHash("gemini-inbound", itoa(turn), itoa(n), fc.Name, string(fc.Args))
}

// gmInTextPart reads a part that may only be text; a thought part reads
// as "".
func gmInTextPart(p map[string]json.RawMessage, where string) (string, error) {
	for k, v := range p {
		switch k {
		case "text", "thought", "thoughtSignature":
		default:
			if !isNull(v) {
				return "", unsupported(OpenAI, "%s with %q", where, k)
			}
		}
	}
	var t struct {
		Text    string `json:"text"`
		Thought bool   `json:"thought"`
	}
	b, _ := json.Marshal(p)
	if err := json.Unmarshal(b, &t); err != nil {
		return "", errBadBody("gemini request", fmt.Errorf("%s: %w", where, err))
	}
	if t.Thought {
		return "", nil
	}
	return t.Text, nil
}

// gmInPart is a content part as read.
type gmInPart struct {
	Text             *string         `json:"text"`
	Thought          bool            `json:"thought"`
	InlineData       *gmBlob         `json:"inlineData"`
	FunctionCall     *gmFunctionCall `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// gmInPartKnown are the part members read; thoughtSignature (Gemini's
// own, meaningless to another model) is ignored.
var gmInPartKnown = []string{"text", "thought", "thoughtSignature", "inlineData", "functionCall", "functionResponse"}

func gmInDecodePart(p map[string]json.RawMessage, i int) (gmInPart, error) {
	var part gmInPart
	if err := refuseUnknown(p, gmInPartKnown, fmt.Sprintf("parts[%d].", i)); err != nil {
		return part, err
	}
	b, _ := json.Marshal(p)
	if err := json.Unmarshal(b, &part); err != nil {
		return part, errBadBody("gemini request", fmt.Errorf("parts[%d]: %w", i, err))
	}
	return part, nil
}

// gmInUser maps a user turn: text and inline data become a user message,
// each functionResponse a tool message (in the order they come, text after
// them in a user message of its own).
func gmInUser(parts []map[string]json.RawMessage, calls *gmInCalls) ([]oaOutMessage, error) {
	var out []oaOutMessage
	var user []oaOutPart
	flush := func() {
		if len(user) > 0 {
			out = append(out, oaOutMessage{Role: "user", Content: contentOf(user)})
			user = nil
		}
	}
	for i, raw := range parts {
		p, err := gmInDecodePart(raw, i)
		if err != nil {
			return nil, err
		}
		switch {
		case p.Thought:
		case p.FunctionResponse != nil:
			flush()
			fr := p.FunctionResponse
			id := fr.ID
			if id == "" {
				ids := calls.byName[fr.Name]
				if len(ids) == 0 {
					return nil, errBadBody("gemini request", fmt.Errorf("parts[%d]: functionResponse %q answers no earlier functionCall", i, fr.Name))
				}
				id, calls.byName[fr.Name] = ids[0], ids[1:]
			} else if ids := calls.byName[fr.Name]; len(ids) > 0 {
				calls.byName[fr.Name] = slices.DeleteFunc(ids, func(s string) bool { return s == id })
			}
			out = append(out, oaOutMessage{Role: "tool", Content: gmInResponseText(fr.Response), ToolCallID: id})
		case p.InlineData != nil:
			part, err := gmInBlob(p.InlineData)
			if err != nil {
				return nil, err
			}
			user = append(user, part)
		case p.FunctionCall != nil:
			return nil, errBadBody("gemini request", fmt.Errorf("parts[%d]: a functionCall in a user turn", i))
		case p.Text != nil:
			if *p.Text != "" {
				user = append(user, oaOutPart{Type: "text", Text: p.Text})
			}
		}
	}
	flush()
	return out, nil
}

// gmInResponseText is a function response as a tool message's text: the
// "output" (or "result") member when it is the response's only member and
// a string, else the response object as JSON.
func gmInResponseText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for _, k := range []string{"output", "result"} {
			var s string
			if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	if isNull(raw) || len(raw) == 0 {
		return "{}"
	}
	return string(compactJSON(raw))
}

// gmInBlob maps inline data: images (JPEG, PNG, GIF, WebP) to image_url
// data URLs, a PDF to a file part; other media are refused.
func gmInBlob(b *gmBlob) (oaOutPart, error) {
	switch b.MimeType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return oaOutPart{Type: "image_url", ImageURL: &oaOutURL{URL: "data:" + b.MimeType + ";base64," + b.Data}}, nil
	case "application/pdf":
		return oaOutPart{Type: "file", File: &oaOutFile{Filename: "document.pdf", FileData: "data:application/pdf;base64," + b.Data}}, nil
	}
	return oaOutPart{}, unsupported(OpenAI, "inlineData of type %q", b.MimeType)
}

// gmInModel maps a model turn: text becomes the assistant's content,
// function calls its tool_calls. Thought parts are left out, as Anthropic
// thinking blocks are.
func gmInModel(parts []map[string]json.RawMessage, calls *gmInCalls, turn int) ([]oaOutMessage, error) {
	var texts []string
	var tcs []oaToolCall
	for i, raw := range parts {
		p, err := gmInDecodePart(raw, i)
		if err != nil {
			return nil, err
		}
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			args := "{}"
			if !isNull(fc.Args) && len(fc.Args) > 0 {
				a, err := argumentsObject(string(fc.Args))
				if err != nil {
					return nil, errBadBody("gemini request", fmt.Errorf("parts[%d]: functionCall args are not an object", i))
				}
				args = string(a)
			}
			var tc oaToolCall
			tc.ID, tc.Type = gmInCallID(fc, turn, len(tcs)), "function"
			tc.Function.Name, tc.Function.Arguments = fc.Name, args
			tcs = append(tcs, tc)
			calls.byName[fc.Name] = append(calls.byName[fc.Name], tc.ID)
		case p.InlineData != nil, p.FunctionResponse != nil:
			return nil, unsupported(OpenAI, "a model turn with %s", gmInPartKind(p))
		case p.Text != nil:
			texts = append(texts, *p.Text)
		}
	}
	m := oaOutMessage{Role: "assistant", ToolCalls: tcs}
	if len(texts) > 0 {
		m.Content = strings.Join(texts, "")
	}
	if m.Content == nil && len(tcs) == 0 {
		m.Content = ""
	}
	return []oaOutMessage{m}, nil
}

func gmInPartKind(p gmInPart) string {
	if p.InlineData != nil {
		return "inlineData"
	}
	return "functionResponse"
}

// jsonSchemaOfGemini converts a Gemini Schema (OpenAPI 3.0 subset: upper
// case types, nullable, int64 limits as strings) to JSON Schema. Members
// it does not know are refused.
func jsonSchemaOfGemini(raw json.RawMessage, where string) (json.RawMessage, error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil, errBadBody("gemini request: "+where, err)
	}
	out, err := gmSchemaConv(v, where, 0)
	if err != nil {
		return nil, err
	}
	return marshal(out)
}

// gmSchemaKeep are Schema members JSON Schema has under the same name and
// meaning.
var gmSchemaKeep = []string{"description", "title", "format", "pattern", "default", "example", "required", "enum", "minimum", "maximum"}

// gmSchemaInts are Schema members of type int64, which proto3 JSON writes
// as strings.
var gmSchemaInts = []string{"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"}

func gmSchemaConv(v any, at string, depth int) (*jsonObj, error) {
	if depth > 64 {
		return nil, errBadBody("gemini request", fmt.Errorf("%s: schema nests too deep", at))
	}
	o, ok := v.(*object)
	if !ok {
		return nil, errBadBody("gemini request", fmt.Errorf("%s: a schema must be an object", at))
	}
	out := &jsonObj{}
	nullable := false
	var typ string
	for _, k := range o.keys {
		val := o.vals[k]
		switch {
		case k == "type":
			s, _ := val.(string)
			t := strings.ToLower(s)
			switch t {
			case "string", "number", "integer", "boolean", "array", "object", "null":
				typ = t
			case "type_unspecified", "":
			default:
				return nil, errBadBody("gemini request", fmt.Errorf("%s.type: unknown type %q", at, s))
			}
		case k == "nullable":
			nullable, _ = val.(bool)
		case k == "propertyOrdering":
			// an order for Gemini's output; JSON Schema keeps the
			// declared order of properties
		case slices.Contains(gmSchemaKeep, k):
			out.set(k, plain(val))
		case slices.Contains(gmSchemaInts, k):
			switch n := val.(type) {
			case string:
				i, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					return nil, errBadBody("gemini request", fmt.Errorf("%s.%s: not an integer", at, k))
				}
				out.set(k, i)
			default:
				out.set(k, plain(val))
			}
		case k == "items":
			s, err := gmSchemaConv(val, at+".items", depth+1)
			if err != nil {
				return nil, err
			}
			out.set(k, s)
		case k == "properties":
			po, ok := val.(*object)
			if !ok {
				return nil, errBadBody("gemini request", fmt.Errorf("%s.properties: not an object", at))
			}
			props := &jsonObj{}
			for _, name := range po.keys {
				s, err := gmSchemaConv(po.vals[name], at+".properties."+name, depth+1)
				if err != nil {
					return nil, err
				}
				props.set(name, s)
			}
			out.set(k, props)
		case k == "anyOf":
			list, ok := val.([]any)
			if !ok {
				return nil, errBadBody("gemini request", fmt.Errorf("%s.anyOf: not a list", at))
			}
			var conv []any
			for i, e := range list {
				s, err := gmSchemaConv(e, fmt.Sprintf("%s.anyOf[%d]", at, i), depth+1)
				if err != nil {
					return nil, err
				}
				conv = append(conv, s)
			}
			out.set(k, conv)
		default:
			return nil, unsupported(OpenAI, "schema member %q at %s", k, at)
		}
	}
	switch {
	case typ != "" && nullable:
		out.set("type", []string{typ, "null"})
	case typ != "":
		out.set("type", typ)
	}
	return out, nil
}

// gmOutRequest is the canonical request GeminiRequestToOpenAI writes: the
// Anthropic inbound's, with the members Gemini has and Anthropic lacks.
type gmOutRequest struct {
	oaOutRequest
	N                *int                 `json:"n,omitempty"`
	Seed             *int64               `json:"seed,omitempty"`
	PresencePenalty  *float64             `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64             `json:"frequency_penalty,omitempty"`
	ResponseFormat   *oaOutResponseFormat `json:"response_format,omitempty"`
}

type oaOutResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema *oaOutJSONSchema `json:"json_schema,omitempty"`
}

type oaOutJSONSchema struct {
	Name   string `json:"name"`
	Schema any    `json:"schema"`
}

// jsonObj is a JSON object written with its keys in the order set.
type jsonObj struct {
	keys []string
	vals map[string]any
}

func (o *jsonObj) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// MarshalJSON implements json.Marshaler.
func (o *jsonObj) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}
