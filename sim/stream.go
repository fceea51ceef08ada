package sim

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// sseEvent is one event of a stream and the wait before it.
type sseEvent struct {
	name  string // the `event:` line (anthropic); "" for none
	delay time.Duration
	data  []byte
	// final marks the events that finish the answer: those carrying a
	// finish_reason, stop_reason or finishReason, the usage that follows
	// them, and the end marker ([DONE], message_stop). truncate_stream
	// sends none of them.
	final bool
	// raw marks data that is the whole frame (Bedrock's event-stream
	// messages), written as it is.
	raw bool
}

// sseFrame is the event on the wire: an optional `event:` line, the
// `data:` line and a blank line.
func sseFrame(ev sseEvent) []byte {
	if ev.raw {
		return ev.data
	}
	var b []byte
	if ev.name != "" {
		b = append(append(append(b, "event: "...), ev.name...), '\n')
	}
	return append(append(append(b, "data: "...), ev.data...), '\n', '\n')
}

// mustJSON marshals a sim-built value, which cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// chunk is a chat.completion.chunk or a streamed text_completion.
type chunk struct {
	ID                  string              `json:"id"`
	Object              string              `json:"object"`
	Created             int64               `json:"created"`
	Model               string              `json:"model"`
	Choices             []any               `json:"choices"`
	PromptFilterResults []promptFilterEntry `json:"prompt_filter_results,omitempty"`
	ServiceTier         string              `json:"service_tier,omitempty"`
	SystemFingerprint   string              `json:"system_fingerprint,omitempty"`
	Usage               json.RawMessage     `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index                int             `json:"index"`
	Delta                any             `json:"delta"` // chunkDelta or toolStartDelta
	Logprobs             *choiceLogprobs `json:"logprobs"`
	FinishReason         *string         `json:"finish_reason"`
	ContentFilterResults any             `json:"content_filter_results,omitempty"`
}

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallChunk `json:"tool_calls,omitempty"`
}

// toolStartDelta opens a streamed tool call: the role, null content and
// the call's id, type and name with empty arguments.
type toolStartDelta struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	ToolCalls []toolCallChunk `json:"tool_calls"`
}

// toolCallChunk is one piece of a streamed tool call; only the first has
// the id, type and name.
type toolCallChunk struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function functionCallChunk `json:"function"`
}

type functionCallChunk struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

var nullJSON = json.RawMessage("null")

// events lays out the stream in the answer's flavour.
func (a *answer) events(plan timing) []sseEvent {
	switch a.flavour {
	case Anthropic:
		return a.anthropicEvents(plan)
	case Bedrock:
		return bedrockEvents(a.req, a.anthropicEvents(plan))
	case Gemini:
		return a.geminiEvents(plan)
	default:
		return a.openAIEvents(plan)
	}
}

// openAIEvents lays out an OpenAI or Azure stream: for azure a first event
// with empty choices and prompt_filter_results, sent at once as Azure
// sends it (the prompt's filter results, before the model has produced
// anything), then (chat) a role chunk,
// one chunk per word, a chunk with finish_reason (chat: each of n choices
// in turn, with its index), a usage chunk with empty
// choices when stream_options.include_usage is set, and [DONE]. A tool
// call replaces the role and word chunks with a chunk opening the call (id,
// type, name, empty arguments) and one chunk per argument fragment. The
// first event waits plan.firstToken, each content chunk after the first
// plan.perToken; azure's filter results wait nothing.
func (a *answer) openAIEvents(plan timing) []sseEvent {
	var evs []sseEvent
	add := func(delay time.Duration, v any) {
		evs = append(evs, sseEvent{delay: delay, data: mustJSON(v)})
	}
	first := plan.firstToken
	if a.azure() {
		add(0, chunk{Choices: []any{}, PromptFilterResults: promptFilterList()})
	}
	object := "chat.completion.chunk"
	if a.op == opCompletions {
		object = "text_completion"
	}
	base := func() chunk {
		c := chunk{ID: a.id, Object: object, Created: a.created, Model: a.model, SystemFingerprint: a.fingerprint}
		if a.op == opCompletions && a.azure() {
			c.SystemFingerprint = ""
		}
		if !a.azure() && a.op == opChat {
			c.ServiceTier = "default"
		}
		if a.includeUsage {
			c.Usage = nullJSON
		}
		return c
	}
	var emptyResults any = struct{}{}
	var wordResults any = completionResults(false)
	if !a.azure() {
		emptyResults, wordResults = nil, nil
	}
	if a.op == opChat {
		// One run of chunks per choice, in index order; the choices after
		// the first follow at once (they were generated alongside it). A
		// finish chunk before the last ends its choice, not the answer.
		for i, ch := range a.choices() {
			if i > 0 {
				first = 0
			}
			a.chatChoiceEvents(&evs, base, i, ch, first, plan, emptyResults, wordResults)
			finish := a.finish
			c := base()
			var results any = emptyResults
			if a.filtered && a.azure() {
				results = completionResults(true)
			}
			c.Choices = []any{chunkChoice{Index: i, Delta: chunkDelta{}, FinishReason: &finish, ContentFilterResults: results}}
			add(0, c)
		}
	} else {
		for i, w := range a.words {
			delay := plan.perToken
			if i == 0 {
				delay = first
			}
			c := base()
			c.Choices = []any{textChoice{Text: w, ContentFilterResults: a.choiceResults(false)}}
			add(delay, c)
		}
		finish := a.finish
		c := base()
		c.Choices = []any{textChoice{FinishReason: &finish, ContentFilterResults: a.choiceResults(a.filtered)}}
		add(0, c)
	}
	final := len(evs) - 1
	if a.includeUsage && !a.omitUsage {
		u := base()
		u.Choices = []any{}
		u.Usage = mustJSON(a.usage())
		add(0, u)
	}
	evs = append(evs, sseEvent{data: []byte("[DONE]")})
	for i := final; i < len(evs); i++ {
		evs[i].final = true
	}
	return evs
}

// chatChoiceEvents appends the chunks of one chat choice before its
// finish: a tool call's opening chunk (id, type, name, empty arguments)
// and one chunk per argument fragment, or a role chunk and one chunk per
// word. The first waits first, each later one plan.perToken.
func (a *answer) chatChoiceEvents(evs *[]sseEvent, base func() chunk, index int, ch choiceAnswer, first time.Duration, plan timing, emptyResults, wordResults any) {
	add := func(delay time.Duration, v any) {
		*evs = append(*evs, sseEvent{delay: delay, data: mustJSON(v)})
	}
	if ch.tool != nil {
		c := base()
		c.Choices = []any{chunkChoice{Index: index, Delta: toolStartDelta{Role: "assistant", ToolCalls: []toolCallChunk{{
			ID: ch.tool.id, Type: "function", Function: functionCallChunk{Name: ch.tool.name},
		}}}, ContentFilterResults: emptyResults}}
		add(first, c)
		for i, frag := range ch.tool.fragments() {
			delay := plan.perToken
			if i == 0 {
				delay = 0
			}
			c := base()
			c.Choices = []any{chunkChoice{Index: index, Delta: chunkDelta{ToolCalls: []toolCallChunk{{Function: functionCallChunk{Arguments: frag}}}}, ContentFilterResults: emptyResults}}
			add(delay, c)
		}
		return
	}
	c := base()
	empty := ""
	c.Choices = []any{chunkChoice{Index: index, Delta: chunkDelta{Role: "assistant", Content: &empty}, ContentFilterResults: emptyResults}}
	add(first, c)
	for i, w := range ch.words {
		delay := plan.perToken
		if i == 0 {
			delay = 0
		}
		c := base()
		c.Choices = []any{chunkChoice{Index: index, Delta: chunkDelta{Content: &w}, Logprobs: a.logprobsOf([]string{w}), ContentFilterResults: wordResults}}
		add(delay, c)
	}
}

// unfinished returns at most n of events that do not finish the answer:
// the stream truncate_stream sends.
func unfinished(events []sseEvent, n int) []sseEvent {
	var out []sseEvent
	for _, ev := range events {
		if len(out) == n {
			break
		}
		if !ev.final {
			out = append(out, ev)
		}
	}
	return out
}

// stream writes the answer as server-sent events. Headers go out with the
// first event. Under stall_stream or drop_stream the first f.After events
// are sent, then the stream stalls until the client or the sim gives up,
// or the connection is cut; under truncate_stream the first f.After events
// that do not finish the answer are sent and the response ends cleanly;
// under keepalive_hang only keep-alive comments are sent. A stream under
// way when its deployment goes dark (blackhole) sends nothing more.
func (d *deployment) stream(w http.ResponseWriter, r *http.Request, a *answer, plan timing, f Fault, t *tally) outcome {
	contentType := "text/event-stream; charset=utf-8"
	switch a.flavour {
	case Gemini:
		contentType = "text/event-stream"
	case Bedrock:
		contentType = "application/vnd.amazon.eventstream"
	}
	return d.streamEvents(w, r, a.events(plan), contentType, f, t)
}

// streamEvents writes events as server-sent events with contentType, under
// the stream faults of f as stream describes.
func (d *deployment) streamEvents(w http.ResponseWriter, r *http.Request, events []sseEvent, contentType string, f Fault, t *tally) outcome {
	stop := -1
	switch f.Mode {
	case FaultStallStream, FaultDropStream:
		stop = f.After
	case FaultTruncateStream:
		events = unfinished(events, f.After)
	}
	rc := http.NewResponseController(w)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	if f.Mode == FaultKeepaliveHang {
		start()
		d.keepAlive(w, r, rc)
	}
	for i, ev := range events {
		if i == stop {
			start()
			_ = rc.Flush()
			if f.Mode == FaultDropStream {
				t.settle(outcomeError)
				// Abort: the server closes the connection without ending the
				// chunked body, so the client sees the stream cut short.
				panic(http.ErrAbortHandler)
			}
			<-r.Context().Done()
			panic(http.ErrAbortHandler) // do not end the chunked body cleanly
		}
		if err := d.sim.waiter.Wait(r.Context(), ev.delay); err != nil {
			return outcomeAbandoned
		}
		if d.faultAt(d.sim.clock.Now()).Mode == FaultBlackhole {
			// The region went dark mid-stream: silence, as with a
			// stall, whatever the stream has sent (Azure's filter
			// results, some words, or nothing yet).
			<-r.Context().Done()
			panic(http.ErrAbortHandler) // do not end the chunked body cleanly
		}
		start()
		if _, err := w.Write(sseFrame(ev)); err != nil {
			return outcomeAbandoned
		}
		if i == len(events)-1 {
			// Leave the last event ([DONE], message_stop, Gemini's last
			// chunk) to be flushed when the handler returns, after the
			// outcome is counted: a client that has read the whole stream
			// then finds it in the stats.
			break
		}
		if err := rc.Flush(); err != nil {
			return outcomeAbandoned
		}
	}
	if f.Mode == FaultTruncateStream {
		start() // a stream with no event to send still answers 200
		return outcomeError
	}
	return outcomeOK
}

// keepAliveComment is the SSE comment keepalive_hang sends.
var keepAliveComment = []byte(": keep-alive\n\n")

// timerClock is a Clock that can also run a function later, as the system
// clock and fakeclock can.
type timerClock interface {
	AfterFunc(d time.Duration, f func()) clock.Timer
}

// keepAlive sends keep-alive comments until the client gives up or the sim
// closes, then aborts the response: one at once and one every
// KeepaliveInterval on the sim's clock, if the clock has timers. The next
// timer is armed before each comment is flushed, so a test that reads a
// comment and then advances a fake clock always finds it armed.
func (d *deployment) keepAlive(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) {
	tick := make(chan struct{}, 1)
	tc, hasTimers := d.sim.clock.(timerClock)
	var timer clock.Timer
	arm := func() {
		if !hasTimers {
			return
		}
		timer = tc.AfterFunc(KeepaliveInterval, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		arm()
		if _, err := w.Write(keepAliveComment); err != nil {
			panic(http.ErrAbortHandler)
		}
		if err := rc.Flush(); err != nil {
			panic(http.ErrAbortHandler)
		}
		select {
		case <-r.Context().Done():
			panic(http.ErrAbortHandler) // do not end the chunked body cleanly
		case <-tick:
		}
	}
}
