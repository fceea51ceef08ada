package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// sseEvent is one `data:` event of a stream and the wait before it.
type sseEvent struct {
	delay time.Duration
	data  []byte
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
	Index                int        `json:"index"`
	Delta                chunkDelta `json:"delta"`
	Logprobs             *struct{}  `json:"logprobs"`
	FinishReason         *string    `json:"finish_reason"`
	ContentFilterResults any        `json:"content_filter_results,omitempty"`
}

type chunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

var nullJSON = json.RawMessage("null")

// events lays out the stream: for azure a first event with empty choices
// and prompt_filter_results, then (chat) a role chunk, one chunk per word,
// a chunk with finish_reason, a usage chunk with empty choices when
// stream_options.include_usage is set, and [DONE]. The first event waits
// plan.firstToken, each content chunk after the first plan.perToken.
func (a *answer) events(plan timing) []sseEvent {
	var evs []sseEvent
	add := func(delay time.Duration, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // only sim-built values are marshalled
		}
		evs = append(evs, sseEvent{delay: delay, data: b})
	}
	first := plan.firstToken
	if a.azure() {
		add(first, chunk{Choices: []any{}, PromptFilterResults: promptFilterList()})
		first = 0
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
		c := base()
		empty := ""
		c.Choices = []any{chunkChoice{Delta: chunkDelta{Role: "assistant", Content: &empty}, ContentFilterResults: emptyResults}}
		add(first, c)
		first = 0
	}
	for i, w := range a.words {
		delay := plan.perToken
		if i == 0 {
			delay = first
		}
		c := base()
		if a.op == opChat {
			c.Choices = []any{chunkChoice{Delta: chunkDelta{Content: &w}, ContentFilterResults: wordResults}}
		} else {
			c.Choices = []any{textChoice{Text: w, ContentFilterResults: a.choiceResults(false)}}
		}
		add(delay, c)
	}
	finish := a.finish
	c := base()
	if a.op == opChat {
		var results any = emptyResults
		if a.filtered && a.azure() {
			results = completionResults(true)
		}
		c.Choices = []any{chunkChoice{Delta: chunkDelta{}, FinishReason: &finish, ContentFilterResults: results}}
	} else {
		c.Choices = []any{textChoice{FinishReason: &finish, ContentFilterResults: a.choiceResults(a.filtered)}}
	}
	add(0, c)
	if a.includeUsage {
		u := base()
		u.Choices = []any{}
		b, err := json.Marshal(a.usage())
		if err != nil {
			panic(err)
		}
		u.Usage = b
		add(0, u)
	}
	evs = append(evs, sseEvent{data: []byte("[DONE]")})
	return evs
}

// stream writes the answer as server-sent events. Headers go out with the
// first event. Under stall_stream or drop_stream the first f.After events
// are sent, then the stream stalls until the client or the sim gives up,
// or the connection is cut.
func (d *deployment) stream(w http.ResponseWriter, r *http.Request, a *answer, plan timing, f Fault, t *tally) outcome {
	events := a.events(plan)
	stop := -1
	if f.Mode == FaultStallStream || f.Mode == FaultDropStream {
		stop = f.After
	}
	rc := http.NewResponseController(w)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
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
		start()
		if _, err := w.Write(append(append([]byte("data: "), ev.data...), '\n', '\n')); err != nil {
			return outcomeAbandoned
		}
		if i == len(events)-1 {
			// Leave [DONE] to be flushed when the handler returns, after the
			// outcome is counted: a client that has read the whole stream
			// then finds it in the stats.
			break
		}
		if err := rc.Flush(); err != nil {
			return outcomeAbandoned
		}
	}
	return outcomeOK
}
