package route

import (
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/translate"
)

// read is one read of a stream as the stall watch sees it: what it
// brought and how long it waited on the backend.
type read struct {
	data   string
	waited time.Duration
}

// TestStallRuleBound checks the bound the stall rule sets for the next
// read after a stream's reads so far: the idle timeout until a steady
// event, then max(StallFactor × the longest gap after a steady event,
// StallFloor), within idle, less what was waited since the last event.
func TestStallRuleBound(t *testing.T) {
	const idle = 2 * time.Minute
	chunk := func(w string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + w + `"}}]}` + "\n\n"
	}
	filter := "data: " + azureFilterResults + "\n\n"
	anth := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	textDelta := anth("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)
	tests := []struct {
		name      string
		format    translate.Format
		reads     []read
		want      time.Duration
		wantStall bool
	}{
		{"nothing read yet", translate.OpenAI, nil, idle, false},
		{"only the filter results", translate.OpenAI, []read{{filter, 0}}, StallFloor, true},
		{"quick chunks: the floor", translate.OpenAI, []read{{chunk("a"), 0}, {chunk("b"), 50 * time.Millisecond}, {chunk("c"), 80 * time.Millisecond}}, StallFloor, true},
		{"slow regular chunks raise the bound", translate.OpenAI, []read{{chunk("a"), 0}, {chunk("b"), 3 * time.Second}, {chunk("c"), 3 * time.Second}}, 24 * time.Second, true},
		{"capped by idle", translate.OpenAI, []read{{chunk("a"), 0}, {chunk("b"), 30 * time.Second}}, idle, true},
		{"a comment does not count as an event", translate.OpenAI, []read{{chunk("a"), 0}, {": keep-alive\n\n", 4 * time.Second}}, StallFloor - 4*time.Second, true},
		{"an event split over reads", translate.OpenAI, []read{{chunk("a"), 0}, {`data: {"choices":[{"ind`, 2 * time.Second}, {`ex":0,"delta":{"content":"b"}}]}` + "\n\n", time.Second}}, 24 * time.Second, true},
		{"the wait before the first steady event is not the stream's pace", translate.Anthropic, []read{{anth("message_start", `{"type":"message_start"}`), 0}, {textDelta, 5 * time.Second}}, StallFloor, true},
		{"anthropic before content", translate.Anthropic, []read{{anth("message_start", `{"type":"message_start"}`), 0}}, idle, false},
		{"anthropic text", translate.Anthropic, []read{{anth("message_start", `{"type":"message_start"}`), 0}, {textDelta, 0}}, StallFloor, true},
		{"anthropic thinking", translate.Anthropic, []read{{textDelta, 0}, {anth("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"Hm"}}`), 0}}, idle, false},
		{"anthropic block stop", translate.Anthropic, []read{{textDelta, 0}, {anth("content_block_stop", `{"type":"content_block_stop","index":0}`), 0}}, idle, false},
		{"anthropic without event lines", translate.Anthropic, []read{{`data: {"type": "content_block_delta","delta":{"type":"text_delta","text":"Hi"}}` + "\n\n", 0}}, StallFloor, true},
		{"responses text delta", translate.Responses, []read{{"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n", 0}}, StallFloor, true},
		{"responses item done", translate.Responses, []read{{"event: response.output_text.delta\ndata: {}\n\n", 0}, {"event: response.output_item.done\ndata: {}\n\n", 0}}, idle, false},
		{"responses web search", translate.Responses, []read{{"data: {\"type\":\"response.web_search_call.searching\"}\n\n", 0}}, idle, false},
		{"gemini text", translate.Gemini, []read{{`data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}` + "\r\n\r\n", 0}}, StallFloor, true},
		{"gemini thought", translate.Gemini, []read{{`data: {"candidates":[{"content":{"parts":[{"text":"Hm","thought":true}]}}]}` + "\n\n", 0}}, idle, false},
		{"gemini thought key across reads", translate.Gemini, []read{{`data: {"candidates":[{"content":{"parts":[{"text":"Hm","thou`, 0}, {`ght":true}]}}]}` + "\n\n", 0}}, idle, false},
		{"gemini thought far into a long line", translate.Gemini, []read{{`data: {"candidates":[{"content":{"parts":[{"text":"` + strings.Repeat("x", 2*stallPrefix) + `","thought":true}]}}]}` + "\n\n", 0}}, idle, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStallWatch(tt.format)
			for _, r := range tt.reads {
				s.saw([]byte(r.data), r.waited)
			}
			got, cause := s.limit(idle)
			if got != tt.want || (cause == errStreamStalled) != tt.wantStall {
				t.Fatalf("limit = %v (%v), want %v (stall rule: %v)", got, cause, tt.want, tt.wantStall)
			}
		})
	}
}

// TestStallRuleNeverCutsARegularSlowStream: a stream whose gaps are long
// but regular (up to just under the floor) is never given a bound its next
// gap reaches, however long it runs, keep-alive comments or not.
func TestStallRuleNeverCutsARegularSlowStream(t *testing.T) {
	const idle = 2 * time.Minute
	for _, gap := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second, StallFloor - time.Second} {
		s := newStallWatch(translate.OpenAI)
		s.saw([]byte(`data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n"), 0)
		for i := range 100 {
			// The gap is waited in two reads, the first bringing a comment.
			bound, _ := s.limit(idle)
			if gap/2 >= bound {
				t.Fatalf("gap %v, event %d: bound %v", gap, i, bound)
			}
			s.saw([]byte(": keep-alive\n\n"), gap/2)
			bound, _ = s.limit(idle)
			if gap-gap/2 >= bound {
				t.Fatalf("gap %v, event %d: bound %v after the comment", gap, i, bound)
			}
			s.saw([]byte(`data: {"choices":[{"index":0,"delta":{"content":"b"}}]}`+"\n\n"), gap-gap/2)
		}
	}
}
