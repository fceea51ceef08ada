package sim

import (
	"math/rand/v2"
	"strings"
)

// answer is the generated reply to one admitted request, ready to be
// written whole or streamed.
type answer struct {
	flavour      Flavour
	op           operation
	id           string
	created      int64
	model        string
	fingerprint  string
	words        []string  // one per token; see replyWords
	tool         *toolCall // the call answered instead of words, or nil
	finish       string    // stop, length, content_filter or tool_calls
	filtered     bool      // cut by the content filter
	promptTokens int64
	includeUsage bool
	omitUsage    bool // Reply.OmitUsage: no usage on chat and completions
	req          *request
	dims         int // embedding length
	// thought is the reasoning before the answer, one word per token (see
	// request.reasoning); counted in the completion tokens, shown only
	// where the flavour shows thoughts.
	thought []string
	// signature is the signature of an Anthropic thinking block.
	signature string
	// more are the choices after the first, when a chat asks for n > 1:
	// each its own words, or its own call of the same tool.
	more []choiceAnswer
}

// choiceAnswer is one further choice of a chat completion.
type choiceAnswer struct {
	words []string
	tool  *toolCall
}

// answer builds the reply: Reply.Tokens words, cut to max_tokens
// (finish_reason length), or halved by the content filter's truncate
// phrase (finish_reason content_filter); or, when the request picked a
// tool and the filter did not cut the answer, a call of that tool
// (finish_reason tool_calls). finish is in OpenAI's terms; the other
// flavours map it (stopReason, finishReason).
func (d *deployment) answer(req *request, c call, truncated bool) *answer {
	a := &answer{
		flavour:      d.cfg.Flavour,
		op:           req.op,
		created:      c.now.Unix(),
		model:        d.cfg.Model,
		fingerprint:  d.fingerprint,
		promptTokens: req.promptTokens,
		includeUsage: req.includeUsage,
		omitUsage:    d.cfg.Reply.OmitUsage,
		req:          req,
	}
	if req.op == opEmbeddings {
		a.dims = req.dimensions
		if a.dims == 0 {
			a.dims = d.cfg.Reply.EmbeddingDimensions
		}
		return a
	}
	switch req.op {
	case opMessages:
		a.id = randomID(c.rng, "msg_01", 22)
	case opGenerate:
		a.id = randomID(c.rng, "", 22)
	case opCompletions:
		a.id = randomID(c.rng, "cmpl-", 29)
	default:
		a.id = randomID(c.rng, "chatcmpl-", 29)
	}
	defer a.think(c.rng, req)
	if req.tool != nil && !truncated {
		a.tool = &toolCall{id: toolCallID(c.rng, a.flavour), name: req.tool.name, args: req.tool.args}
		a.finish = "tool_calls"
		for i := 1; i < req.n; i++ {
			a.more = append(a.more, choiceAnswer{tool: &toolCall{id: toolCallID(c.rng, a.flavour), name: req.tool.name, args: req.tool.args}})
		}
		return a
	}
	n, finish := d.cfg.Reply.Tokens, "stop"
	if req.maxTokens > 0 && req.maxTokens < n {
		n, finish = req.maxTokens, "length"
	}
	if truncated {
		n, finish, a.filtered = max(n/2, 1), "content_filter", true
	}
	a.words = replyWords(c.rng, n)
	a.finish = finish
	for i := 1; i < req.n; i++ {
		a.more = append(a.more, choiceAnswer{words: replyWords(c.rng, n)})
	}
	return a
}

// think draws the answer's thought, when the request asks for one, after
// everything else the answer draws (so a request without one draws as it
// always did).
func (a *answer) think(rng *rand.Rand, req *request) {
	if req.reasoning <= 0 {
		return
	}
	a.thought = replyWords(rng, req.reasoning)
	if a.flavour == Anthropic {
		a.signature = thinkingSignature(rng)
	}
}

// reasoningTokens is the number of tokens of thought.
func (a *answer) reasoningTokens() int64 { return int64(len(a.thought)) }

func (a *answer) text() string { return strings.Join(a.words, "") }

// completionTokens is the number of words, or of argument fragments of a
// tool call, over every choice, plus the thought.
func (a *answer) completionTokens() int64 {
	n := choiceTokens(a.words, a.tool) + a.reasoningTokens()
	for _, c := range a.more {
		n += choiceTokens(c.words, c.tool)
	}
	return n
}

func choiceTokens(words []string, tool *toolCall) int64 {
	if tool != nil {
		return int64(len(tool.fragments()))
	}
	return int64(len(words))
}

// choices is every choice of the answer, the first included.
func (a *answer) choices() []choiceAnswer {
	return append([]choiceAnswer{{words: a.words, tool: a.tool}}, a.more...)
}

func (a *answer) usage() *usage {
	if a.omitUsage && (a.op == opChat || a.op == opCompletions) {
		return nil
	}
	n := a.completionTokens()
	u := &usage{PromptTokens: a.promptTokens, CompletionTokens: n, TotalTokens: a.promptTokens + n}
	if a.op == opChat {
		// OpenAI and Azure break chat usage down on every answer.
		u.PromptTokensDetails = &promptTokensDetails{}
		u.CompletionTokensDetails = &completionTokensDetails{ReasoningTokens: a.reasoningTokens()}
	}
	return u
}

