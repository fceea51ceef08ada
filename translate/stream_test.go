package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// streamGoldens are the stream conversions checked against
// testdata/<name>.in.sse and testdata/<name>.out.sse, byte for byte.
var streamGoldens = []struct {
	name     string
	conv     func() StreamConverter
	wantCode string // a *StreamError with this code ends the stream; "" for a clean end
}{
	{name: "stream_anthropic_to_openai_text", conv: func() StreamConverter { return NewAnthropicToOpenAIStream(true) }},
	{name: "stream_anthropic_to_openai_tools", conv: func() StreamConverter { return NewAnthropicToOpenAIStream(false) }},
	{name: "stream_gemini_to_openai_text", conv: func() StreamConverter { return NewGeminiToOpenAIStream("gemini-flash-latest", true) }},
	{name: "stream_gemini_to_openai_tools", conv: func() StreamConverter { return NewGeminiToOpenAIStream("gemini-flash-latest", false) }},
	{name: "stream_gemini_to_openai_candidates", conv: func() StreamConverter { return NewGeminiToOpenAIStream("gemini-flash-latest", true) }},
	{name: "stream_openai_to_anthropic_text", conv: NewOpenAIToAnthropicStream},
	{name: "stream_openai_to_anthropic_tools", conv: NewOpenAIToAnthropicStream},
	{name: "stream_chain_gemini_to_anthropic", conv: func() StreamConverter {
		return Chain(NewGeminiToOpenAIStream("gemini-flash-latest", true), NewOpenAIToAnthropicStream())
	}},
	{name: "anth_stream_reasoning_to_anthropic", conv: func() StreamConverter {
		return NewOpenAIToAnthropicStreamWith(AnthropicStreamOptions{InputTokens: 150})
	}},
	{name: "anth_stream_thinking_to_openai", conv: func() StreamConverter { return NewAnthropicToOpenAIStream(true) }},
	{name: "stream_anthropic_error", conv: func() StreamConverter { return NewAnthropicToOpenAIStream(true) }, wantCode: "overloaded_error"},
}

// sources are the ways a stream can arrive: whole, in odd-sized pieces, one
// byte at a time, one event per read.
var sources = []struct {
	name string
	wrap func([]byte) io.Reader
}{
	{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"7 bytes", func(b []byte) io.Reader { return &pieceReader{b: b, n: 7} }},
	{"13 bytes", func(b []byte) io.Reader { return &pieceReader{b: b, n: 13} }},
	{"1 byte", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"per event", func(b []byte) io.Reader { return &eventReader{events: splitEvents(b)} }},
}

