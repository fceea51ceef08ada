package route

import (
	"bytes"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// TestGeminiClientUsage: the usage of an answer in Gemini's format (a
// Gemini client's): usageMetadata, thoughts counted as completion and
// reasoning; in a stream, the last chunk's.
func TestGeminiClientUsage(t *testing.T) {
	body := `{"candidates":[],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":4,"thoughtsTokenCount":6,"cachedContentTokenCount":3,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash"}`
	want := Usage{Known: true, Prompt: 10, Completion: 10, Cached: 3, Reasoning: 6, Model: "gemini-2.5-flash"}
	if got := answerUsage(translate.Gemini, []byte(body)); got != want {
		t.Errorf("answer: %+v, want %+v", got, want)
	}
	if got := answerUsage(translate.Gemini, []byte(`{"candidates":[]}`)); got.Known {
		t.Errorf("no usageMetadata: %+v", got)
	}
	stream := `data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1}}` + "\n\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12},"modelVersion":"m"}` + "\n\n"
	var u Usage
	var out bytes.Buffer
	if _, err := out.ReadFrom(usageReader(bytes.NewReader([]byte(stream)), translate.Gemini, &u, false, false, nil)); err != nil {
		t.Fatal(err)
	}
	if want := (Usage{Known: true, Prompt: 10, Completion: 2, Model: "m"}); u != want {
		t.Errorf("stream: %+v, want %+v", u, want)
	}
	if out.String() != stream {
		t.Errorf("the stream changed: %q", out.String())
	}
}

// TestGeminiStreamEnd: a Gemini stream passed through ends with a
// candidate's finishReason (it has no end marker); one cut before it is
// incomplete.
func TestGeminiStreamEnd(t *testing.T) {
	whole := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\n\ndata: {\"candidates\":[{\"finishReason\": \"STOP\"}]}\n\n"
	s := &streamEnd{format: translate.Gemini}
	s.scan([]byte(whole))
	if !s.complete() {
		t.Error("a whole stream is not complete")
	}
	s = &streamEnd{format: translate.Gemini}
	s.scan([]byte(whole[:60]))
	if s.complete() {
		t.Error("a cut stream is complete")
	}
}
