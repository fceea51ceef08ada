package route

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// azureFilterResults is the first event of an Azure OpenAI stream: the
// prompt's content filter results, before the model has produced
// anything.
const azureFilterResults = `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`

func TestContentLine(t *testing.T) {
	tests := []struct {
		name    string
		format  translate.Format
		line    string
		content bool
	}{
		{"azure prompt_filter_results", translate.OpenAI, "data: " + azureFilterResults + "\n", false},
		{"role-only delta", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}` + "\n", false},
		{"role with empty content and null refusal", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null,"content_filter_results":{}}]}`, false},
		{"empty choices with usage", translate.OpenAI, `data: {"choices":[],"usage":{"total_tokens":3}}`, false},
		{"empty delta", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{}}]}`, false},
		{"content", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}`, true},
		{"role and content", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`, true},
		{"tool call", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":""}}]}}]}`, true},
		{"reasoning", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{"reasoning_content":"Hm"}}]}`, true},
		{"finish reason", translate.OpenAI, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, true},
		{"completion text", translate.OpenAI, `data: {"choices":[{"index":0,"text":"Hi"}]}`, true},
		{"done", translate.OpenAI, "data: [DONE]\r\n", true},
		{"error event", translate.OpenAI, `data: {"error":{"message":"overloaded"}}`, true},
		{"no choices field", translate.OpenAI, `data: {"object":"something.else"}`, true},
		{"unreadable", translate.OpenAI, `data: {"choices":[`, true},
		{"comment", translate.OpenAI, ": keep-alive\n", false},
		{"event line", translate.Anthropic, "event: content_block_delta\n", false},
		{"blank", translate.OpenAI, "\n", false},
		{"message_start", translate.Anthropic, `data: {"type":"message_start","message":{"id":"msg_1","content":[]}}`, false},
		{"ping", translate.Anthropic, `data: {"type": "ping"}`, false},
		{"content_block_start", translate.Anthropic, `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, false},
		{"text delta", translate.Anthropic, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, true},
		{"thinking delta", translate.Anthropic, `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm"}}`, true},
		{"anthropic error", translate.Anthropic, `data: {"type":"error","error":{"type":"overloaded_error"}}`, true},
		{"response.created", translate.Responses, `data: {"type":"response.created","response":{"status":"in_progress","output":[]}}`, false},
		{"response.in_progress", translate.Responses, `data: {"type":"response.in_progress","response":{}}`, false},
		{"output_item.added", translate.Responses, `data: {"type":"response.output_item.added","item":{"type":"message","content":[]}}`, false},
		{"content_part.added", translate.Responses, `data: {"type":"response.content_part.added","part":{"type":"output_text","text":""}}`, false},
		{"web search searching", translate.Responses, `data: {"type":"response.web_search_call.searching","item_id":"ws_1"}`, false},
		{"output_text.delta", translate.Responses, `data: {"type":"response.output_text.delta","delta":"Hi"}`, true},
		{"response.completed", translate.Responses, `data: {"type":"response.completed","response":{}}`, true},
		{"response.failed", translate.Responses, `data: {"type":"response.failed","response":{}}`, true},
		{"gemini text", translate.Gemini, `data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"}}]}`, true},
		{"gemini empty part", translate.Gemini, `data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"}}]}`, false},
		{"gemini usage only", translate.Gemini, `data: {"usageMetadata":{"promptTokenCount":3}}`, false},
		{"gemini finish", translate.Gemini, `data: {"candidates":[{"content":{"parts":[]},"finishReason":"STOP"}]}`, true},
		{"gemini blocked prompt", translate.Gemini, `data: {"promptFeedback":{"blockReason":"SAFETY"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contentLine(tt.format, []byte(tt.line)); got != tt.content {
				t.Fatalf("contentLine(%s, %q) = %v, want %v", tt.format, tt.line, got, tt.content)
			}
		})
	}
}

// TestReadToContentHoldsEventsThatCommitNothing: the events before the
// first content are held back and given back in order, with the content
// and the rest, whatever the reads' sizes.
func TestReadToContentHoldsEventsThatCommitNothing(t *testing.T) {
	long := strings.Repeat("x", 3*firstEventBuffer)
	filter := "data: " + azureFilterResults + "\n\n"
	role := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
	content := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + long + "\"}}]}\n\n"
	rest := "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	tests := []struct {
		name, preamble, stream string
	}{
		{"content first", "", content + rest},
		{"filter results and role held", ": keep-alive\n\n", filter + role + content + rest},
		{"anthropic", "", "event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"" + long + "\"}}\n\n"},
		{"ends with done and no newline", "", filter + "data: [DONE]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := translate.OpenAI
			if strings.Contains(tt.stream, "message_start") {
				f = translate.Anthropic
			}
			for _, src := range []io.Reader{strings.NewReader(tt.preamble + tt.stream), &oneByte{r: strings.NewReader(tt.preamble + tt.stream)}} {
				r, err := readToContent(src, f, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tt.stream {
					t.Fatalf("got %.80q… (%d bytes), want %.80q… (%d bytes)", got, len(got), tt.stream, len(tt.stream))
				}
			}
		})
	}
}

// TestReadToContentFailsWithoutContent: a stream whose only events are
// Azure's prompt_filter_results (and a role-only delta) before it ends or
// breaks has answered nothing: readToContent fails, so the attempt fails
// over, where it used to pass the stream on at its first event.
func TestReadToContentFailsWithoutContent(t *testing.T) {
	filter := "data: " + azureFilterResults + "\n\n"
	role := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
	broken := errors.New("connection reset")
	tests := []struct {
		name string
		src  io.Reader
		want error
	}{
		{"filter results then end", strings.NewReader(filter), io.EOF},
		{"filter results and role then end", strings.NewReader(filter + role), io.EOF},
		{"filter results then reset", io.MultiReader(strings.NewReader(filter), &failing{err: broken}), broken},
		{"role then reset mid-line", io.MultiReader(strings.NewReader(filter+"data: {\"choi"), &failing{err: broken}), broken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := readToContent(tt.src, translate.OpenAI, nil); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestReadToContentHoldsABoundedAmount: a stream that sends more than
// maxHeld of events that commit nothing is passed on at that point, every
// byte kept.
func TestReadToContentHoldsABoundedAmount(t *testing.T) {
	role := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
	many := strings.Repeat(role, maxHeld/len(role)+2)
	stream := many + "data: [DONE]\n\n"
	src := &counting{r: strings.NewReader(stream + strings.Repeat(role, 1000))}
	r, err := readToContent(src, translate.OpenAI, nil)
	if err != nil {
		t.Fatal(err)
	}
	if src.n > maxHeld+2*firstEventBuffer {
		t.Fatalf("read %d bytes before passing the stream on, bound %d", src.n, maxHeld)
	}
	got, _ := io.ReadAll(r)
	if !strings.HasPrefix(string(got), stream) {
		t.Fatalf("stream not kept whole: %d bytes", len(got))
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
