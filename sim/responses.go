package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file serves the Responses API: POST responses (plain, streamed,
// background), GET and DELETE responses/{id}, POST responses/{id}/cancel
// and GET responses/{id}/input_items (compact.go serves POST
// responses/compact).

// responsesBody is the part of a Responses API request the sim reads.
type responsesBody struct {
	Model              string            `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       json.RawMessage   `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Stream             bool              `json:"stream"`
	Store              *bool             `json:"store"`
	Background         bool              `json:"background"`
	PreviousResponseID string            `json:"previous_response_id"`
	Conversation       json.RawMessage   `json:"conversation"`
	Tools              []json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Metadata           map[string]string `json:"metadata"`
	Reasoning          *struct {
		Effort  string  `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
}

// responsesTool is the part of a tools entry the sim reads; function tools
// are flat in the Responses API ({"type":"function","name":...}).
type responsesTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

// storedResponse is a response kept for GET (store: true). Its status is
// worked out from the clock when read: a background response is queued
// until half its latency has passed, in progress until all of it has, and
// completed after, unless cancelled first. Changed only under its store's
// lock.
type storedResponse struct {
	obj        responseObject // the finished response
	ans        *answer        // its words or tool call, for a streamed GET
	input      []json.RawMessage
	readyAt    time.Time // background: when it completes
	startedAt  time.Time // background: when it leaves the queue
	background bool
	cancelled  bool
	tokens     int64 // input plus output tokens, carried by previous_response_id
}

// view is the response as a client sees it at now.
func (s *storedResponse) view(now time.Time) responseObject {
	o := s.obj
	if !s.background {
		return o
	}
	switch {
	case s.cancelled:
		o.Status = "cancelled"
	case now.Before(s.startedAt):
		o.Status = "queued"
	case now.Before(s.readyAt):
		o.Status = "in_progress"
	default:
		return o
	}
	o.Output, o.Usage, o.IncompleteDetails, o.CompletedAt = []any{}, nil, nil, nil
	return o
}

// responseObject is a Responses API response.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"` // null unless completed
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *struct{}          `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	Reasoning          responseReasoning  `json:"reasoning"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	Text               responseText       `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []json.RawMessage  `json:"tools"`
	TopP               float64            `json:"top_p"`
	TopLogprobs        int                `json:"top_logprobs"`
	Truncation         string             `json:"truncation"`
	Usage              *responseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// responseReasoning is a response's reasoning setting, as asked (null
// members when not).
type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseText struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

type responseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// outputMessage is an output item of type message.
type outputMessage struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// outputFunctionCall is an output item of type function_call.
type outputFunctionCall struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// outputReasoning is an output item of type reasoning: the thought is
// hidden, as OpenAI hides it; its summary holds the thought when the
// request asked for one.
type outputReasoning struct {
	Type    string        `json:"type"`
	ID      string        `json:"id"`
	Summary []summaryText `json:"summary"`
}

type summaryText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parsedResponses is a Responses API request as the sim understands it.
type parsedResponses struct {
	body     responsesBody
	store    bool
	req      *request // for the answer, the quota and the filter
	input    []json.RawMessage
	lastUser bool
}

// parseResponses decodes a Responses API body. Errors wrap errBadRequest.
func (d *deployment) parseResponses(c *call) (*parsedResponses, error) {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil, badRequest("the request body is empty; expected a JSON object")
	}
	var b responsesBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		return nil, badRequest("could not parse the JSON body of your request: %v", err)
	}
	p := &parsedResponses{body: b, store: b.Store == nil || *b.Store}
	var text strings.Builder
	if len(b.Instructions) > 0 {
		s, err := contentText(b.Instructions)
		if err != nil {
			return nil, badRequest("instructions: %v", err)
		}
		text.WriteString(s)
		text.WriteByte('\n')
	}
	items, lastUser, err := d.inputItems(c, b.Input, &text)
	if err != nil {
		return nil, err
	}
	p.input, p.lastUser = items, lastUser
	req := &request{op: opChat, model: b.Model, prompt: text.String(), promptTokens: estimateTokens(utf8.RuneCountInString(text.String()))}
	if req.maxTokens, err = maxTokensOf("max_output_tokens", b.MaxOutputTokens); err != nil {
		return nil, err
	}
	if req.tool, err = responsesToolPick(b, lastUser); err != nil {
		return nil, err
	}
	if r := b.Reasoning; r != nil {
		req.reasoning = thoughtTokens
		if r.Effort != "" {
			if req.reasoning, err = effortTokens(r.Effort, "reasoning.effort"); err != nil {
				return nil, err
			}
		}
		req.showThought = r.Summary != nil && *r.Summary != ""
	}
	p.req = req
	return p, nil
}

// inputItems normalises input (a string, or an array of items) into the
// items input_items lists, each with an id, writes their text to text and
// reports whether the last is a user message.
func (d *deployment) inputItems(c *call, raw json.RawMessage, text *strings.Builder) ([]json.RawMessage, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, false, badRequest("Missing required parameter: 'input'.")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = mustJSON([]map[string]any{{"type": "message", "role": "user", "content": s}})
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false, badRequest("Invalid type for 'input': expected a string or an array of input items.")
	}
	var out []json.RawMessage
	lastUser := false
	for i, it := range items {
		typ := "message"
		if t, ok := it["type"]; ok {
			_ = json.Unmarshal(t, &typ)
		}
		lastUser = false
		m := map[string]any{}
		for k, v := range it {
			m[k] = v
		}
		m["type"] = typ
		switch typ {
		case "message":
			var role string
			_ = json.Unmarshal(it["role"], &role)
			t, err := contentText(it["content"])
			if err != nil {
				return nil, false, badRequest("input[%d].content: %v", i, err)
			}
			text.WriteString(t)
			text.WriteByte('\n')
			lastUser = role == "user"
			partType := "input_text"
			if role == "assistant" {
				partType = "output_text"
			}
			var str string
			if json.Unmarshal(it["content"], &str) == nil {
				m["content"] = []map[string]any{{"type": partType, "text": str}}
			}
			m["status"] = "completed"
			if _, ok := it["id"]; !ok {
				m["id"] = d.objectID(c.rng, "msg_", 40, false)
			}
		case "function_call_output":
			var out string
			_ = json.Unmarshal(it["output"], &out)
			text.WriteString(out)
			text.WriteByte('\n')
			if _, ok := it["id"]; !ok {
				m["id"] = d.objectID(c.rng, "fc_", 40, false)
			}
			m["status"] = "completed"
		default:
			if _, ok := it["id"]; !ok {
				m["id"] = d.objectID(c.rng, "item_", 40, false)
			}
		}
		out = append(out, mustJSON(m))
	}
	return out, lastUser, nil
}

// responsesToolPick applies chooseTool to a Responses request: function
// tools; tool_choice "none" forbids, {"type":"function","name":...}
// forces, anything else lets the first tool be called when the last input
// item is a user message.
func responsesToolPick(b responsesBody, lastUser bool) (*toolPick, error) {
	var tools []toolSpec
	for _, raw := range b.Tools {
		var t responsesTool
		if json.Unmarshal(raw, &t) == nil && t.Type == "function" {
			tools = append(tools, toolSpec{name: t.Name, schema: t.Parameters})
		}
	}
	forbid, forced := false, ""
	var mode string
	if len(b.ToolChoice) > 0 && json.Unmarshal(b.ToolChoice, &mode) == nil {
		forbid = mode == "none"
	} else if len(b.ToolChoice) > 0 && !bytes.Equal(bytes.TrimSpace(b.ToolChoice), []byte("null")) {
		var tc struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(b.ToolChoice, &tc); err != nil {
			return nil, badRequest("tool_choice must be a string or an object: %v", err)
		}
		if tc.Type == "function" {
			forced = tc.Name
		}
	}
	return chooseTool(tools, forbid, forced, lastUser)
}

// errPreviousResponseNotFound answers a previous_response_id this
// deployment does not hold, as the real API does.
func errPreviousResponseNotFound(id string) apiError {
	return openAIErr(http.StatusBadRequest, fmt.Sprintf("Previous response with id '%s' not found.", id),
		strp("invalid_request_error"), strp("previous_response_id"), strp("previous_response_not_found"))
}

// errResponseNotFound answers a GET, DELETE or cancel of a response this
// deployment does not hold.
func errResponseNotFound(id string) apiError {
	return openAIErr(http.StatusNotFound, fmt.Sprintf("Response with id '%s' not found.", id),
		strp("invalid_request_error"), nil, nil)
}

// createResponse serves POST responses: the model must name the
// deployment (openai, azure), a previous_response_id must name a response
// stored here (its tokens join the prompt), the estimate is charged to the
// quota like chat's, the content filter applies, and the answer is text or
// a function_call. It is answered whole after the latency, streamed
// (stream: true, also with background), or, for background: true, at once
// with status queued and stored to complete on the clock. With store
// (default true) the response is kept for GET.
func (d *deployment) createResponse(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	fl := d.cfg.Flavour
	p, err := d.parseResponses(c)
	if err != nil {
		d.writeError(w, errInvalidRequest(fl, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	if !d.checkModel(w, c, p.body.Model) {
		return outcomeRejected
	}
	if p.body.Background && !p.store {
		d.writeError(w, openAIErr(http.StatusBadRequest, "Background mode requires 'store' to be true.", strp("invalid_request_error"), strp("background"), nil))
		return outcomeRejected
	}
	var prevID *string
	if id := p.body.PreviousResponseID; id != "" {
		var carried int64
		if !d.objects.responses.update(id, func(s *storedResponse) { carried = s.tokens }) {
			d.writeError(w, errPreviousResponseNotFound(id))
			return outcomeRejected
		}
		// The conversation so far is part of the prompt, as it is for the
		// real API.
		p.req.promptTokens += carried
		prevID = &id
	}
	if id := conversationRef(p.body.Conversation); id != "" {
		if _, ok := d.objects.conversations.get(id); !ok {
			d.writeError(w, errConversationNotFound(id))
			return outcomeRejected
		}
	}
	cost := p.req.cost(d.cfg.Quota.DefaultMaxTokens)
	if !d.admit(w, c, f, cost) {
		return outcomeRefused
	}
	verdict := d.cfg.ContentFilter.check(p.req.prompt)
	if verdict == filterBlock {
		d.writeError(w, errContentFilter(fl))
		return outcomeFiltered
	}
	plan := d.plan(c, f)
	a := d.answer(p.req, *c, verdict == filterTruncate)
	obj := d.responseFor(p, a, c, prevID)
	if obj.Status == "completed" {
		done := c.now.Add(plan.total).Unix()
		obj.CompletedAt = &done
	}
	stored := &storedResponse{obj: obj, ans: a, input: p.input, tokens: a.promptTokens + a.completionTokens()}

	if p.body.Background && !p.body.Stream {
		stored.background = true
		stored.startedAt = c.now.Add(plan.total / 2)
		stored.readyAt = c.now.Add(plan.total)
		d.objects.responses.put(obj.ID, stored, 0)
		if err := writeJSON(w, http.StatusOK, stored.view(c.now)); err != nil {
			return outcomeAbandoned
		}
		return outcomeOK
	}
	if p.body.Stream {
		o := d.streamEvents(w, r, responseEvents(obj, a, plan), "text/event-stream; charset=utf-8", f, c.tally)
		if o == outcomeOK && p.store {
			d.objects.responses.put(obj.ID, stored, 0)
		}
		return o
	}
	if !d.wait(r, plan.total) {
		return outcomeAbandoned
	}
	if p.store {
		d.objects.responses.put(obj.ID, stored, 0)
	}
	if f.Mode == FaultShortBody {
		writeShortBody(w, obj, c.tally)
	}
	if err := writeJSON(w, http.StatusOK, obj); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// responseFor renders the answer a as a finished response: a message with
// one output_text, or a function_call item; status incomplete when the
// answer was cut by max_output_tokens or the content filter.
func (d *deployment) responseFor(p *parsedResponses, a *answer, c *call, prevID *string) responseObject {
	b := p.body
	obj := responseObject{
		ID: d.objectID(c.rng, "resp_", 40, false), Object: "response", CreatedAt: c.now.Unix(),
		Status: "completed", Background: b.Background, Instructions: nullIfEmpty(b.Instructions),
		MaxOutputTokens: b.MaxOutputTokens, Model: d.cfg.Model, ParallelToolCalls: true,
		PreviousResponseID: prevID, Store: p.store, Temperature: 1, ToolChoice: b.ToolChoice,
		Tools: b.Tools, TopP: 1, Truncation: "disabled", Metadata: b.Metadata, ServiceTier: "default",
	}
	obj.Text.Format.Type = "text"
	obj.Tools = echoTools(b.Tools)
	if r := b.Reasoning; r != nil {
		if r.Effort != "" {
			obj.Reasoning.Effort = &r.Effort
		}
		obj.Reasoning.Summary = r.Summary
	}
	if len(obj.ToolChoice) == 0 {
		obj.ToolChoice = json.RawMessage(`"auto"`)
	}
	if obj.Tools == nil {
		obj.Tools = []json.RawMessage{}
	}
	if obj.Metadata == nil {
		obj.Metadata = map[string]string{}
	}
	if a.tool != nil {
		obj.Output = []any{outputFunctionCall{Type: "function_call", ID: d.objectID(c.rng, "fc_", 40, false),
			CallID: a.tool.id, Name: a.tool.name, Arguments: a.tool.args, Status: "completed"}}
	} else {
		msg := outputMessage{Type: "message", ID: d.objectID(c.rng, "msg_", 40, false), Status: "completed", Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: a.text(), Annotations: []any{}, Logprobs: []any{}}}}
		switch a.finish {
		case "length":
			obj.Status, obj.IncompleteDetails, msg.Status = "incomplete", &incompleteDetails{"max_output_tokens"}, "incomplete"
		case "content_filter":
			obj.Status, obj.IncompleteDetails, msg.Status = "incomplete", &incompleteDetails{"content_filter"}, "incomplete"
		}
		obj.Output = []any{msg}
	}
	if len(a.thought) > 0 {
		rs := outputReasoning{Type: "reasoning", ID: d.objectID(c.rng, "rs_", 40, false), Summary: []summaryText{}}
		if p.req.showThought {
			rs.Summary = append(rs.Summary, summaryText{Type: "summary_text", Text: strings.Join(a.thought, "")})
		}
		obj.Output = append([]any{rs}, obj.Output...)
	}
	u := &responseUsage{InputTokens: a.promptTokens, OutputTokens: a.completionTokens()}
	u.OutputTokensDetails.ReasoningTokens = a.reasoningTokens()
	u.TotalTokens = u.InputTokens + u.OutputTokens
	obj.Usage = u
	return obj
}

// echoTools is the request's tools as a response lists them: a function
// tool with every member the API writes (description and parameters null
// when not given, strict true unless set), other tools as they came.
func echoTools(tools []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(tools))
	for _, raw := range tools {
		var t map[string]json.RawMessage
		if json.Unmarshal(raw, &t) != nil || string(t["type"]) != `"function"` {
			out = append(out, raw)
			continue
		}
		for k, def := range map[string]string{"description": "null", "parameters": "null", "strict": "true"} {
			if v, ok := t[k]; !ok || (k == "strict" && string(v) == "null") {
				t[k] = json.RawMessage(def)
			}
		}
		out = append(out, mustJSON(t))
	}
	return out
}

func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nullJSON
	}
	return raw
}

// responseEvents lays out a streamed response: response.created and
// response.in_progress (status in_progress, no output), then each output
// item in turn: a reasoning item added (with its summary, when asked: part
// added, one reasoning_summary_text.delta per word, text done, part done)
// and done; the output item added, for a message its content part added, one output_text.delta per
// word, output_text.done and content_part.done; for a function call one
// function_call_arguments.delta per argument fragment and
// function_call_arguments.done; then output_item.done and
// response.completed (response.incomplete when cut). Every event carries
// its sequence_number. The first event waits plan.firstToken, each delta
// after the first plan.perToken.
func responseEvents(obj responseObject, a *answer, plan timing) []sseEvent {
	var evs []sseEvent
	seq := 0
	add := func(delay time.Duration, name string, fields map[string]any) {
		fields["type"] = name
		fields["sequence_number"] = seq
		seq++
		evs = append(evs, sseEvent{name: name, delay: delay, data: mustJSON(fields)})
	}
	start := obj
	start.Status, start.Output, start.Usage, start.IncompleteDetails, start.CompletedAt = "in_progress", []any{}, nil, nil, nil
	add(plan.firstToken, "response.created", map[string]any{"response": start})
	add(0, "response.in_progress", map[string]any{"response": start})
	for index, out := range obj.Output {
		switch item := out.(type) {
		case outputReasoning:
			open := item
			open.Summary = []summaryText{}
			add(0, "response.output_item.added", map[string]any{"output_index": index, "item": open})
			for si, sum := range item.Summary {
				ids := map[string]any{"item_id": item.ID, "output_index": index, "summary_index": si}
				with := func(k string, v any) map[string]any {
					m := map[string]any{k: v}
					for k, v := range ids {
						m[k] = v
					}
					return m
				}
				add(0, "response.reasoning_summary_part.added", with("part", summaryText{Type: "summary_text"}))
				for _, w := range a.thought {
					add(plan.perToken, "response.reasoning_summary_text.delta", with("delta", w))
				}
				add(0, "response.reasoning_summary_text.done", with("text", sum.Text))
				add(0, "response.reasoning_summary_part.done", with("part", sum))
			}
			add(0, "response.output_item.done", map[string]any{"output_index": index, "item": item})
		case outputFunctionCall:
			open := item
			open.Arguments, open.Status = "", "in_progress"
			add(0, "response.output_item.added", map[string]any{"output_index": index, "item": open})
			for i, frag := range a.tool.fragments() {
				delay := plan.perToken
				if i == 0 {
					delay = 0
				}
				add(delay, "response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": index, "delta": frag})
			}
			add(0, "response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": index, "name": item.Name, "arguments": item.Arguments})
			add(0, "response.output_item.done", map[string]any{"output_index": index, "item": item})
		case outputMessage:
			open := item
			open.Status, open.Content = "in_progress", []outputText{}
			add(0, "response.output_item.added", map[string]any{"output_index": index, "item": open})
			empty := outputText{Type: "output_text", Annotations: []any{}, Logprobs: []any{}}
			ids := map[string]any{"item_id": item.ID, "output_index": index, "content_index": 0}
			with := func(k string, v any) map[string]any {
				m := map[string]any{k: v}
				for k, v := range ids {
					m[k] = v
				}
				return m
			}
			add(0, "response.content_part.added", with("part", empty))
			for i, word := range a.words {
				delay := plan.perToken
				if i == 0 {
					delay = 0
				}
				m := with("delta", word)
				m["logprobs"] = []any{}
				add(delay, "response.output_text.delta", m)
			}
			done := with("text", item.Content[0].Text)
			done["logprobs"] = []any{}
			add(0, "response.output_text.done", done)
			add(0, "response.content_part.done", with("part", item.Content[0]))
			add(0, "response.output_item.done", map[string]any{"output_index": index, "item": item})
		}
	}
	last := "response.completed"
	if obj.Status == "incomplete" {
		last = "response.incomplete"
	}
	add(0, last, map[string]any{"response": obj})
	evs[len(evs)-1].final = true
	return evs
}

// getResponse serves GET responses/{id}: the response as it stands on the
// clock, or with stream=true (in the query, or {"stream":true} in the
// body as openai-go sends it) its events (after starting_after, a sequence
// number), sent once it has completed: a background response still
// running is waited for on the sim's clock (on the waiter when the clock
// has no timers). A cancelled response has no stream (400).
func (d *deployment) getResponse(w http.ResponseWriter, r *http.Request, c *call, f Fault, id string) outcome {
	var view responseObject
	var ans *answer
	var readyAt time.Time
	if !d.objects.responses.update(id, func(s *storedResponse) {
		view, ans = s.view(c.now), s.ans
		if s.background {
			readyAt = s.readyAt
		}
	}) {
		d.writeError(w, errResponseNotFound(id))
		return outcomeRejected
	}
	q := r.URL.Query()
	var inBody struct {
		Stream bool `json:"stream"`
	}
	// The query names it; openai-go sends it in a JSON body instead.
	_ = json.Unmarshal(c.body, &inBody)
	if q.Get("stream") != "true" && !inBody.Stream {
		_ = writeJSON(w, http.StatusOK, view)
		return outcomeOK
	}
	after := -1
	if s := q.Get("starting_after"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			d.writeError(w, invalidParam("starting_after", fmt.Sprintf("Invalid 'starting_after': expected a non-negative integer, got %q.", s)))
			return outcomeRejected
		}
		after = n
	}
	if view.Status == "cancelled" {
		d.writeError(w, openAIErr(http.StatusBadRequest, fmt.Sprintf("Response with id '%s' was cancelled and cannot be streamed.", id), strp("invalid_request_error"), nil, nil))
		return outcomeRejected
	}
	if wait := readyAt.Sub(c.now); wait > 0 && !d.waitOnClock(r, wait) {
		return outcomeAbandoned
	}
	d.objects.responses.update(id, func(s *storedResponse) { view = s.view(d.sim.clock.Now()) })
	if view.Status == "cancelled" { // while we waited
		d.writeError(w, openAIErr(http.StatusBadRequest, fmt.Sprintf("Response with id '%s' was cancelled and cannot be streamed.", id), strp("invalid_request_error"), nil, nil))
		return outcomeRejected
	}
	var events []sseEvent
	for i, ev := range responseEvents(view, ans, timing{}) {
		if i > after {
			events = append(events, ev)
		}
	}
	return d.streamEvents(w, r, events, "text/event-stream; charset=utf-8", f, c.tally)
}

// waitOnClock waits until dur has passed on the sim's clock (on its waiter
// when the clock has no timers); false when the client went away first.
func (d *deployment) waitOnClock(r *http.Request, dur time.Duration) bool {
	tc, ok := d.sim.clock.(timerClock)
	if !ok {
		return d.wait(r, dur)
	}
	done := make(chan struct{})
	t := tc.AfterFunc(dur, func() { close(done) })
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (d *deployment) deleteResponse(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	if !d.objects.responses.remove(id) {
		d.writeError(w, errResponseNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, deleted{ID: id, Object: "response", Deleted: true})
	return outcomeOK
}

// deleted is the answer to a DELETE.
type deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// cancelResponse cancels a background response that has not completed; a
// completed one is answered as it is. A response that was not created in
// the background cannot be cancelled (400).
func (d *deployment) cancelResponse(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view responseObject
	background := false
	if !d.objects.responses.update(id, func(s *storedResponse) {
		background = s.background
		if background && c.now.Before(s.readyAt) {
			s.cancelled = true
		}
		view = s.view(c.now)
	}) {
		d.writeError(w, errResponseNotFound(id))
		return outcomeRejected
	}
	if !background {
		d.writeError(w, openAIErr(http.StatusBadRequest, "Cannot cancel a synchronous response.", strp("invalid_request_error"), nil, nil))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// listPage is the list shape of input_items, files and batches.
type listPage struct {
	Object  string  `json:"object"`
	Data    []any   `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// listParams reads limit (default 20, 1 to 100), order (asc or desc,
// default def) and after from the query.
func listParams(r *http.Request, def string) (limit int, asc bool, after string, err error) {
	q := r.URL.Query()
	limit = 20
	if s := q.Get("limit"); s != "" {
		n, perr := strconv.Atoi(s)
		if perr != nil || n < 1 || n > 100 {
			return 0, false, "", badRequest("Invalid 'limit': integer between 1 and 100 expected, got %q.", s)
		}
		limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = def
	}
	if order != "asc" && order != "desc" {
		return 0, false, "", badRequest("Invalid 'order': expected 'asc' or 'desc', got %q.", order)
	}
	return limit, order == "asc", q.Get("after"), nil
}

// newListPage builds a list answer from items and their ids.
func newListPage(data []any, ids []string, more bool) listPage {
	p := listPage{Object: "list", Data: data, HasMore: more}
	if p.Data == nil {
		p.Data = []any{}
	}
	if len(ids) > 0 {
		p.FirstID, p.LastID = &ids[0], &ids[len(ids)-1]
	}
	return p
}

// listInputItems lists a stored response's input items, newest first
// unless order=asc.
func (d *deployment) listInputItems(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, id string) outcome {
	limit, asc, after, err := listParams(r, "desc")
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	var items []json.RawMessage
	if !d.objects.responses.update(id, func(s *storedResponse) { items = s.input }) {
		d.writeError(w, errResponseNotFound(id))
		return outcomeRejected
	}
	ordered := make([]json.RawMessage, len(items))
	for i := range items {
		if asc {
			ordered[i] = items[i]
		} else {
			ordered[i] = items[len(items)-1-i]
		}
	}
	var data []any
	var ids []string
	started := after == ""
	more := false
	for _, it := range ordered {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &head)
		if !started {
			started = head.ID == after
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		data = append(data, it)
		ids = append(ids, head.ID)
	}
	_ = writeJSON(w, http.StatusOK, newListPage(data, ids, more))
	return outcomeOK
}
