package translate

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
)

// chunk is one chat.completion.chunk event of the first choice; extra is
// added to the chunk's members (e.g. a usage).
func chunk(delta, finish, extra string) string {
	if finish == "" {
		finish = "null"
	}
	return `data: {"id":"chatcmpl-k1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta +
		`,"finish_reason":` + finish + `}]` + extra + "}\n\n"
}

const usageChunk = `data: {"id":"chatcmpl-k1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}` + "\n\n"

// sdkStream decodes a converted stream with the SDK's event union, checking
// each event's name, type and sequence number, and feeds the SDK's response
// accumulator. It returns the events and the final response.
func sdkStream(t *testing.T, out []byte) ([]responses.ResponseStreamEventUnion, *responses.Response) {
	t.Helper()
	var evs []responses.ResponseStreamEventUnion
	var acc responses.ResponseAccumulator
	var final *responses.Response
	for i, ev := range events(t, out) {
		var e responses.ResponseStreamEventUnion
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if e.Type != ev.Name || e.SequenceNumber != int64(i) {
			t.Errorf("event %d named %q has type %q and sequence_number %d", i, ev.Name, e.Type, e.SequenceNumber)
		}
		var se responses.ResponsesServerEventUnion
		if err := json.Unmarshal(ev.Data, &se); err != nil {
			t.Fatalf("event %d as a server event: %v", i, err)
		}
		if err := acc.AddEvent(se); err != nil && e.Type != "error" {
			t.Errorf("the SDK accumulator refused event %d %s: %v", i, ev.Data, err)
		}
		switch v := e.AsAny().(type) {
		case responses.ResponseCompletedEvent:
			final = &v.Response
		case responses.ResponseIncompleteEvent:
			final = &v.Response
		}
		evs = append(evs, e)
	}
	if final != nil {
		r, err := acc.ReconstructedResponse()
		if err != nil {
			t.Fatalf("ReconstructedResponse: %v", err)
		}
		if r.OutputText() != final.OutputText() || r.Status != final.Status {
			t.Errorf("the accumulator read %q (%s), the final event says %q (%s)", r.OutputText(), r.Status, final.OutputText(), final.Status)
		}
	}
	return evs, final
}

// deltas joins the text, refusal, summary and argument deltas of a stream,
// the way a client reading it live would see them.
func deltas(evs []responses.ResponseStreamEventUnion) (text, refusal, summary string, args map[string]string) {
	args = map[string]string{}
	for _, e := range evs {
		switch v := e.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			text += v.Delta
		case responses.ResponseRefusalDeltaEvent:
			refusal += v.Delta
		case responses.ResponseReasoningSummaryTextDeltaEvent:
			summary += v.Delta
		case responses.ResponseFunctionCallArgumentsDeltaEvent:
			args[v.ItemID] += v.Delta
		}
	}
	return text, refusal, summary, args
}

func TestSDKReadsResponsesStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  string
		want sdkWant
	}{
		{"responses_stream_text", "responses_req_string.in.json", sdkWant{status: "completed",
			text: "Sunlight scatters off air  molecules; blue scatters most & <widest>.", usage: [5]int64{31, 16, 84, 64, 115}}},
		{"responses_stream_tools", "responses_req_tools.in.json", sdkWant{status: "completed", text: "Checking both cities.",
			calls:   []string{`call_Ab12 get_weather {"city":"Paris"}`, `call_Cd34 get_weather {"city":"London"}`},
			summary: "The user wants two cities. Call both.", usage: [5]int64{212, 128, 46, 12, 258}}},
		{"responses_stream_cutoff", "responses_req_json_schema.in.json", sdkWant{status: "incomplete", reason: "max_output_tokens",
			text: `{"name":"Science fair","date":"Fri`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := convertStream(t, tc.name+".in.sse", NewOpenAIToResponsesStream(readFile(t, tc.req)))
			evs, final := sdkStream(t, out)
			if final == nil {
				t.Fatal("no response.completed or response.incomplete")
			}
			checkSDKResponse(t, final, tc.want)
			text, _, summary, args := deltas(evs)
			if text != tc.want.text || summary != tc.want.summary {
				t.Errorf("deltas: text %q summary %q", text, summary)
			}
			for _, item := range final.Output {
				if fc, ok := item.AsAny().(responses.ResponseFunctionToolCall); ok && args[fc.ID] != fc.Arguments {
					t.Errorf("call %s: deltas %q, final %q", fc.ID, args[fc.ID], fc.Arguments)
				}
			}
			if first := evs[0].AsResponseCreated().Response; first.Status != "in_progress" || len(first.Output) != 0 || first.ID != final.ID {
				t.Errorf("response.created: status %q, %d items, id %q (final %q)", first.Status, len(first.Output), first.ID, final.ID)
			}
		})
	}
}

