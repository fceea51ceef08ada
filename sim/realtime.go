package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// This file serves the Realtime API over WebSocket: GET v1/realtime?model=
// (openai), GET openai/v1/realtime?model= (azure GA) and GET
// openai/realtime?api-version=...&deployment= (azure preview).
//
// Before the upgrade a connect goes through the same fault and key checks
// as chat (gate) and counts one request against the quota, so a deployment
// that is down answers its 5xx and a rate-limited one 429 with
// Retry-After. The key may also come as the api-key query parameter
// (azure) or the openai-insecure-api-key.{key} subprotocol (openai), as
// browsers send them.
//
// After the upgrade the sim sends session.created and answers
//   - session.update with session.updated;
//   - conversation.item.create with the item added;
//   - response.create with a deterministic text response (response.created,
//     output item and content part added, one text delta per word, the done
//     events and response.done) or, when the session offers function tools
//     and the last item is a user turn, with a call of one, chosen as for
//     the Responses API (function_call_arguments deltas and done);
//   - input_audio_buffer.commit and .clear with their acknowledgements
//     (append is taken silently);
//   - any other event type with an error event (invalid_value).
//
// The azure preview path uses the beta event names
// (conversation.item.created, response.text.delta, response.text.done);
// the others the GA names (conversation.item.added and .done,
// response.output_text.delta and .done).
//
// A fault that takes the deployment away (down, overloaded, error_500,
// reset, drop_stream), once in force, ends an open session at its next
// client event: reset and drop_stream cut the connection, the others send
// a server_error event and close with 1011; the session counts as an
// error. Under blackhole client events go unanswered. Other faults do not
// affect an open session, and its responses are not charged to the quota.
// The connect counts as answered when the client closes normally,
// abandoned otherwise.

// realtimeTarget is what the path and query of a realtime connect name.
type realtimeTarget struct {
	apiVersion string // azure
	model      string // the model (openai, azure v1) or deployment (azure preview)
	beta       bool   // beta event names
}

func (d *deployment) serveRealtime(w http.ResponseWriter, r *http.Request, dr draws, t realtimeTarget) {
	now := d.sim.clock.Now()
	d.counters.begin()
	tl := &tally{d: d, op: opRealtime}
	defer tl.settle(outcomeError) // when a fault aborts the connection
	c := &call{route: route{op: opRealtime, apiVersion: t.apiVersion, modelInBody: true}, now: now, draws: dr, tally: tl}
	tl.settle(d.realtime(w, r, c, t))
}

// realtimeKey copies a key sent the browser way into the header keyFrom
// reads.
func (d *deployment) realtimeKey(r *http.Request) {
	if d.keyFrom(r) != "" {
		return
	}
	if k := r.URL.Query().Get("api-key"); k != "" && d.cfg.Flavour == Azure {
		r.Header.Set("Api-Key", k)
		return
	}
	for _, p := range strings.Split(r.Header.Get("Sec-WebSocket-Protocol"), ",") {
		if k, ok := strings.CutPrefix(strings.TrimSpace(p), "openai-insecure-api-key."); ok {
			r.Header.Set("Authorization", "Bearer "+k)
		}
	}
}

func (d *deployment) realtime(w http.ResponseWriter, r *http.Request, c *call, t realtimeTarget) outcome {
	d.realtimeKey(r)
	f := d.faultAt(c.now)
	if o, done := d.gate(w, r, *c, f); done {
		return o
	}
	if r.Method != http.MethodGet {
		d.writeError(w, errMethodNotAllowed(d.cfg.Flavour, r))
		return outcomeRejected
	}
	if !d.checkModel(w, c, t.model) {
		return outcomeRejected
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       []string{"realtime"},
		InsecureSkipVerify: true, // any origin: the sim serves loopback tests and demos
	})
	if err != nil {
		return outcomeRejected // Accept has answered (426, 400 ...)
	}
	s := &realtimeSession{d: d, conn: conn, c: c, beta: t.beta, plan: d.plan(c, f)}
	return s.run(r.Context())
}

// realtimeSession is one open realtime connection. It is used by one
// goroutine.
type realtimeSession struct {
	d       *deployment
	conn    *websocket.Conn
	c       *call
	beta    bool
	plan    timing
	session map[string]any
	items   []string // the text of the conversation's items
	lastID  string   // the last item's id
	// lastUser: the last item is a user turn (a user message or committed
	// audio), so offered tools may be called.
	lastUser bool
}

