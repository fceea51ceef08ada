package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the Gemini (Generative Language API v1beta) flavour: the
// request the sim reads from models/{model}:generateContent and
// :streamGenerateContent, the GenerateContentResponse it answers, its
// stream chunks and Google's error bodies.

type geminiBody struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	GenerationConfig  *struct {
		MaxOutputTokens *int            `json:"maxOutputTokens"`
		ThinkingConfig  *geminiThinking `json:"thinkingConfig"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string          `json:"text"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

// parseGenerate decodes a generateContent request. Field names may be
// written lowerCamel or snake_case, as Google's JSON mapping accepts both.
// Errors wrap errBadRequest.
func parseGenerate(body []byte) (*request, error) {
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, badRequest("Invalid JSON payload received. %v", err)
	}
	norm, err := json.Marshal(camelKeys(raw, ""))
	if err != nil {
		return nil, badRequest("Invalid JSON payload received. %v", err)
	}
	var b geminiBody
	if err := json.Unmarshal(norm, &b); err != nil {
		return nil, badRequest("Invalid JSON payload received. %v", err)
	}
	if len(b.Contents) == 0 {
		return nil, badRequest("* GenerateContentRequest.contents: contents is not specified")
	}
	var text strings.Builder
	chars := 0
	add := func(c geminiContent) {
		for _, p := range c.Parts {
			chars += utf8.RuneCountInString(p.Text)
			text.WriteString(p.Text)
		}
		text.WriteByte('\n')
	}
	if b.SystemInstruction != nil {
		add(*b.SystemInstruction)
	}
	for _, c := range b.Contents {
		add(c)
	}
	r := &request{op: opGenerate, prompt: text.String(), promptTokens: estimateTokens(chars)}
	if g := b.GenerationConfig; g != nil && g.MaxOutputTokens != nil {
		if *g.MaxOutputTokens < 1 {
			return nil, badRequest("* GenerateContentRequest.generation_config.max_output_tokens: must be positive, got %d", *g.MaxOutputTokens)
		}
		r.maxTokens = *g.MaxOutputTokens
	}
	if g := b.GenerationConfig; g != nil && g.ThinkingConfig != nil {
		r.reasoning = g.ThinkingConfig.tokens()
		r.showThought = g.ThinkingConfig.IncludeThoughts
	}

	var tools []toolSpec
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.Parameters
			if len(schema) == 0 {
				schema = f.ParametersJSONSchema
			}
			tools = append(tools, toolSpec{name: f.Name, schema: schema})
		}
	}
	forbid, forced := false, ""
	if tc := b.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		fc := tc.FunctionCallingConfig
		forbid = strings.EqualFold(fc.Mode, "NONE")
		if strings.EqualFold(fc.Mode, "ANY") && len(fc.AllowedFunctionNames) > 0 {
			forced = fc.AllowedFunctionNames[0]
		}
	}
	last := b.Contents[len(b.Contents)-1]
	userLast := last.Role == "" || last.Role == "user"
	for _, p := range last.Parts {
		if len(p.FunctionResponse) > 0 {
			userLast = false
		}
	}
	if r.tool, err = chooseTool(tools, forbid, forced, userLast); err != nil {
		return nil, err
	}
	return r, nil
}

// camelKeys rewrites the snake_case keys of a decoded JSON value to
// lowerCamel, except inside values the client owns (a schema's
// properties, a call's args, a function's response), whose keys are data.
func camelKeys(v any, parent string) any {
	switch t := v.(type) {
	case map[string]any:
		if parent == "properties" || parent == "args" || parent == "response" {
			return t
		}
		out := make(map[string]any, len(t))
		for k, val := range t {
			ck := snakeToCamel(k)
			out[ck] = camelKeys(val, ck)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camelKeys(t[i], parent)
		}
		return t
	default:
		return v
	}
}

func snakeToCamel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// geminiResponse is a GenerateContentResponse, whole or one stream chunk.
type geminiResponse struct {
	Candidates     []geminiCandidate     `json:"candidates,omitempty"`
	PromptFeedback *geminiPromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *geminiUsage          `json:"usageMetadata,omitempty"`
	ModelVersion   string                `json:"modelVersion"`
	ResponseID     string                `json:"responseId"`
}

type geminiCandidate struct {
	Content       geminiOutContent     `json:"content"`
	FinishReason  string               `json:"finishReason,omitempty"`
	SafetyRatings []geminiSafetyRating `json:"safetyRatings,omitempty"`
	Index         int                  `json:"index"`
}

