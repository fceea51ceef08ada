package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// gmOutResponse is a GenerateContentResponse as the Gemini inbound writes
// it.
type gmOutResponse struct {
	Candidates    []gmOutCandidate `json:"candidates"`
	UsageMetadata *gmOutUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string           `json:"modelVersion,omitempty"`
	ResponseID    string           `json:"responseId,omitempty"`
}

type gmOutCandidate struct {
	Content      gmContent `json:"content"`
	FinishReason string    `json:"finishReason,omitempty"`
	Index        int       `json:"index"`
}

type gmOutUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
}

// gmUsageFromOpenAI maps chat usage to usageMetadata: reasoning tokens
// are thoughtsTokenCount and the rest of completion_tokens
// candidatesTokenCount (Gemini counts them apart); cached tokens are
// cachedContentTokenCount.
func gmUsageFromOpenAI(u *oaUsage) *gmOutUsage {
	if u == nil {
		return nil
	}
	out := &gmOutUsage{PromptTokenCount: u.PromptTokens, CandidatesTokenCount: u.CompletionTokens, TotalTokenCount: u.TotalTokens}
	if d := u.CompletionTokensDetails; d != nil && d.ReasoningTokens > 0 {
		out.ThoughtsTokenCount = min(d.ReasoningTokens, u.CompletionTokens)
		out.CandidatesTokenCount -= out.ThoughtsTokenCount
	}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedContentTokenCount = d.CachedTokens
	}
	if out.TotalTokenCount == 0 {
		out.TotalTokenCount = u.PromptTokens + u.CompletionTokens
	}
	return out
}

// openAIFinishToGemini maps a finish_reason to a Gemini finishReason: stop
// and tool_calls are STOP (Gemini ends a turn of calls with STOP), length
// MAX_TOKENS, content_filter SAFETY, anything else OTHER.
func openAIFinishToGemini(r string) string {
	switch r {
	case "stop", "tool_calls", "function_call":
		return "STOP"
	case "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	case "":
		return ""
	}
	return "OTHER"
}

// gmResponseID is the responseId of a translated answer: the completion
// id without its "chatcmpl-" prefix.
func gmResponseID(id string) string {
	if rest, ok := strings.CutPrefix(id, "chatcmpl-"); ok && rest != "" {
		return rest
	}
	return id
}

// IncludesThoughts reports whether a Gemini generateContent request asks
// for the model's thoughts (generationConfig.thinkingConfig.includeThoughts).
func IncludesThoughts(req []byte) bool {
	var r struct {
		GenerationConfig struct {
			ThinkingConfig struct {
				IncludeThoughts bool `json:"includeThoughts"`
			} `json:"thinkingConfig"`
		} `json:"generationConfig"`
	}
	return bytes.Contains(req, []byte(`"includeThoughts"`)) && json.Unmarshal(req, &r) == nil &&
		r.GenerationConfig.ThinkingConfig.IncludeThoughts
}

// gmCallParts are a message's tool calls as functionCall parts, the call's
// id kept so that the client's functionResponse can name it.
func gmCallParts(calls []oaToolCall) ([]gmPart, error) {
	var parts []gmPart
	for _, tc := range calls {
		args, err := argumentsObject(tc.Function.Arguments)
		if err != nil {
			return nil, errBadBody("openai response", fmt.Errorf("tool call %q: arguments are not a JSON object", tc.ID))
		}
		parts = append(parts, gmPart{FunctionCall: &gmFunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}})
	}
	return parts, nil
}

// OpenAIResponseToGemini converts an OpenAI chat.completion to a Gemini
// GenerateContentResponse, one candidate per choice. req is the client's
// generateContent request: the model's reasoning becomes a first thought
// part ({"text", "thought": true}) only when it asked for thoughts
// (thinkingConfig.includeThoughts), as Gemini answers. A refusal is text.
// responseId is the completion id without "chatcmpl-"; modelVersion the
// completion's model.
func OpenAIResponseToGemini(body, req []byte) ([]byte, error) {
	var r oaReasoningCompletion
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errBadBody("openai response", err)
	}
	if len(r.Choices) == 0 {
		return nil, errBadBody("openai response", errors.New("no choices"))
	}
	thoughts := IncludesThoughts(req)
	out := gmOutResponse{ModelVersion: r.Model, ResponseID: gmResponseID(r.ID), UsageMetadata: gmUsageFromOpenAI(r.Usage)}
	if out.UsageMetadata == nil {
		out.UsageMetadata = &gmOutUsage{}
	}
	for _, c := range r.Choices {
		parts := []gmPart{}
		if t := reasoningText(c.Message.ReasoningContent, c.Message.Reasoning); t != "" && thoughts {
			parts = append(parts, gmPart{Text: t, Thought: true})
		}
		for _, s := range []*string{c.Message.Content, c.Message.Refusal} {
			if s != nil && *s != "" {
				parts = append(parts, gmPart{Text: *s})
			}
		}
		calls, err := gmCallParts(c.Message.ToolCalls)
		if err != nil {
			return nil, err
		}
		parts = append(parts, calls...)
		finish := "STOP"
		if c.FinishReason != nil {
			finish = openAIFinishToGemini(*c.FinishReason)
		}
		if c.Message.Refusal != nil && *c.Message.Refusal != "" {
			finish = "SAFETY"
		}
		out.Candidates = append(out.Candidates, gmOutCandidate{Content: gmContent{Role: "model", Parts: parts}, FinishReason: finish, Index: c.Index})
	}
	return marshal(out)
}