func TestGoldenStreams(t *testing.T) {
	for _, tc := range streamGoldens {
		t.Run(tc.name, func(t *testing.T) {
			in := readFile(t, tc.name+".in.sse")
			golden := filepath.Join("testdata", tc.name+".out.sse")
			var want []byte
			if !*update {
				want = readFile(t, tc.name+".out.sse")
			}
			for _, src := range sources {
				got, err := drain(NewReader(io.NopCloser(src.wrap(in)), tc.conv()), 5)
				if tc.wantCode == "" {
					if err != io.EOF {
						t.Fatalf("%s: stream ended with %v, want io.EOF", src.name, err)
					}
				} else {
					var se *StreamError
					if !errors.As(err, &se) || se.Code != tc.wantCode {
						t.Fatalf("%s: stream ended with %v, want a *StreamError %s", src.name, err, tc.wantCode)
					}
				}
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: output differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", src.name, golden, got, want)
				}
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conv     StreamConverter
		ev       Event
		wantOut  string
		wantCode string
	}{
		{
			name:     "gemini error chunk",
			conv:     NewGeminiToOpenAIStream("m", true),
			ev:       Event{Data: []byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)},
			wantOut:  `data: {"error":{"message":"The model is overloaded. Please try again later.","type":"server_error","param":null,"code":"overloaded"}}` + "\n\n",
			wantCode: "UNAVAILABLE",
		},
		{
			name:     "openai error chunk",
			conv:     NewOpenAIToAnthropicStream(),
			ev:       Event{Data: []byte(`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)},
			wantOut:  "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limit reached\"}}\n\n",
			wantCode: "rate_limit_exceeded",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.conv.Event(tc.ev)
			var se *StreamError
			if !errors.As(err, &se) || se.Code != tc.wantCode {
				t.Fatalf("err = %v, want a *StreamError %s", err, tc.wantCode)
			}
			if !strings.Contains(se.Error(), tc.wantCode) || !strings.Contains(se.Error(), se.Message) {
				t.Errorf("Error() = %q", se.Error())
			}
			if string(out) != tc.wantOut {
				t.Errorf("got  %q\nwant %q", out, tc.wantOut)
			}
		})
	}
}

func TestStreamMalformedEvent(t *testing.T) {
	for name, c := range map[string]StreamConverter{
		"anthropic": NewAnthropicToOpenAIStream(true),
		"gemini":    NewGeminiToOpenAIStream("m", true),
		"openai":    NewOpenAIToAnthropicStream(),
	} {
		_, err := drain(NewReader(io.NopCloser(strings.NewReader("data: {not json\n\n")), c), 64)
		var se *StreamError
		if err == nil || err == io.EOF || errors.Is(err, ErrTruncated) || errors.As(err, &se) {
			t.Errorf("%s: err = %v, want a decoding error", name, err)
		}
	}
}

// TestOpenAIToAnthropicToolsEndedWithStop checks that a turn of tool calls
// that an OpenAI-compatible server ends with "stop" reaches an Anthropic
// client as tool_use, and that a stream ending after its finish_reason
// without [DONE] is still closed.
func TestOpenAIToAnthropicToolsEndedWithStop(t *testing.T) {
	in := `data: {"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	out, err := drain(NewReader(io.NopCloser(strings.NewReader(in)), NewOpenAIToAnthropicStream()), 64)
	if err != io.EOF {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"stop_reason":"tool_use"`) || !strings.HasSuffix(string(out), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("got:\n%s", out)
	}
}

// TestOpenAIToAnthropicInputEstimate checks that message_start reports the
// engine's estimate, and that without usage from the source message_delta
// leaves it standing (no input_tokens), while with usage it carries the
// real count.
func TestOpenAIToAnthropicInputEstimate(t *testing.T) {
	const text = `data: {"id":"chatcmpl-e","model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}` + "\n\n"
	const usage = `data: {"id":"chatcmpl-e","model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}` + "\n\n"
	for _, tc := range []struct {
		name      string
		in        string
		estimate  int
		wantStart string
		wantDelta string
	}{
		{"no usage", text + "data: [DONE]\n\n", 321, `"usage":{"input_tokens":321,"output_tokens":0,`, `"usage":{"output_tokens":0}}`},
		{"usage", text + usage + "data: [DONE]\n\n", 321, `"usage":{"input_tokens":321,"output_tokens":0,`, `"usage":{"input_tokens":9,"output_tokens":1,`},
		{"negative estimate", text + "data: [DONE]\n\n", -5, `"usage":{"input_tokens":0,"output_tokens":0,`, `"usage":{"output_tokens":0}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := drain(NewReader(io.NopCloser(strings.NewReader(tc.in)), NewOpenAIToAnthropicStreamWith(AnthropicStreamOptions{InputTokens: tc.estimate})), 64)
			if err != io.EOF {
				t.Fatal(err)
			}
			var start, delta string
			for _, ev := range events(t, out) {
				switch ev.Name {
				case "message_start":
					start = string(ev.Data)
				case "message_delta":
					delta = string(ev.Data)
				}
			}
			if !strings.Contains(start, tc.wantStart) || !strings.Contains(delta, tc.wantDelta) {
				t.Errorf("message_start %s\nmessage_delta %s", start, delta)
			}
		})
	}
}

// TestOpenAIToAnthropicReasoningBlocks checks the block sequence when
// reasoning, text and a tool call interleave: each run is its own block, in
// order, and reasoning after text opens a new thinking block.
func TestOpenAIToAnthropicReasoningBlocks(t *testing.T) {
	chunk := func(delta string) string {
		return `data: {"id":"chatcmpl-b","model":"m","choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
	}
	in := chunk(`{"reasoning":"plan"}`) + chunk(`{"content":"A"}`) + chunk(`{"reasoning_content":"more"}`) +
		chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`) +
		`data: {"id":"chatcmpl-b","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	out, err := drain(NewReader(io.NopCloser(strings.NewReader(in)), NewOpenAIToAnthropicStream()), 64)
	if err != io.EOF {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range events(t, out) {
		if ev.Name == "content_block_start" {
			var e struct {
				ContentBlock struct {
					Type string `json:"type"`
				} `json:"content_block"`
			}
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, e.ContentBlock.Type)
		}
	}
	if got := strings.Join(kinds, " "); got != "thinking text thinking tool_use" {
		t.Errorf("blocks %q", got)
	}
}