// names are the event names that differ between beta and GA.
func (s *realtimeSession) name(ga string) string {
	if !s.beta {
		return ga
	}
	switch ga {
	case "conversation.item.added":
		return "conversation.item.created"
	case "response.output_text.delta":
		return "response.text.delta"
	case "response.output_text.done":
		return "response.text.done"
	}
	return ga
}

func (s *realtimeSession) send(ctx context.Context, typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["event_id"] = randomID(s.c.rng, "event_", 20)
	return s.conn.Write(ctx, websocket.MessageText, mustJSON(fields))
}

func (s *realtimeSession) run(ctx context.Context) outcome {
	defer func() { _ = s.conn.CloseNow() }()
	d := s.d
	s.session = map[string]any{
		"id": d.objectID(s.c.rng, "sess_", 24, true), "object": "realtime.session", "model": d.cfg.Model,
		"instructions": "", "voice": "alloy", "tools": []any{}, "tool_choice": "auto",
		"expires_at": s.c.now.Add(30 * time.Minute).Unix(),
	}
	if s.beta {
		s.session["modalities"] = []string{"text", "audio"}
		s.session["max_response_output_tokens"] = "inf"
	} else {
		s.session["type"] = "realtime"
		s.session["output_modalities"] = []string{"audio"}
		s.session["max_output_tokens"] = "inf"
	}
	if err := s.send(ctx, "session.created", map[string]any{"session": s.session}); err != nil {
		return outcomeAbandoned
	}
	for {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusGoingAway:
				return outcomeOK
			}
			return outcomeAbandoned
		}
		if err := s.handle(ctx, data); err != nil {
			if errors.Is(err, errSessionFaulted) {
				return outcomeError
			}
			return outcomeAbandoned
		}
	}
}

// clientEvent is the part of a client event the sim reads.
type clientEvent struct {
	Type     string          `json:"type"`
	EventID  string          `json:"event_id"`
	Session  map[string]any  `json:"session"`
	Item     json.RawMessage `json:"item"`
	Response struct {
		MaxOutputTokens json.RawMessage `json:"max_output_tokens"`
	} `json:"response"`
}

// prevItem is the previous_item_id of a new item: the last item's id, or
// null for the first.
func (s *realtimeSession) prevItem() any {
	if s.lastID == "" {
		return nil
	}
	return s.lastID
}

// errorEvent sends the error event the real API sends for a bad client
// event.
func (s *realtimeSession) errorEvent(ctx context.Context, ev clientEvent, code, param, msg string) error {
	e := map[string]any{"type": "invalid_request_error", "code": code, "message": msg, "param": nil, "event_id": nil}
	if param != "" {
		e["param"] = param
	}
	if ev.EventID != "" {
		e["event_id"] = ev.EventID
	}
	return s.send(ctx, "error", map[string]any{"error": e})
}

// realtimeClientEvents are the client event types the sim knows.
var realtimeClientEvents = []string{
	"session.update", "conversation.item.create", "response.create", "response.cancel",
	"input_audio_buffer.append", "input_audio_buffer.commit", "input_audio_buffer.clear",
}

// errSessionFaulted ends a session that a fault took away.
var errSessionFaulted = errors.New("sim: realtime session ended by a fault")

// errEventDropped marks a client event left unanswered (blackhole).
var errEventDropped = errors.New("sim: realtime event dropped")

// checkFault ends the session if a fault that takes the deployment away
// is in force now, or drops the event under blackhole.
func (s *realtimeSession) checkFault(ctx context.Context) error {
	switch s.d.faultAt(s.d.sim.clock.Now()).Mode {
	case FaultReset, FaultDropStream:
		_ = s.conn.CloseNow()
		return errSessionFaulted
	case FaultBlackhole:
		return errEventDropped
	case FaultDown, FaultOverloaded, FaultError500:
		_ = s.send(ctx, "error", map[string]any{"error": map[string]any{
			"type": "server_error", "code": "server_error", "param": nil, "event_id": nil,
			"message": "The server had an error while processing your request. Sorry about that!",
		}})
		_ = s.conn.Close(websocket.StatusInternalError, "server error")
		return errSessionFaulted
	}
	return nil
}

