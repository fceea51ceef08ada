package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// NewOpenAIToResponsesStream converts a chat.completion.chunk stream (with
// or without its closing "data: [DONE]") to Responses API stream events,
// each written as "event: <type>\ndata: {…}\n\n" with a sequence_number
// counting from 0: response.created and response.in_progress, the output
// items with their content events, and response.completed (or
// response.incomplete) carrying the whole response with usage. req is the
// original Responses request body, echoed in every response object as
// OpenAIResponseToResponses does; it may be nil, and a malformed req fails
// the first event. The final event is written once the finish chunk and the
// usage chunk are both in, at "[DONE]", or at End (the usage chunk may come
// after the finish chunk or never). Only the first choice is converted. An
// error chunk becomes a Responses "error" event and a *StreamError. The event
// sequence is described at the top of responses.go.
//
// The returned converter is not safe for concurrent use.
func NewOpenAIToResponsesStream(req []byte) StreamConverter {
	e, err := parseEcho(req)
	if e == nil {
		e = &echo{}
	}
	return &openAIToResponses{echo: e, reqErr: err, open: -1, tools: map[int]int{}}
}

type openAIToResponses struct {
	echo    *echo
	reqErr  error // req was malformed: reported at the first event
	seq     int   // next sequence_number
	started bool
	resp    *rsResponse  // id, model and echoed settings
	items   []*rsOutItem // output items in order
	open    int          // index in items of the open reasoning or message item, -1 if none
	tools   map[int]int  // chat tool call index -> index in items
	finish  string       // chat finish_reason, once seen
	tier    string       // chat service_tier, once seen
	usage   *oaUsage     // once seen
	done    bool         // the final event was written
	buf     bytes.Buffer // output of the current call
}

var _ StreamConverter = (*openAIToResponses)(nil)
var _ completer = (*openAIToResponses)(nil)

// rsOutItem is an output item being streamed.
type rsOutItem struct {
	kind   string // "reasoning", "message" or "function_call"
	id     string
	closed bool
	status string
	text   strings.Builder // reasoning summary text
	parts  []*rsOutPart    // message content parts
	callID string
	name   string
	args   strings.Builder
}

type rsOutPart struct {
	refusal bool
	text    strings.Builder
	closed  bool
}

