package translate

import (
	"bytes"
	"io"
	"testing"
)

func BenchmarkStreamAnthropicToOpenAI(b *testing.B) {
	benchStream(b, "stream_anthropic_to_openai_tools.in.sse", func() StreamConverter { return NewAnthropicToOpenAIStream(true) })
}

func BenchmarkStreamGeminiToAnthropic(b *testing.B) {
	benchStream(b, "stream_chain_gemini_to_anthropic.in.sse", func() StreamConverter {
		return Chain(NewGeminiToOpenAIStream("m", true), NewOpenAIToAnthropicStream())
	})
}

func benchStream(b *testing.B, name string, conv func() StreamConverter) {
	in := readFile(b, name)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := io.Copy(io.Discard, NewReader(io.NopCloser(bytes.NewReader(in)), conv())); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIRequestToAnthropic(b *testing.B) {
	in := readFile(b, "req_openai_to_anthropic_tools.in.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIRequestToAnthropic(in, "claude", AnthropicOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIRequestToGemini(b *testing.B) {
	in := readFile(b, "req_openai_to_gemini_json_schema.in.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIRequestToGemini(in, GeminiOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkModelOf(b *testing.B) {
	in := readFile(b, "resp_gemini_to_openai_text.in.json") // modelVersion comes last
	b.ReportAllocs()
	for b.Loop() {
		if ModelOf(Gemini, in) == "" {
			b.Fatal("no model")
		}
	}
}