func (s *realtimeSession) handle(ctx context.Context, data []byte) error {
	if err := s.checkFault(ctx); errors.Is(err, errEventDropped) {
		return nil
	} else if err != nil {
		return err
	}
	var ev clientEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return s.errorEvent(ctx, ev, "invalid_json", "", "The server could not parse the event: it is not valid JSON.")
	}
	switch ev.Type {
	case "session.update":
		for k, v := range ev.Session {
			if k != "id" && k != "object" {
				s.session[k] = v
			}
		}
		return s.send(ctx, "session.updated", map[string]any{"session": s.session})
	case "conversation.item.create":
		return s.createItem(ctx, ev)
	case "response.create":
		return s.respond(ctx, ev)
	case "response.cancel":
		return s.errorEvent(ctx, ev, "response_cancel_not_active", "", "Cancellation failed: no active response found.")
	case "input_audio_buffer.append":
		return nil
	case "input_audio_buffer.commit":
		id := s.d.objectID(s.c.rng, "item_", 20, true)
		s.items, s.lastID, s.lastUser = append(s.items, "(audio)"), id, true
		return s.send(ctx, "input_audio_buffer.committed", map[string]any{"item_id": id, "previous_item_id": nil})
	case "input_audio_buffer.clear":
		return s.send(ctx, "input_audio_buffer.cleared", map[string]any{})
	}
	return s.errorEvent(ctx, ev, "invalid_value", "type",
		fmt.Sprintf("Invalid value: '%s'. Supported values are: '%s'.", ev.Type, strings.Join(realtimeClientEvents, "', '")))
}

func (s *realtimeSession) createItem(ctx context.Context, ev clientEvent) error {
	var item map[string]any
	if json.Unmarshal(ev.Item, &item) != nil || item == nil {
		return s.errorEvent(ctx, ev, "missing_required_parameter", "item", "Missing required parameter: 'item'.")
	}
	if _, ok := item["id"]; !ok {
		item["id"] = s.d.objectID(s.c.rng, "item_", 20, true)
	}
	item["object"] = "realtime.item"
	item["status"] = "completed"
	text, _ := contentText(mustJSON(item["content"]))
	if out, ok := item["output"].(string); ok {
		text += out
	}
	prev := s.prevItem()
	s.items, s.lastID = append(s.items, text), fmt.Sprint(item["id"])
	s.lastUser = item["role"] == "user" && (item["type"] == nil || item["type"] == "message")
	if err := s.send(ctx, s.name("conversation.item.added"), map[string]any{"previous_item_id": prev, "item": item}); err != nil {
		return err
	}
	if s.beta {
		return nil
	}
	return s.send(ctx, "conversation.item.done", map[string]any{"previous_item_id": prev, "item": item})
}

// rtStep is one server event of a response and the wait before it.
type rtStep struct {
	delay time.Duration
	typ   string
	f     map[string]any
}