// rsChatChunk is a chat chunk as the converter reads it, or an error.
type rsChatChunk struct {
	ID          string `json:"id"`
	Created     int64  `json:"created"`
	Model       string `json:"model"`
	ServiceTier string `json:"service_tier"`
	Choices     []struct {
		Index        int           `json:"index"`
		Delta        rsChatMessage `json:"delta"`
		FinishReason *string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage        `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// rsEvent is a Responses stream event; members an event type does not have
// are left out.
type rsEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *rsResponse     `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	SummaryIndex   *int            `json:"summary_index,omitempty"`
	Item           any             `json:"item,omitempty"`
	Part           any             `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Refusal        *string         `json:"refusal,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

// rsErrorEvent is the Responses stream's error event.
type rsErrorEvent struct {
	Type           string  `json:"type"` // "error"
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

var emptyList = json.RawMessage("[]")

func (s *openAIToResponses) Event(ev Event) ([]byte, error) {
	if s.done {
		return nil, nil
	}
	if s.reqErr != nil {
		return nil, s.reqErr
	}
	s.buf.Reset()
	if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
		s.close()
		return s.output(), nil
	}
	var c rsChatChunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return nil, errBadBody("openai stream chunk", err)
	}
	if !isNull(c.Error) {
		return s.streamErr(ev.Data)
	}
	if len(c.Choices) == 0 && c.Usage == nil {
		return nil, nil // e.g. Azure's prompt_filter_results chunk
	}
	s.start(c.ID, c.Model, c.Created)
	if c.Usage != nil {
		s.usage = c.Usage
	}
	if c.ServiceTier != "" {
		s.tier = c.ServiceTier
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if r := ch.Delta.reasoning(); r != "" {
			s.reasoningDelta(r)
		}
		if ch.Delta.Content != nil && *ch.Delta.Content != "" {
			s.textDelta(*ch.Delta.Content, false)
		}
		if ch.Delta.Refusal != nil && *ch.Delta.Refusal != "" {
			s.textDelta(*ch.Delta.Refusal, true)
		}
		for _, tc := range ch.Delta.ToolCalls {
			if err := s.toolDelta(tc); err != nil {
				return s.output(), err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" && s.finish == "" {
			s.finish = *ch.FinishReason
			s.closeItems()
		}
	}
	if s.finish != "" && s.usage != nil {
		s.close()
	}
	return s.output(), nil
}

// End closes a stream whose source ended without "[DONE]", or without the
// usage chunk, after its finish_reason.
func (s *openAIToResponses) End() []byte {
	if s.done {
		return nil
	}
	s.buf.Reset()
	s.close()
	return s.output()
}

func (s *openAIToResponses) complete() bool { return s.done || s.finish != "" }

// output returns a copy of what the current call wrote.
func (s *openAIToResponses) output() []byte {
	if s.buf.Len() == 0 {
		return nil
	}
	return bytes.Clone(s.buf.Bytes())
}

func (s *openAIToResponses) emit(e rsEvent) {
	e.SequenceNumber = s.seq
	s.seq++
	s.buf.Write(sseNamed(e.Type, mustMarshal(e)))
}

func (s *openAIToResponses) streamErr(data []byte) ([]byte, error) {
	var b struct {
		Error struct {
			Message string          `json:"message"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &b) // a body of another shape keeps its text, below
	e := rsErrorEvent{Type: "error", SequenceNumber: s.seq, Message: b.Error.Message, Param: b.Error.Param}
	s.seq++
	if code := ErrorCode(OpenAI, data); code != "" {
		e.Code = &code
	}
	if e.Message == "" {
		e.Message = string(data)
	}
	framed := func(v []byte) []byte { return sseNamed("error", v) }
	return streamError(OpenAI, data, mustMarshal(e), framed)
}

// start writes response.created and response.in_progress once.
func (s *openAIToResponses) start(chatID, model string, created int64) {
	if s.started {
		return
	}
	s.started = true
	s.resp = s.echo.response(responseID(chatID, ""), model)
	s.resp.CreatedAt = created
	snap := *s.resp
	s.emit(rsEvent{Type: "response.created", Response: &snap})
	snap2 := *s.resp
	s.emit(rsEvent{Type: "response.in_progress", Response: &snap2})
}

func intp(i int) *int { return &i }

// newItem opens an output item and writes response.output_item.added.
func (s *openAIToResponses) newItem(it *rsOutItem) int {
	prefix := map[string]string{"reasoning": "rs_", "message": "msg_", "function_call": "fc_"}[it.kind]
	pos := len(s.items)
	it.id = itemID(prefix, s.resp.ID, pos)
	it.status = "in_progress"
	s.items = append(s.items, it)
	s.emit(rsEvent{Type: "response.output_item.added", OutputIndex: intp(pos), Item: it.snapshot()})
	return pos
}

// closeOpen closes the open reasoning or message item, if any.
func (s *openAIToResponses) closeOpen() {
	if s.open >= 0 {
		s.closeItem(s.open)
		s.open = -1
	}
}

func (s *openAIToResponses) reasoningDelta(d string) {
	if s.open < 0 || s.items[s.open].kind != "reasoning" {
		s.closeAll()
		s.open = s.newItem(&rsOutItem{kind: "reasoning"})
		it := s.items[s.open]
		s.emit(rsEvent{Type: "response.reasoning_summary_part.added", ItemID: it.id, OutputIndex: intp(s.open),
			SummaryIndex: intp(0), Part: rsSummaryText{Type: "summary_text", Text: ""}})
	}
	it := s.items[s.open]
	it.text.WriteString(d)
	s.emit(rsEvent{Type: "response.reasoning_summary_text.delta", ItemID: it.id, OutputIndex: intp(s.open),
		SummaryIndex: intp(0), Delta: &d})
}

func (s *openAIToResponses) textDelta(d string, refusal bool) {
	if s.open < 0 || s.items[s.open].kind != "message" {
		s.closeAll()
		s.open = s.newItem(&rsOutItem{kind: "message"})
	}
	pos := s.open
	it := s.items[pos]
	n := len(it.parts)
	if n == 0 || it.parts[n-1].refusal != refusal {
		if n > 0 {
			s.closePart(pos, n-1)
		}
		it.parts = append(it.parts, &rsOutPart{refusal: refusal})
		s.emit(rsEvent{Type: "response.content_part.added", ItemID: it.id, OutputIndex: intp(pos),
			ContentIndex: intp(n), Part: it.parts[n].snapshot()})
		n++
	}
	if d == "" {
		return // an empty message opened at the finish
	}
	p := it.parts[n-1]
	p.text.WriteString(d)
	if refusal {
		s.emit(rsEvent{Type: "response.refusal.delta", ItemID: it.id, OutputIndex: intp(pos), ContentIndex: intp(n - 1), Delta: &d})
		return
	}
	s.emit(rsEvent{Type: "response.output_text.delta", ItemID: it.id, OutputIndex: intp(pos), ContentIndex: intp(n - 1),
		Delta: &d, Logprobs: emptyList})
}

func (s *openAIToResponses) toolDelta(tc oaToolCall) error {
	k := 0
	if tc.Index != nil {
		k = *tc.Index
	}
	pos, seen := s.tools[k]
	if !seen {
		s.closeOpen()
		pos = s.newItem(&rsOutItem{kind: "function_call", callID: tc.ID, name: tc.Function.Name})
		s.tools[k] = pos
	} else if s.items[pos].closed {
		return errBadBody("openai stream", fmt.Errorf("tool call %d resumed after it was closed", k))
	}
	if it := s.items[pos]; it.callID == "" || it.name == "" {
		// some servers send the id or name after the first delta
		it.callID = cmp.Or(it.callID, tc.ID)
		it.name = cmp.Or(it.name, tc.Function.Name)
	}
	if tc.Function.Arguments != "" {
		it := s.items[pos]
		it.args.WriteString(tc.Function.Arguments)
		d := tc.Function.Arguments
		s.emit(rsEvent{Type: "response.function_call_arguments.delta", ItemID: it.id, OutputIndex: intp(pos), Delta: &d})
	}
	return nil
}

// closeAll closes every open item, in order.
func (s *openAIToResponses) closeAll() {
	for i := range s.items {
		if !s.items[i].closed {
			s.closeItem(i)
		}
	}
	s.open = -1
}

// closeItems closes every item at the finish_reason; when the answer is
// incomplete the last item is too. An answer with no item at all gets an
// empty message, as OpenAIResponseToResponses writes one.
func (s *openAIToResponses) closeItems() {
	if len(s.items) == 0 {
		s.textDelta("", false)
	}
	if status, _ := finishStatus(s.finish); status == "incomplete" && len(s.items) > 0 {
		if last := s.items[len(s.items)-1]; !last.closed && last.kind != "reasoning" {
			last.status = "incomplete"
		}
	}
	s.closeAll()
}

func (s *openAIToResponses) closePart(pos, n int) {
	it := s.items[pos]
	p := it.parts[n]
	if p.closed {
		return
	}
	p.closed = true
	text := p.text.String()
	if p.refusal {
		s.emit(rsEvent{Type: "response.refusal.done", ItemID: it.id, OutputIndex: intp(pos), ContentIndex: intp(n), Refusal: &text})
	} else {
		s.emit(rsEvent{Type: "response.output_text.done", ItemID: it.id, OutputIndex: intp(pos), ContentIndex: intp(n),
			Text: &text, Logprobs: emptyList})
	}
	s.emit(rsEvent{Type: "response.content_part.done", ItemID: it.id, OutputIndex: intp(pos), ContentIndex: intp(n), Part: p.snapshot()})
}

func (s *openAIToResponses) closeItem(pos int) {
	it := s.items[pos]
	if it.closed {
		return
	}
	switch it.kind {
	case "reasoning":
		text := it.text.String()
		s.emit(rsEvent{Type: "response.reasoning_summary_text.done", ItemID: it.id, OutputIndex: intp(pos), SummaryIndex: intp(0), Text: &text})
		s.emit(rsEvent{Type: "response.reasoning_summary_part.done", ItemID: it.id, OutputIndex: intp(pos), SummaryIndex: intp(0),
			Part: rsSummaryText{Type: "summary_text", Text: text}})
	case "message":
		for n := range it.parts {
			s.closePart(pos, n)
		}
	case "function_call":
		if it.args.Len() == 0 {
			// a call without arguments: Responses clients parse them as JSON
			it.args.WriteString("{}")
			d := "{}"
			s.emit(rsEvent{Type: "response.function_call_arguments.delta", ItemID: it.id, OutputIndex: intp(pos), Delta: &d})
		}
		args := it.args.String()
		s.emit(rsEvent{Type: "response.function_call_arguments.done", ItemID: it.id, OutputIndex: intp(pos), Arguments: &args})
	}
	it.closed = true
	if it.status == "in_progress" {
		it.status = "completed"
	}
	s.emit(rsEvent{Type: "response.output_item.done", OutputIndex: intp(pos), Item: it.snapshot()})
}

// close writes the final event: response.completed or response.incomplete.
func (s *openAIToResponses) close() {
	if s.done {
		return
	}
	s.start("", "", 0)
	s.closeItems()
	s.done = true
	r := *s.resp
	r.finish(s.finish, s.tier)
	r.Output = make([]any, 0, len(s.items))
	for _, it := range s.items {
		r.Output = append(r.Output, it.snapshot())
	}
	r.Usage = usageFromChat(s.usage)
	typ := "response.completed"
	if r.Status == "incomplete" {
		typ = "response.incomplete"
	}
	s.emit(rsEvent{Type: typ, Response: &r})
}

// snapshot is the item as it stands.
func (it *rsOutItem) snapshot() any {
	switch it.kind {
	case "reasoning":
		summary := []rsSummaryText{}
		if it.closed {
			summary = append(summary, rsSummaryText{Type: "summary_text", Text: it.text.String()})
		}
		return rsReasoningItem{ID: it.id, Type: "reasoning", Summary: summary}
	case "message":
		content := []any{}
		for _, p := range it.parts {
			if p.closed {
				content = append(content, p.snapshot())
			}
		}
		return rsMessageItem{ID: it.id, Type: "message", Status: it.status, Role: "assistant", Content: content}
	}
	return rsFunctionCallItem{ID: it.id, Type: "function_call", Status: it.status, Arguments: it.args.String(), CallID: it.callID, Name: it.name}
}

func (p *rsOutPart) snapshot() any {
	if p.refusal {
		return rsRefusalPart{Type: "refusal", Refusal: p.text.String()}
	}
	return outputText(p.text.String())
}