// ---- stream ----

// GeminiStreamOptions tunes NewOpenAIToGeminiStream. The zero value is
// ready to use.
type GeminiStreamOptions struct {
	// IncludeThoughts sends the model's reasoning as thought parts
	// (see OpenAIResponseToGemini). Default false: left out.
	IncludeThoughts bool
}

// NewOpenAIToGeminiStream converts an OpenAI chat.completion.chunk stream
// to the events of Gemini's streamGenerateContent?alt=sse: one
// GenerateContentResponse per event ("data: {...}"), each text delta a
// candidate with one text part. A tool call, whose arguments OpenAI sends
// in pieces, is sent whole as a functionCall part with the candidate's
// last chunk, which also carries the finishReason and, when the source
// reports usage, usageMetadata. That last chunk is held until the usage
// chunk or the stream's end. An error chunk becomes a Gemini error event
// ({"error":{"code","message","status"}}) and a *StreamError. Gemini's
// stream has no end marker: End writes nothing but the held chunk.
//
// The returned converter is not safe for concurrent use.
func NewOpenAIToGeminiStream(opt GeminiStreamOptions) StreamConverter {
	return &openAIToGemini{opt: opt, choices: map[int]*gmOutChoice{}}
}

type openAIToGemini struct {
	opt     GeminiStreamOptions
	id      string
	model   string
	choices map[int]*gmOutChoice
	order   []int // choice indexes in the order first seen
	usage   *oaUsage
	done    bool // [DONE] seen, or the final chunk written
	flushed bool
}

// gmOutChoice is one choice's calls in progress and its end.
type gmOutChoice struct {
	calls  []oaToolCall // by the OpenAI tool index's order of first sight
	byIdx  map[int]int  // OpenAI tool index -> position in calls
	finish string       // finish_reason, once seen
}

var _ StreamConverter = (*openAIToGemini)(nil)
var _ completer = (*openAIToGemini)(nil)

