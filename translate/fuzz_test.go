package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addSeeds adds every testdata file with the given suffix to the corpus.
func addSeeds(f *testing.F, suffix string) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*"+suffix))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzStreams checks that no converter panics, whatever the source sends,
// and that whatever they write is well-formed SSE whose data is JSON (or
// [DONE]).
func FuzzStreams(f *testing.F) {
	addSeeds(f, ".sse")
	f.Add([]byte("data: {\"candidates\":[{\"index\":-1}]}\n\n"))
	f.Add([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"x\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{}\"}},{\"index\":0}]}}]}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		convs := []StreamConverter{
			NewAnthropicToOpenAIStream(true),
			NewGeminiToOpenAIStream("m", true),
			NewOpenAIToAnthropicStream(),
			Chain(NewGeminiToOpenAIStream("m", true), NewOpenAIToAnthropicStream()),
			Chain(NewAnthropicToOpenAIStream(true), NewOpenAIToAnthropicStream()),
		}
		for _, c := range convs {
			out, _ := io.ReadAll(NewReader(io.NopCloser(&pieceReader{b: in, n: 11}), c))
			checkSSE(t, out)
		}
	})
}

// checkSSE fails unless out is a sequence of complete events with JSON data.
func checkSSE(t *testing.T, out []byte) {
	t.Helper()
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		t.Fatalf("output does not end an event: %q", out)
	}
	for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
		if ev == "" {
			continue
		}
		for _, line := range strings.Split(ev, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				if data != "[DONE]" && !json.Valid([]byte(data)) {
					t.Fatalf("data is not JSON: %q", data)
				}
			} else if !strings.HasPrefix(line, "event: ") {
				t.Fatalf("unexpected line %q", line)
			}
		}
	}
}

// FuzzConverters checks that the body converters and the classification
// helpers never panic and that what they return is JSON.
func FuzzConverters(f *testing.F) {
	addSeeds(f, ".json")
	f.Add([]byte(gemini429))
	f.Add([]byte(anthropic529))
	f.Add([]byte(azure400))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, conv := range []func([]byte) ([]byte, error){
			toAnthropic, toGemini, AnthropicRequestToOpenAI, AnthropicResponseToOpenAI,
			OpenAIResponseToAnthropic, func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "m") },
		} {
			if out, err := conv(in); err == nil && !json.Valid(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
		}
		for _, from := range []Format{OpenAI, Anthropic, Gemini} {
			if out := ErrorToOpenAI(from, 500, in); !json.Valid(out) {
				t.Fatalf("ErrorToOpenAI: %s", out)
			}
			if out := ErrorToAnthropic(from, 200, in); !json.Valid(out) {
				t.Fatalf("ErrorToAnthropic: %s", out)
			}
			ErrorCode(from, in)
			RetryDelay(from, in)
			ModelOf(from, in)
		}
	})
}