type geminiOutContent struct {
	Role  string `json:"role"`
	Parts []any  `json:"parts"`
}

type geminiTextPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought,omitempty"` // a part of the thought (includeThoughts)
}

type geminiFunctionCallPart struct {
	FunctionCall struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// geminiUsage is usageMetadata: candidatesTokenCount leaves the thought
// out, thoughtsTokenCount counts it, totalTokenCount counts everything.
type geminiUsage struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount   int64 `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
}

type geminiPromptFeedback struct {
	BlockReason   string               `json:"blockReason"`
	SafetyRatings []geminiSafetyRating `json:"safetyRatings"`
}

type geminiSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked,omitempty"`
}

// geminiRatings are the safety ratings of a filtered prompt or answer:
// every category negligible but the one that blocked.
func geminiRatings(blocked string) []geminiSafetyRating {
	var out []geminiSafetyRating
	for _, c := range []string{"HARM_CATEGORY_SEXUALLY_EXPLICIT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_DANGEROUS_CONTENT"} {
		r := geminiSafetyRating{Category: c, Probability: "NEGLIGIBLE"}
		if c == blocked {
			r.Probability, r.Blocked = "HIGH", true
		}
		out = append(out, r)
	}
	return out
}

// finishReason maps the answer's finish to Gemini's finishReason. A tool
// call finishes with STOP: Gemini has no finish reason of its own for it.
func (a *answer) finishReason() string {
	switch a.finish {
	case "length":
		return "MAX_TOKENS"
	case "content_filter":
		return "SAFETY"
	default:
		return "STOP"
	}
}

// candidate is the answer's candidate with parts, and with the finish
// reason when last.
func (a *answer) candidate(parts []any, last bool) geminiCandidate {
	c := geminiCandidate{Content: geminiOutContent{Role: "model", Parts: parts}}
	if last {
		c.FinishReason = a.finishReason()
		if a.filtered {
			c.SafetyRatings = geminiRatings("HARM_CATEGORY_DANGEROUS_CONTENT")
		}
	}
	return c
}

func (a *answer) geminiUsage() *geminiUsage {
	n, th := a.completionTokens()-a.reasoningTokens(), a.reasoningTokens()
	return &geminiUsage{PromptTokenCount: a.promptTokens, CandidatesTokenCount: n, ThoughtsTokenCount: th, TotalTokenCount: a.promptTokens + n + th}
}

// thoughtParts is the thought as a part, when the request asked to see it.
func (a *answer) thoughtParts() []any {
	if len(a.thought) == 0 || !a.req.showThought {
		return nil
	}
	return []any{geminiTextPart{Text: strings.Join(a.thought, ""), Thought: true}}
}

func (a *answer) functionCallPart() geminiFunctionCallPart {
	var p geminiFunctionCallPart
	p.FunctionCall.Name = a.tool.name
	p.FunctionCall.Args = json.RawMessage(a.tool.args)
	return p
}

// geminiBody is the whole (non-streamed) response.
func (a *answer) geminiBody() geminiResponse {
	part := any(geminiTextPart{Text: a.text()})
	if a.tool != nil {
		part = a.functionCallPart()
	}
	return geminiResponse{
		Candidates:    []geminiCandidate{a.candidate(append(a.thoughtParts(), part), true)},
		UsageMetadata: a.geminiUsage(),
		ModelVersion:  a.model, ResponseID: a.id,
	}
}

// geminiEvents lays out a stream: one chunk per word (the first waits
// plan.firstToken, each later one plan.perToken), the last carrying the
// finish reason and usageMetadata; a tool call is one chunk with the
// functionCall part. There is no [DONE].
func (a *answer) geminiEvents(plan timing) []sseEvent {
	base := func() geminiResponse { return geminiResponse{ModelVersion: a.model, ResponseID: a.id} }
	if a.tool != nil {
		c := base()
		c.Candidates = []geminiCandidate{a.candidate(append(a.thoughtParts(), a.functionCallPart()), true)}
		c.UsageMetadata = a.geminiUsage()
		return []sseEvent{{delay: plan.firstToken, data: mustJSON(c), final: true}}
	}
	var evs []sseEvent
	first := plan.firstToken
	if th := a.thoughtParts(); th != nil {
		c := base()
		c.Candidates = []geminiCandidate{a.candidate(th, false)}
		evs = append(evs, sseEvent{delay: first, data: mustJSON(c)})
		first = plan.perToken
	}
	for i, w := range a.words {
		delay := plan.perToken
		if i == 0 {
			delay = first
		}
		last := i == len(a.words)-1
		c := base()
		c.Candidates = []geminiCandidate{a.candidate([]any{geminiTextPart{Text: w}}, last)}
		if last {
			c.UsageMetadata = a.geminiUsage()
		}
		evs = append(evs, sseEvent{delay: delay, data: mustJSON(c), final: last})
	}
	return evs
}

