package route

import (
	"testing"
)

// openAIChunks are the first events of OpenAI-format streams, as servers
// send them and as they could, for openAIContentScan against the decoder.
var openAIChunks = []string{
	`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","refusal":null,"content":null}}]}`,
	`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
	`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"","index":0,"finish_reason":null}]}`,
	`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"Hi","index":0}]}`,
	`{"error":{"message":"overloaded","type":"server_error"}}`,
	`{"error":null,"choices":[{"delta":{"role":"assistant"}}]}`,
	`{"choices":null}`,
	`{}`,
	`null`,
	`[]`,
	`"text"`,
	`{"choices":{"delta":{}}}`,
	`{"choices":[null,{"delta":null}]}`,
	`{"choices":[1]}`,
	`{"choices":[{"delta":"x"}]}`,
	`{"choices":[{"delta":{"content":"a","content":""}}]}`,
	`{"choices":[{"delta":{"role":"assistant"}},{"delta":{"content":"b"}}]}`,
	`{"Choices":[{"Delta":{"content":"x"}}]}`,
	`{"CHOICES":[{"DELTA":{"Role":"assistant"}}]}`,
	`{"choices":[{"delta":{"role":"assistant"}}],"choices":[{"delta":{"content":"x"}}]}`,
	`{"ch\u006fices":[{"delta":{"content":"x"}}]}`,
	`{"choices":[{"delta":{"r\u006fle":"assistant"}}]}`,
	`{"choices":[{"delta":{"content":[ ]}}]}`,
	`{"choices":[{"delta":{"content":" "}}]}`,
	`{"choices":[{"finish_reason":""}]}`,
	`{"choices":[{"text":{}}]}`,
	`{"choices":[] } trailing`,
	`{"choices":[{"delta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}}]}`,
	` { "choices" : [ { "delta" : { "role" : "assistant" } } ] } `,
}

func TestOpenAIContentScanAgreesWithTheDecoder(t *testing.T) {
	for _, c := range openAIChunks {
		if got, want := openAIContent([]byte(c)), openAIContentDecoded([]byte(c)); got != want {
			t.Errorf("%s: content %v, the decoder says %v", c, got, want)
		}
	}
}

func FuzzOpenAIContent(f *testing.F) {
	for _, c := range openAIChunks {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := openAIContent(data), openAIContentDecoded(data); got != want && string(data) != "[DONE]" {
			t.Errorf("%q: content %v, the decoder says %v", data, got, want)
		}
	})
}

func TestOpenAIContentScanAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	for _, c := range openAIChunks[:7] {
		data := []byte(c)
		if n := testing.AllocsPerRun(100, func() { openAIContent(data) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", c, n)
		}
	}
}