// TestResponsesStreamEnds checks when the final event is written: once the
// finish chunk and the usage chunk are both in, whatever their order, at
// [DONE] without usage, or at End; and that it is written once.
func TestResponsesStreamEnds(t *testing.T) {
	text := chunk(`{"role":"assistant","content":"Hi"}`, "", "")
	stop := chunk(`{}`, `"stop"`, "")
	for _, tc := range []struct {
		name      string
		events    []string
		finalAt   int  // index of the event whose output holds the final event; len(events) for End
		wantUsage bool // the final response has usage
	}{
		{"usage after finish", []string{text, stop, usageChunk, "data: [DONE]\n\n"}, 2, true},
		{"usage in the finish chunk", []string{text, chunk(`{}`, `"stop"`, `,"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}`), "data: [DONE]\n\n"}, 1, true},
		{"usage before finish", []string{text, usageChunk, stop}, 2, true},
		{"no usage, [DONE]", []string{text, stop, "data: [DONE]\n\n"}, 2, false},
		{"no usage, no [DONE]", []string{text, stop}, 2, false},
		{"usage, no [DONE]", []string{text, stop, usageChunk}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewOpenAIToResponsesStream(nil)
			var all []byte
			finals := 0
			for i, e := range tc.events {
				evs := events(t, []byte(e))
				out, err := c.Event(evs[0])
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				all = append(all, out...)
				if strings.Contains(string(out), "event: response.completed\n") {
					finals++
					if i != tc.finalAt {
						t.Errorf("final event at event %d, want %d", i, tc.finalAt)
					}
				}
			}
			if !c.(completer).complete() {
				t.Fatal("not complete after the finish chunk")
			}
			end := c.End()
			all = append(all, end...)
			if strings.Contains(string(end), "event: response.completed\n") {
				finals++
				if tc.finalAt != len(tc.events) {
					t.Errorf("final event at End, want at event %d", tc.finalAt)
				}
			}
			if finals != 1 {
				t.Fatalf("%d final events:\n%s", finals, all)
			}
			_, final := sdkStream(t, all)
			if final == nil {
				t.Fatal("the SDK found no final response")
			}
			if hasUsage := final.JSON.Usage.Valid(); hasUsage != tc.wantUsage || (hasUsage && final.Usage.TotalTokens != 10) {
				t.Errorf("usage %s, want present: %v", final.JSON.Usage.Raw(), tc.wantUsage)
			}
			if final.OutputText() != "Hi" {
				t.Errorf("OutputText() = %q", final.OutputText())
			}
		})
	}
}

func TestResponsesStreamTruncated(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"mid text", chunk(`{"role":"assistant","content":"Hel"}`, "", "")},
		{"mid tool call", chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a"}}]}`, "", "")},
		{"usage without finish", chunk(`{"content":"x"}`, "", "") + usageChunk},
		{"nothing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := io.ReadAll(NewReader(io.NopCloser(strings.NewReader(tc.in)), NewOpenAIToResponsesStream(nil)))
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("err = %v, want ErrTruncated", err)
			}
			if s := string(out); strings.Contains(s, "response.completed") || strings.Contains(s, "response.incomplete") {
				t.Errorf("a cut-off stream was closed:\n%s", s)
			}
			checkSSE(t, out)
		})
	}
}

