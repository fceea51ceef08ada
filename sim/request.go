package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// operation is an API operation the sim answers.
type operation int

const (
	opChat        operation = iota
	opCompletions           // openai and azure
	opEmbeddings            // openai and azure
	opMessages              // anthropic
	opGenerate              // gemini generateContent and streamGenerateContent
)

// azureName is the operation's name in Azure's 429 message (and in the
// debug log).
func (o operation) azureName() string {
	if name, ok := o.extraName(); ok {
		return name
	}
	switch o {
	case opCompletions:
		return "Completions_Create"
	case opEmbeddings:
		return "Embeddings_Create"
	case opMessages:
		return "Messages_Create"
	case opGenerate:
		return "GenerateContent"
	default:
		return "ChatCompletions_Create"
	}
}

// request is a parsed API request, with what the quota and the answer need.
type request struct {
	op    operation
	model string
	// prompt is all prompt text, for the content filter.
	prompt string
	// promptTokens is the estimate ceil(characters/4) of the prompt (for
	// embeddings: of every input, token arrays counted as their length).
	promptTokens int64
	// maxTokens is max_completion_tokens, else max_tokens (Gemini's
	// maxOutputTokens); 0 when absent.
	maxTokens    int
	stream       bool
	includeUsage bool
	// converse is true for a Bedrock Converse call, answered in
	// Converse's shape (bedrock.go).
	converse bool
	// tool is the tool call to answer with, nil to answer with text; see
	// chooseTool.
	tool *toolPick
	// n is how many choices a chat completion asks for (its "n"); 0 and 1
	// give one.
	n int
	// reasoning is how many tokens of thought the answer has before its
	// text or tool call: set by reasoning_effort (chat), reasoning.effort
	// (Responses), thinking (Anthropic) and thinkingConfig (Gemini); see
	// reasoning.go.
	reasoning int
	// showThought makes the thought part of the answer (Anthropic thinking
	// blocks, Gemini thought parts, a Responses reasoning summary); without
	// it only its tokens are counted, as OpenAI's chat reports them.
	showThought bool
	// logprobs asks for the log probability of each chat token, with
	// topLogprobs alternatives (see logprobs.go).
	logprobs    bool
	topLogprobs int
	// embeddings
	inputs     []string
	dimensions int
	base64     bool
}

// cost is the token estimate charged against TPM before the call: the
// prompt estimate plus the completion cap (or defaultMax when the request
// has none). Embeddings cost their input only.
func (r *request) cost(defaultMax int) int64 {
	if r.op == opEmbeddings {
		return r.promptTokens
	}
	if r.maxTokens > 0 {
		return r.promptTokens + int64(r.maxTokens)
	}
	return r.promptTokens + int64(defaultMax)
}

// estimateTokens is the pre-call estimate of text: ceil(characters / 4).
func estimateTokens(chars int) int64 {
	return int64((chars + 3) / 4)
}