// respond answers response.create with Reply.Tokens words (cut to the
// response's max_output_tokens when it is a number).
func (s *realtimeSession) respond(ctx context.Context, ev clientEvent) error {
	d := s.d
	prompt := strings.Join(s.items, "\n")
	req := &request{op: opChat, prompt: prompt, promptTokens: estimateTokens(len([]rune(prompt)))}
	var n int
	if json.Unmarshal(ev.Response.MaxOutputTokens, &n) == nil && n > 0 {
		req.maxTokens = n
	}
	var err error
	if req.tool, err = s.toolPick(); err != nil {
		return s.errorEvent(ctx, ev, "invalid_value", "session.tool_choice", strings.TrimPrefix(err.Error(), errBadRequest.Error()+": "))
	}
	a := d.answer(req, *s.c, false)
	respID := d.objectID(s.c.rng, "resp_", 24, true)
	itemID := d.objectID(s.c.rng, "item_", 20, true)
	if a.tool != nil {
		return s.respondTool(ctx, a, respID, itemID)
	}
	partType := "output_text"
	if s.beta {
		partType = "text"
	}
	status := "completed"
	var details any
	if a.finish == "length" {
		status, details = "incomplete", map[string]any{"type": "incomplete", "reason": "max_output_tokens"}
	}
	item := func(st string, text *string) map[string]any {
		m := map[string]any{"id": itemID, "object": "realtime.item", "type": "message", "role": "assistant", "status": st, "content": []any{}}
		if text != nil {
			m["content"] = []any{map[string]any{"type": partType, "text": *text}}
		}
		return m
	}
	resp := func(st string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "realtime.response", "status": st, "status_details": details, "output": output, "usage": usage}
	}
	ids := func(extra map[string]any) map[string]any {
		m := map[string]any{"response_id": respID, "item_id": itemID, "output_index": 0, "content_index": 0}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	text := a.text()
	steps := []rtStep{
		{s.plan.firstToken, "response.created", map[string]any{"response": resp("in_progress", []any{}, nil)}},
		{0, "response.output_item.added", map[string]any{"response_id": respID, "output_index": 0, "item": item("in_progress", nil)}},
		{0, s.name("conversation.item.added"), map[string]any{"previous_item_id": s.prevItem(), "item": item("in_progress", nil)}},
		{0, "response.content_part.added", ids(map[string]any{"part": map[string]any{"type": partType, "text": ""}})},
	}
	for i, word := range a.words {
		delay := s.plan.perToken
		if i == 0 {
			delay = 0
		}
		steps = append(steps, rtStep{delay, s.name("response.output_text.delta"), ids(map[string]any{"delta": word})})
	}
	done := item(status, &text)
	u := a.usage()
	usage := map[string]any{"total_tokens": u.TotalTokens, "input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens}
	tail := []rtStep{
		{0, s.name("response.output_text.done"), ids(map[string]any{"text": text})},
		{0, "response.content_part.done", ids(map[string]any{"part": map[string]any{"type": partType, "text": text}})},
		{0, "response.output_item.done", map[string]any{"response_id": respID, "output_index": 0, "item": done}},
	}
	if !s.beta {
		tail = append(tail, rtStep{0, "conversation.item.done", map[string]any{"previous_item_id": s.prevItem(), "item": done}})
	}
	tail = append(tail, rtStep{0, "response.done", map[string]any{"response": resp(status, []any{done}, usage)}})
	for _, st := range append(steps, tail...) {
		if err := d.sim.waiter.Wait(ctx, st.delay); err != nil {
			return err
		}
		if err := s.send(ctx, st.typ, st.f); err != nil {
			return err
		}
	}
	s.items, s.lastID, s.lastUser = append(s.items, text), itemID, false
	return nil
}

// toolPick applies chooseTool to the session's tools and tool_choice, as
// the Responses API does (flat function tools).
func (s *realtimeSession) toolPick() (*toolPick, error) {
	var b responsesBody
	if raw, ok := s.session["tools"]; ok {
		_ = json.Unmarshal(mustJSON(raw), &b.Tools)
	}
	if raw, ok := s.session["tool_choice"]; ok {
		b.ToolChoice = mustJSON(raw)
	}
	return responsesToolPick(b, s.lastUser)
}

// respondTool answers response.create with a call of the picked tool:
// the function_call item added, one function_call_arguments.delta per
// argument fragment, function_call_arguments.done, the item done and
// response.done.
func (s *realtimeSession) respondTool(ctx context.Context, a *answer, respID, itemID string) error {
	call := func(st, args string) map[string]any {
		return map[string]any{"id": itemID, "object": "realtime.item", "type": "function_call", "status": st,
			"name": a.tool.name, "call_id": a.tool.id, "arguments": args}
	}
	ids := func(k string, v any) map[string]any {
		return map[string]any{"response_id": respID, "item_id": itemID, "output_index": 0, "call_id": a.tool.id, k: v}
	}
	done := call("completed", a.tool.args)
	u := a.usage()
	usage := map[string]any{"total_tokens": u.TotalTokens, "input_tokens": u.PromptTokens, "output_tokens": u.CompletionTokens}
	steps := []rtStep{
		{s.plan.firstToken, "response.created", map[string]any{"response": map[string]any{"id": respID, "object": "realtime.response", "status": "in_progress", "output": []any{}, "usage": nil}}},
		{0, "response.output_item.added", map[string]any{"response_id": respID, "output_index": 0, "item": call("in_progress", "")}},
		{0, s.name("conversation.item.added"), map[string]any{"previous_item_id": s.prevItem(), "item": call("in_progress", "")}},
	}
	for i, frag := range a.tool.fragments() {
		delay := s.plan.perToken
		if i == 0 {
			delay = 0
		}
		steps = append(steps, rtStep{delay, "response.function_call_arguments.delta", ids("delta", frag)})
	}
	steps = append(steps,
		rtStep{0, "response.function_call_arguments.done", ids("arguments", a.tool.args)},
		rtStep{0, "response.output_item.done", map[string]any{"response_id": respID, "output_index": 0, "item": done}})
	if !s.beta {
		steps = append(steps, rtStep{0, "conversation.item.done", map[string]any{"previous_item_id": s.prevItem(), "item": done}})
	}
	steps = append(steps, rtStep{0, "response.done", map[string]any{"response": map[string]any{
		"id": respID, "object": "realtime.response", "status": "completed", "status_details": nil, "output": []any{done}, "usage": usage}}})
	for _, st := range steps {
		if err := s.d.sim.waiter.Wait(ctx, st.delay); err != nil {
			return err
		}
		if err := s.send(ctx, st.typ, st.f); err != nil {
			return err
		}
	}
	s.items, s.lastID, s.lastUser = append(s.items, a.tool.args), itemID, false
	return nil
}