// geminiBlocked is Gemini's answer to a prompt its safety filter blocks:
// 200 with promptFeedback and no candidates.
func geminiBlocked(model, responseID string, promptTokens int64) geminiResponse {
	return geminiResponse{
		PromptFeedback: &geminiPromptFeedback{BlockReason: "SAFETY", SafetyRatings: geminiRatings("HARM_CATEGORY_HATE_SPEECH")},
		UsageMetadata:  &geminiUsage{PromptTokenCount: promptTokens, TotalTokenCount: promptTokens},
		ModelVersion:   model, ResponseID: responseID,
	}
}

// writeGeminiBlocked answers a blocked prompt at once: the blocked
// response as JSON, or as the one event of a stream.
func writeGeminiBlocked(w http.ResponseWriter, stream bool, v geminiResponse) {
	if !stream {
		_ = writeJSON(w, http.StatusOK, v)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(sseFrame(sseEvent{data: mustJSON(v)}))
}

// googleErrorBody is Google's error shape:
// {"error":{"code":429,"message":"...","status":"RESOURCE_EXHAUSTED","details":[...]}}.
type googleErrorBody struct {
	Error googleError `json:"error"`
}

type googleError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`
}

func googleErr(code int, status, msg string, details ...any) apiError {
	return apiError{status: code, body: googleErrorBody{Error: googleError{Code: code, Message: msg, Status: status, Details: details}}}
}

// The entries of details used here, each tagged with its proto type.
type (
	googleRetryInfo struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	}
	googleQuotaFailure struct {
		Type       string                 `json:"@type"`
		Violations []googleQuotaViolation `json:"violations"`
	}
	googleQuotaViolation struct {
		QuotaMetric     string            `json:"quotaMetric"`
		QuotaID         string            `json:"quotaId"`
		QuotaDimensions map[string]string `json:"quotaDimensions"`
		QuotaValue      string            `json:"quotaValue"`
	}
	googleErrorInfo struct {
		Type     string            `json:"@type"`
		Reason   string            `json:"reason"`
		Domain   string            `json:"domain"`
		Metadata map[string]string `json:"metadata"`
	}
)

const googleTypes = "type.googleapis.com/google.rpc."

// geminiRateLimited is the 429 RESOURCE_EXHAUSTED body: which quota was
// hit (QuotaFailure) and when to retry (RetryInfo, whole seconds rounded
// up). The delay is only in the body, as Gemini sends no Retry-After.
func geminiRateLimited(model string, a admission, lim limits) apiError {
	v := googleQuotaViolation{
		QuotaMetric: "generativelanguage.googleapis.com/generate_content_requests", QuotaID: "GenerateRequestsPerMinutePerProjectPerModel",
		QuotaDimensions: map[string]string{"location": "global", "model": model}, QuotaValue: strconv.Itoa(lim.rpm),
	}
	if a.limitedBy == limitTokens {
		v.QuotaMetric, v.QuotaID, v.QuotaValue = "generativelanguage.googleapis.com/generate_content_input_token_count", "GenerateContentInputTokensPerModelPerMinute", strconv.Itoa(lim.tpm)
	}
	return googleErr(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).",
		googleQuotaFailure{Type: googleTypes + "QuotaFailure", Violations: []googleQuotaViolation{v}},
		googleRetryInfo{Type: googleTypes + "RetryInfo", RetryDelay: geminiDelay(a.untilNext)},
	)
}

// geminiDelay formats a retry delay as a protobuf Duration in whole
// seconds, rounded up ("7s").
func geminiDelay(d time.Duration) string {
	return strconv.FormatInt(ceilSeconds(d), 10) + "s"
}

// geminiKeyInvalid is Google's answer to a wrong API key: 400, not 401.
func geminiKeyInvalid() apiError {
	return googleErr(http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
		googleErrorInfo{
			Type: googleTypes + "ErrorInfo", Reason: "API_KEY_INVALID", Domain: "googleapis.com",
			Metadata: map[string]string{"service": "generativelanguage.googleapis.com"},
		})
}

// splitGeminiPath splits "{model}:{method}" from /v1beta/models/{model}:{method}.
func splitGeminiPath(rest string) (model, method string, ok bool) {
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || strings.Contains(rest[:i], "/") {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}
