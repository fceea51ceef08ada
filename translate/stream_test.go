package translate

import (
	"bytes"
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