func TestResponsesStreamError(t *testing.T) {
	in := chunk(`{"role":"assistant","content":"Hi"}`, "", "") +
		`data: {"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}` + "\n\n" +
		chunk(`{"content":" there"}`, "", "")
	out, err := io.ReadAll(NewReader(io.NopCloser(strings.NewReader(in)), NewOpenAIToResponsesStream(nil)))
	var se *StreamError
	if !errors.As(err, &se) || se.Code != "rate_limit_exceeded" || se.Message != "Rate limit reached" || se.From != OpenAI {
		t.Fatalf("err = %v, want a *StreamError rate_limit_exceeded", err)
	}
	evs, final := sdkStream(t, out)
	if final != nil {
		t.Error("a failed stream was completed")
	}
	last := evs[len(evs)-1]
	if last.Type != "error" {
		t.Fatalf("last event %q, want error", last.Type)
	}
	e := last.AsError()
	if e.Code != "rate_limit_exceeded" || e.Message != "Rate limit reached" || e.Param != "" || !e.JSON.Param.Valid() && e.JSON.Param.Raw() != "null" {
		t.Errorf("error event %s", last.RawJSON())
	}
	if strings.Contains(string(out), "there") {
		t.Error("converted past the error")
	}
}

func TestResponsesStreamContent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		wantText    string
		wantRefusal string
		wantTypes   string // the item types of the final output, in order
		wantStatus  responses.ResponseStatus
		wantReason  string
	}{
		{
			name:        "refusal after text",
			in:          chunk(`{"content":"Well"}`, "", "") + chunk(`{"refusal":"I can't"}`, "", "") + chunk(`{"refusal":" help."}`, `"stop"`, ""),
			wantText:    "Well",
			wantRefusal: "I can't help.",
			wantTypes:   "message",
			wantStatus:  "completed",
		},
		{
			name:       "content filter",
			in:         chunk(`{"content":"Par"}`, `"content_filter"`, ""),
			wantText:   "Par",
			wantTypes:  "message",
			wantStatus: "incomplete",
			wantReason: "content_filter",
		},
		{
			name: "interleaved tool calls",
			in: chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":"}},{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":"{\"b\":"}}]}`, "", "") +
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"2}"}},{"index":0,"function":{"arguments":"1}"}}]}`, `"tool_calls"`, ""),
			wantTypes:  "function_call function_call",
			wantStatus: "completed",
		},
		{
			name: "call id and name after the first delta",
			in: chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}`, "", "") +
				chunk(`{"tool_calls":[{"index":0,"id":"c9","type":"function","function":{"name":"h","arguments":"}"}}]}`, `"tool_calls"`, ""),
			wantTypes:  "function_call",
			wantStatus: "completed",
		},
		{
			name:       "reasoning, text, reasoning again",
			in:         chunk(`{"reasoning_content":"a"}`, "", "") + chunk(`{"content":"b"}`, "", "") + chunk(`{"reasoning":"c"}`, "", "") + chunk(`{"content":"d"}`, `"stop"`, ""),
			wantText:   "bd",
			wantTypes:  "reasoning message reasoning message",
			wantStatus: "completed",
		},
		{
			name:       "other choices are left out",
			in:         `data: {"id":"chatcmpl-k1","model":"m","choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"stop"}]}` + "\n\n",
			wantText:   "yes",
			wantTypes:  "message",
			wantStatus: "completed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := io.ReadAll(NewReader(io.NopCloser(strings.NewReader(tc.in)), NewOpenAIToResponsesStream(nil)))
			if err != nil {
				t.Fatal(err)
			}
			evs, final := sdkStream(t, out)
			if final == nil {
				t.Fatal("no final response")
			}
			text, refusal, _, args := deltas(evs)
			if text != tc.wantText || refusal != tc.wantRefusal {
				t.Errorf("text %q refusal %q", text, refusal)
			}
			var types []string
			for _, item := range final.Output {
				types = append(types, item.Type)
				if item.Type == "function_call" {
					if fc := item.AsFunctionCall(); args[fc.ID] != fc.Arguments || !json.Valid([]byte(fc.Arguments)) || fc.CallID == "" || fc.Name == "" {
						t.Errorf("call %s: deltas %q, final %q", fc.CallID, args[fc.ID], fc.Arguments)
					}
				}
			}
			if strings.Join(types, " ") != tc.wantTypes || final.Status != tc.wantStatus || final.IncompleteDetails.Reason != tc.wantReason {
				t.Errorf("items %q status %q reason %q", types, final.Status, final.IncompleteDetails.Reason)
			}
			if final.OutputText() != tc.wantText {
				t.Errorf("OutputText() = %q", final.OutputText())
			}
		})
	}
}

func TestResponsesStreamMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  []byte
		in   string
	}{
		{"not JSON", nil, "data: {not json\n\n"},
		{"tool call resumed after text", nil, chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{"}}]}`, "", "") +
			chunk(`{"content":"x"}`, "", "") + chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}`, "", "")},
		{"malformed request", []byte(`{"input":`), chunk(`{"content":"x"}`, `"stop"`, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := drain(NewReader(io.NopCloser(strings.NewReader(tc.in)), NewOpenAIToResponsesStream(tc.req)), 64)
			var se *StreamError
			if err == nil || err == io.EOF || errors.Is(err, ErrTruncated) || errors.As(err, &se) {
				t.Errorf("err = %v, want a decoding error", err)
			}
		})
	}
}

// TestResponsesStreamAfterDone checks that events after the final one are
// ignored and that End then writes nothing.
func TestResponsesStreamAfterDone(t *testing.T) {
	c := NewOpenAIToResponsesStream(nil)
	for _, e := range []string{chunk(`{"content":"x"}`, `"stop"`, ""), usageChunk} {
		if _, err := c.Event(events(t, []byte(e))[0]); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.Event(events(t, []byte(chunk(`{"content":"late"}`, "", "")))[0])
	if err != nil || out != nil {
		t.Errorf("after the final event: %q, %v", out, err)
	}
	if end := c.End(); end != nil {
		t.Errorf("End after the final event: %q", end)
	}
}

// FuzzResponsesStream checks that the converter never panics and writes
// well-formed SSE whatever the source sends.
func FuzzResponsesStream(f *testing.F) {
	addSeeds(f, ".sse")
	f.Add([]byte(chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}},{"index":0}]}`, "", "")))
	f.Add([]byte(chunk(`{"refusal":"x","content":"y","reasoning_content":"z"}`, `"length"`, "")))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _ := io.ReadAll(NewReader(io.NopCloser(&pieceReader{b: in, n: 11}), NewOpenAIToResponsesStream(nil)))
		checkSSE(t, out)
	})
}

// TestResponsesStreamEmptyAnswer checks that an answer without content or
// calls still has its (empty) message, as the non-streamed response does.
func TestResponsesStreamEmptyAnswer(t *testing.T) {
	in := chunk(`{"role":"assistant","content":""}`, "", "") + chunk(`{}`, `"stop"`, "") + usageChunk
	out, err := io.ReadAll(NewReader(io.NopCloser(strings.NewReader(in)), NewOpenAIToResponsesStream(nil)))
	if err != nil {
		t.Fatal(err)
	}
	evs, final := sdkStream(t, out)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want {
		t.Errorf("events %q\nwant   %q", types, want)
	}
	if final == nil || len(final.Output) != 1 || final.Output[0].Type != "message" || final.OutputText() != "" {
		t.Errorf("final output %s", final.JSON.Output.Raw())
	}
	plain, err := OpenAIResponseToResponses(chatAnswer(`{"role":"assistant","content":""}`, `"stop"`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(plain, &r); err != nil || len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Errorf("the plain response: %s (%v)", plain, err)
	}
}