func (a *answer) azure() bool { return a.flavour == Azure }

// usage is the token accounting of an answer.
type usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *promptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *completionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// promptTokensDetails breaks prompt tokens down; the sim caches nothing.
type promptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
	AudioTokens  int64 `json:"audio_tokens"`
}

// completionTokensDetails breaks completion tokens down: the thought's
// tokens are reasoning tokens.
type completionTokensDetails struct {
	ReasoningTokens          int64 `json:"reasoning_tokens"`
	AudioTokens              int64 `json:"audio_tokens"`
	AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
}

type chatCompletion struct {
	ID                  string              `json:"id"`
	Object              string              `json:"object"`
	Created             int64               `json:"created"`
	Model               string              `json:"model"`
	Choices             []chatChoice        `json:"choices"`
	Usage               *usage              `json:"usage"`
	PromptFilterResults []promptFilterEntry `json:"prompt_filter_results,omitempty"`
	ServiceTier         string              `json:"service_tier,omitempty"`
	SystemFingerprint   string              `json:"system_fingerprint"`
}

type chatChoice struct {
	Index                int                  `json:"index"`
	Message              chatReplyMessage     `json:"message"`
	Logprobs             *choiceLogprobs      `json:"logprobs"`
	FinishReason         string               `json:"finish_reason"`
	ContentFilterResults *choiceFilterResults `json:"content_filter_results,omitempty"`
}

type chatReplyMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"` // null with tool calls
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Refusal     *string        `json:"refusal"`
	Annotations []any          `json:"annotations"`
}

// chatToolCall is a tool call in a chat completion's message.
type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type textCompletion struct {
	ID                  string              `json:"id"`
	Object              string              `json:"object"`
	Created             int64               `json:"created"`
	Model               string              `json:"model"`
	Choices             []textChoice        `json:"choices"`
	Usage               *usage              `json:"usage"`
	PromptFilterResults []promptFilterEntry `json:"prompt_filter_results,omitempty"`
	SystemFingerprint   string              `json:"system_fingerprint,omitempty"`
}

type textChoice struct {
	Text                 string               `json:"text"`
	Index                int                  `json:"index"`
	Logprobs             *struct{}            `json:"logprobs"`
	FinishReason         *string              `json:"finish_reason"`
	ContentFilterResults *choiceFilterResults `json:"content_filter_results,omitempty"`
}

type embeddingList struct {
	Object string          `json:"object"`
	Data   []embeddingItem `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

type embeddingItem struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

type embeddingUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// choiceResults is the per-choice content filter block (azure only),
// showing a filtered category when filtered is set.
func (a *answer) choiceResults(filtered bool) *choiceFilterResults {
	if !a.azure() {
		return nil
	}
	r := completionResults(filtered)
	return &r
}

func (a *answer) promptResults() []promptFilterEntry {
	if !a.azure() {
		return nil
	}
	return promptFilterList()
}

// body is the whole (non-streamed) response body.
func (a *answer) body() any {
	switch a.op {
	case opMessages:
		if a.req != nil && a.req.converse {
			return converseBody(a.anthropicBody())
		}
		return a.anthropicBody()
	case opGenerate:
		return a.geminiBody()
	case opEmbeddings:
		return a.embeddings()
	case opCompletions:
		finish := a.finish
		return textCompletion{
			ID: a.id, Object: "text_completion", Created: a.created, Model: a.model,
			Choices:             []textChoice{{Text: a.text(), FinishReason: &finish, ContentFilterResults: a.choiceResults(a.filtered)}},
			Usage:               a.usage(),
			PromptFilterResults: a.promptResults(),
		}
	default:
		var choices []chatChoice
		for i, ch := range a.choices() {
			msg := chatReplyMessage{Role: "assistant", Annotations: []any{}}
			if ch.tool != nil {
				tc := chatToolCall{ID: ch.tool.id, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = ch.tool.name, ch.tool.args
				msg.ToolCalls = []chatToolCall{tc}
			} else {
				text := strings.Join(ch.words, "")
				msg.Content = &text
			}
			choices = append(choices, chatChoice{
				Index:                i,
				Message:              msg,
				Logprobs:             a.logprobsOf(ch.words),
				FinishReason:         a.finish,
				ContentFilterResults: a.choiceResults(a.filtered),
			})
		}
		c := chatCompletion{
			ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
			Choices:             choices,
			Usage:               a.usage(),
			PromptFilterResults: a.promptResults(),
			SystemFingerprint:   a.fingerprint,
		}
		if !a.azure() {
			c.ServiceTier = "default"
		}
		return c
	}
}

func (a *answer) embeddings() embeddingList {
	out := embeddingList{Object: "list", Model: a.model, Usage: embeddingUsage{PromptTokens: a.promptTokens, TotalTokens: a.promptTokens}}
	for i, text := range a.req.inputs {
		v := embedding(text, a.dims)
		item := embeddingItem{Object: "embedding", Index: i, Embedding: v}
		if a.req.base64 {
			item.Embedding = embeddingBase64(v)
		}
		out.Data = append(out.Data, item)
	}
	return out
}