// errBadRequest marks a request the sim cannot parse; the message is shown
// to the client.
var errBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRequest}, args...)...)
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatBody struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	N                   *int            `json:"n"`
	ReasoningEffort     string          `json:"reasoning_effort"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
}

// chatTool is an entry of a chat request's tools; only type "function"
// counts.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// chatToolChoice is the object form of tool_choice:
// {"type":"function","function":{"name":...}}.
type chatToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type completionsBody struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
}

type embeddingsBody struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// parseRequest decodes body for op. Errors wrap errBadRequest.
func parseRequest(op operation, body []byte) (*request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("the request body is empty; expected a JSON object")
	}
	switch op {
	case opChat:
		return parseChat(body)
	case opCompletions:
		return parseCompletions(body)
	case opMessages:
		return parseMessages(body)
	case opGenerate:
		return parseGenerate(body)
	default:
		return parseEmbeddings(body)
	}
}

func maxTokensOf(name string, v *int) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, badRequest("%s must be at least 1, got %d", name, *v)
	}
	return *v, nil
}

func parseChat(body []byte) (*request, error) {
	var b chatBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, badRequest("could not parse the JSON body of your request: %v", err)
	}
	if len(b.Messages) == 0 {
		return nil, badRequest("'messages' is a required property and must not be empty")
	}
	var text strings.Builder
	chars := 0
	for i, m := range b.Messages {
		s, err := contentText(m.Content)
		if err != nil {
			return nil, badRequest("messages[%d].content: %v", i, err)
		}
		chars += utf8.RuneCountInString(s)
		text.WriteString(s)
		text.WriteByte('\n')
	}
	r := &request{op: opChat, model: b.Model, prompt: text.String(), promptTokens: estimateTokens(chars), stream: b.Stream}
	var err error
	if r.maxTokens, err = maxTokensOf("max_tokens", b.MaxTokens); err != nil {
		return nil, err
	}
	mct, err := maxTokensOf("max_completion_tokens", b.MaxCompletionTokens)
	if err != nil {
		return nil, err
	}
	if mct > 0 {
		r.maxTokens = mct
	}
	r.includeUsage = b.Stream && b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	if b.N != nil {
		if *b.N < 1 || *b.N > maxChoices {
			return nil, badRequest("%d is not a valid value for 'n': it must be between 1 and %d", *b.N, maxChoices)
		}
		r.n = *b.N
	}
	if b.TopLogprobs != nil {
		if *b.TopLogprobs < 0 || *b.TopLogprobs > maxTopLogprobs {
			return nil, badRequest("Invalid 'top_logprobs': integer must be between 0 and %d.", maxTopLogprobs)
		}
		if !b.Logprobs {
			return nil, badRequest("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is set.")
		}
		r.topLogprobs = *b.TopLogprobs
	}
	r.logprobs = b.Logprobs
	if r.reasoning, err = effortTokens(b.ReasoningEffort, "reasoning_effort"); err != nil {
		return nil, err
	}
	if r.tool, err = chatToolPick(b); err != nil {
		return nil, err
	}
	return r, nil
}

// chatToolPick applies chooseTool to a chat request: function tools,
// tool_choice "none" forbids, {"type":"function","function":{"name":...}}
// forces, anything else ("auto", "required") lets the first tool be
// called; the last message must have role "user".
func chatToolPick(b chatBody) (*toolPick, error) {
	var tools []toolSpec
	for _, t := range b.Tools {
		if t.Type == "function" {
			tools = append(tools, toolSpec{name: t.Function.Name, schema: t.Function.Parameters})
		}
	}
	forbid, forced := false, ""
	var mode string
	if len(b.ToolChoice) > 0 && json.Unmarshal(b.ToolChoice, &mode) == nil {
		forbid = mode == "none"
	} else if len(b.ToolChoice) > 0 && !bytes.Equal(bytes.TrimSpace(b.ToolChoice), []byte("null")) {
		var c chatToolChoice
		if err := json.Unmarshal(b.ToolChoice, &c); err != nil {
			return nil, badRequest("tool_choice must be a string or an object: %v", err)
		}
		if c.Type == "function" {
			forced = c.Function.Name
		}
	}
	last := b.Messages[len(b.Messages)-1].Role == "user"
	return chooseTool(tools, forbid, forced, last)
}

// contentText returns the text of a message content: a string, or the text
// parts of an array of content parts. null is empty.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// textOrTokens decodes a prompt or input: a string, an array of strings, an
// array of token ids, or an array of arrays of token ids. It returns the
// texts (token arrays rendered as placeholders) and the token estimate.
func textOrTokens(raw json.RawMessage, field string) ([]string, int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, 0, badRequest("'%s' is a required property", field)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, estimateTokens(utf8.RuneCountInString(s)), nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		var n int64
		for _, s := range ss {
			n += estimateTokens(utf8.RuneCountInString(s))
		}
		return ss, n, nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return []string{fmt.Sprint(ids)}, int64(len(ids)), nil
	}
	var idss [][]int
	if json.Unmarshal(raw, &idss) == nil {
		var n int64
		out := make([]string, len(idss))
		for i, ids := range idss {
			out[i] = fmt.Sprint(ids)
			n += int64(len(ids))
		}
		return out, n, nil
	}
	return nil, 0, badRequest("'%s' must be a string, an array of strings, or token arrays", field)
}

func parseCompletions(body []byte) (*request, error) {
	var b completionsBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, badRequest("could not parse the JSON body of your request: %v", err)
	}
	texts, n, err := textOrTokens(b.Prompt, "prompt")
	if err != nil {
		return nil, err
	}
	r := &request{op: opCompletions, model: b.Model, prompt: strings.Join(texts, "\n"), promptTokens: n, stream: b.Stream}
	if r.maxTokens, err = maxTokensOf("max_tokens", b.MaxTokens); err != nil {
		return nil, err
	}
	r.includeUsage = b.Stream && b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	return r, nil
}

func parseEmbeddings(body []byte) (*request, error) {
	var b embeddingsBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, badRequest("could not parse the JSON body of your request: %v", err)
	}
	texts, n, err := textOrTokens(b.Input, "input")
	if err != nil {
		return nil, err
	}
	if len(texts) == 0 {
		return nil, badRequest("'input' must not be empty")
	}
	r := &request{op: opEmbeddings, model: b.Model, inputs: texts, promptTokens: n}
	switch b.EncodingFormat {
	case "", "float":
	case "base64":
		r.base64 = true
	default:
		return nil, badRequest("encoding_format must be 'float' or 'base64', got %q", b.EncodingFormat)
	}
	if b.Dimensions != nil {
		if *b.Dimensions < 1 || *b.Dimensions > maxEmbeddingDimensions {
			return nil, badRequest("dimensions must be between 1 and %d, got %d", maxEmbeddingDimensions, *b.Dimensions)
		}
		r.dimensions = *b.Dimensions
	}
	return r, nil
}