func (s *openAIToGemini) Event(ev Event) ([]byte, error) {
	if s.flushed {
		return nil, nil
	}
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		s.done = true
		return s.final()
	}
	var c oaStreamChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return nil, errBadBody("openai stream chunk", err)
	}
	if !isNull(c.Error) {
		return streamError(OpenAI, ev.Data, ErrorToGemini(OpenAI, 0, ev.Data), sseData)
	}
	if c.ID != "" && s.id == "" {
		s.id = c.ID
	}
	if c.Model != "" && s.model == "" {
		s.model = c.Model
	}
	if c.Usage != nil {
		s.usage = c.Usage
	}
	var out []byte
	for _, ch := range c.Choices {
		st := s.choice(ch.Index)
		var parts []gmPart
		if t := reasoningText(ch.Delta.ReasoningContent, ch.Delta.Reasoning); t != "" && s.opt.IncludeThoughts {
			parts = append(parts, gmPart{Text: t, Thought: true})
		}
		for _, text := range []*string{ch.Delta.Content, ch.Delta.Refusal} {
			if text != nil && *text != "" {
				parts = append(parts, gmPart{Text: *text})
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			k := 0
			if tc.Index != nil {
				k = *tc.Index
			}
			pos, seen := st.byIdx[k]
			if !seen {
				pos = len(st.calls)
				st.byIdx[k] = pos
				st.calls = append(st.calls, oaToolCall{ID: tc.ID})
			}
			call := &st.calls[pos]
			if tc.ID != "" && call.ID == "" {
				call.ID = tc.ID
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if len(parts) > 0 {
			out = append(out, s.event([]gmOutCandidate{{Content: gmContent{Role: "model", Parts: parts}, Index: ch.Index}}, nil)...)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			st.finish = *ch.FinishReason
			if ch.Delta.Refusal != nil && *ch.Delta.Refusal != "" {
				st.finish = "content_filter"
			}
		}
	}
	if s.usage != nil && s.allFinished() {
		more, err := s.final()
		return append(out, more...), err
	}
	return out, nil
}

func (s *openAIToGemini) choice(idx int) *gmOutChoice {
	st, ok := s.choices[idx]
	if !ok {
		st = &gmOutChoice{byIdx: map[int]int{}}
		s.choices[idx] = st
		s.order = append(s.order, idx)
	}
	return st
}

func (s *openAIToGemini) allFinished() bool {
	if len(s.order) == 0 {
		return false
	}
	for _, idx := range s.order {
		if s.choices[idx].finish == "" {
			return false
		}
	}
	return true
}

// final writes the held last chunk: each candidate's calls and
// finishReason, and the usage.
func (s *openAIToGemini) final() ([]byte, error) {
	if s.flushed {
		return nil, nil
	}
	s.flushed = true
	var cands []gmOutCandidate
	for _, idx := range s.order {
		st := s.choices[idx]
		parts, err := gmCallParts(st.calls)
		if err != nil {
			return nil, err
		}
		if parts == nil {
			parts = []gmPart{}
		}
		finish := openAIFinishToGemini(st.finish)
		if finish == "" {
			finish = "STOP"
		}
		cands = append(cands, gmOutCandidate{Content: gmContent{Role: "model", Parts: parts}, FinishReason: finish, Index: idx})
	}
	if cands == nil {
		cands = []gmOutCandidate{{Content: gmContent{Role: "model", Parts: []gmPart{}}, FinishReason: "STOP"}}
	}
	return s.event(cands, gmUsageFromOpenAI(s.usage)), nil
}

func (s *openAIToGemini) event(cands []gmOutCandidate, usage *gmOutUsage) []byte {
	r := gmOutResponse{Candidates: cands, UsageMetadata: usage, ModelVersion: s.model, ResponseID: gmResponseID(s.id)}
	return sseData(mustMarshal(r))
}

// End writes the held last chunk, when the source ended without [DONE].
func (s *openAIToGemini) End() []byte {
	out, _ := s.final()
	return out
}

func (s *openAIToGemini) complete() bool { return s.done || s.allFinished() }

// ---- errors ----

// geminiStatusOf is the google.rpc status name Google answers an HTTP
// status with.
func geminiStatusOf(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusPaymentRequired, http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusServiceUnavailable, 529:
		return "UNAVAILABLE"
	}
	if status >= 400 && status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// ErrorToGemini converts an error body from a provider to Google's shape
// {"error":{"code","message","status","details"}}: code is the HTTP
// status (529 is 503), status its google.rpc name (400 INVALID_ARGUMENT,
// 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND, 429
// RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE, 504
// DEADLINE_EXCEEDED, …); a status that is not an error (an error event
// inside a stream) is inferred from the body's code. The message is the
// provider's own text; the provider's error code, when it names one, is
// kept as the reason of a google.rpc.ErrorInfo detail of domain
// "switchover". A Gemini body that already has the shape is returned
// unchanged. It never fails.
func ErrorToGemini(from Format, status int, body []byte) []byte {
	e := parseError(from, body)
	if from == Gemini && e.ok {
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
			return body
		}
	}
	msg := rawMessage(status, body)
	if e.ok {
		msg = e.message
	}
	if status < 400 {
		status = http.StatusInternalServerError
		if e.ok {
			status = statusOfCode(from, e)
		}
	}
	if status == 529 {
		status = http.StatusServiceUnavailable
	}
	out := gmError{Code: status, Message: msg, Status: geminiStatusOf(status)}
	if from == Gemini && e.ok && e.code != "" {
		out.Status = e.code
	} else if e.ok && e.code != "" {
		out.Details = append(out.Details, mustMarshal(map[string]string{
			"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.code, "domain": "switchover"}))
	}
	return mustMarshal(gmErrorBody{Error: out})
}

// WithGeminiRetryDelay adds to a Gemini error body a google.rpc.RetryInfo
// detail asking the client to wait d (Google's form: "12s"), as Google's
// own 429s carry; a body that has one, or is not a Gemini error, is
// returned unchanged.
func WithGeminiRetryDelay(body []byte, d time.Duration) []byte {
	if d <= 0 || RetryDelay(Gemini, body) > 0 {
		return body
	}
	var b gmErrorBody
	if json.Unmarshal(body, &b) != nil || b.Error.Status == "" {
		return body
	}
	secs := (d + time.Second - 1) / time.Second
	b.Error.Details = append(b.Error.Details, mustMarshal(map[string]string{
		"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.FormatInt(int64(secs), 10) + "s"}))
	return mustMarshal(b)
}
