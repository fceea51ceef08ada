package route

import (
	"bytes"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// TestWithUsageAsked: the option goes in as the body's first member; a
// body that sets stream_options keeps its own.
func TestWithUsageAsked(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"m","stream":true}`: `{"stream_options":{"include_usage":true},"model":"m","stream":true}`,
		` { }`:                        ` {"stream_options":{"include_usage":true} }`,
		`{"stream_options":{},"a":1}`: `{"stream_options":{},"a":1}`,
	} {
		if got, _ := withUsageAsked([]byte(in)); string(got) != want {
			t.Errorf("withUsageAsked(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAnswerUsageOfEachFormat reads each client format's usage.
func TestAnswerUsageOfEachFormat(t *testing.T) {
	tests := []struct {
		f    translate.Format
		body string
		want Usage
	}{
		{translate.OpenAI, `{"model":"gpt-4o","usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			Usage{Known: true, Prompt: 10, Completion: 5, Cached: 4, Reasoning: 2, Model: "gpt-4o"}},
		{translate.Anthropic, `{"model":"claude","usage":{"input_tokens":3,"output_tokens":7,"cache_read_input_tokens":20,"cache_creation_input_tokens":5}}`,
			Usage{Known: true, Prompt: 28, Completion: 7, Cached: 20, Model: "claude"}},
		{translate.Responses, `{"model":"gpt-5","usage":{"input_tokens":9,"output_tokens":8,"input_tokens_details":{"cached_tokens":1},"output_tokens_details":{"reasoning_tokens":6}}}`,
			Usage{Known: true, Prompt: 9, Completion: 8, Cached: 1, Reasoning: 6, Model: "gpt-5"}},
		{translate.OpenAI, `{"error":{"message":"no"}}`, Usage{}},
	}
	for _, tc := range tests {
		if got := answerUsage(tc.f, []byte(tc.body)); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.f, tc.body, got, tc.want)
		}
	}
}

// decodedUsage is decodeUsage behind answerUsage's first check, which
// peekUsage must agree with.
func decodedUsage(f translate.Format, body []byte) Usage {
	if !bytes.Contains(body, []byte(`"usage"`)) {
		return Usage{}
	}
	return decodeUsage(f, body)
}

func TestAnswerUsageAgreesWithTheDecoder(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-4o","choices":[{"message":{"content":"\"usage\": {}"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`,
		`{"choices":[{"usage":{"prompt_tokens":99}}],"model":"m","usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`,
		`{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":5}}`,
		`{"Usage":{"prompt_tokens":4,"completion_tokens":1}}`,
		`{"model":"a\u00e9","usage":{"input_tokens":10,"output_tokens":2}}`,
		`{"mod\u0065l":"x","usage":{"prompt_tokens":3}}`,
		`{"usage":null}`,
		`{"usage":[1]}`,
		`[{"usage":{"prompt_tokens":1}}]`,
		`{"usage":{"prompt_tokens":1}`,
		` { "model" : "spaced" , "usage" : { "prompt_tokens" : 2 , "completion_tokens" : 2 } } `,
		// The usage object itself, read without the decoder (scanUsage)
		// where it can say for sure, and by it where not.
		`{"usage":{"prompt_tokens":null,"completion_tokens":2}}`,
		`{"usage":{"prompt_tokens":5,"prompt_tokens":null}}`,
		`{"usage":{"Prompt_Tokens":3}}`,
		`{"usage":{"prompt_tokens":1.0}}`,
		`{"usage":{"prompt_tokens":1e2}}`,
		`{"usage":{"prompt_tokens":"3"}}`,
		`{"usage":{"prompt_tokens":01}}`,
		`{"usage":{"prompt_tokens":-2}}`,
		`{"usage":{"prompt_tokens":-}}`,
		`{"usage":{"prompt_tokens":99999999999999999999}}`,
		`{"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808}}`,
		`{"usage":{"prompt_tokens_details":{"cached_tokens":2},"prompt_tokens_details":{"x":1}}}`,
		`{"usage":{"prompt_tokens_details":5}}`,
		`{"usage":{"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":null}}}`,
		`{"usage":{"completion_tokens_details":{"Reasoning_Tokens":4}}}`,
		`{"usage":{"completion_tokens_details":{"reasoning_tokens":4,"audio_tokens":1}}}`,
		`{"usage":{"total_tokens":tru,"prompt_tokens":1}}`,
		`{"usage":{"prompt_tokens":1,}}`,
		`{"usage":{"prompt_\u0074okens":4}}`,
		`{"usage":{"prompt_tokenſ":4}}`,
		`{"usage":{"other":{"prompt_tokens":7},"list":[1,{"a":"b"}],"s":"x\"y","prompt_tokens":3}}`,
		`{"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":1,"input_tokens_details":{"cached_tokens":3},"output_tokens_details":{"reasoning_tokens":1}}}`,
		`{"usage":{}}`,
		`{"usage":{ }}`,
	} {
		for _, f := range []translate.Format{translate.OpenAI, translate.Anthropic, translate.Responses} {
			if got, want := answerUsage(f, []byte(body)), decodedUsage(f, []byte(body)); got != want {
				t.Errorf("%s as %v: %+v, the decoder %+v", body, f, got, want)
			}
		}
	}
}

// TestAnswerUsageKnownModel: a model that is the known string is taken
// as it, not made again; one with escapes, or another, is read.
func TestAnswerUsageKnownModel(t *testing.T) {
	tests := []struct{ body, known, want string }{
		{`{"model":"gpt-4o","usage":{"prompt_tokens":1}}`, "gpt-4o", "gpt-4o"},
		{`{"model":"gpt-4o","usage":{"prompt_tokens":1}}`, "gpt-4o-mini", "gpt-4o"},
		{`{"model":"gpt\u002d4o","usage":{"prompt_tokens":1}}`, "gpt\\u002d4o", "gpt-4o"},
		{`{"model":"gpt-4o","usage":{"prompt_tokens":1}}`, "", "gpt-4o"},
	}
	for _, tt := range tests {
		u := answerUsageKnown(translate.OpenAI, []byte(tt.body), tt.known)
		if u.Model != tt.want || u.Prompt != 1 {
			t.Errorf("%s with %q known: model %q, prompt %d; want %q, 1", tt.body, tt.known, u.Model, u.Prompt, tt.want)
		}
	}
	if raceEnabled {
		return
	}
	body := []byte(tests[0].body)
	if n := testing.AllocsPerRun(100, func() { answerUsageKnown(translate.OpenAI, body, "gpt-4o") }); n != 0 {
		t.Errorf("answerUsageKnown with the model known made %v allocations, want 0", n)
	}
}

// FuzzScanUsage: whatever the usage object, what scanUsage reads (when it
// says it can) is what the decoder reads, and the decoder takes it too.
func FuzzScanUsage(f *testing.F) {
	f.Add(`{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":1}}`)
	f.Add(`{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":3,"input_tokens_details":{"cached_tokens":1}}`)
	f.Add(`{"prompt_tokens":null,"Completion_tokens":-0,"x":[1,{"y":"z"}]}`)
	f.Fuzz(func(t *testing.T, obj string) {
		if obj == "" || obj[0] != '{' {
			return // answerUsage offers objects alone
		}
		var got usageBody
		if !scanUsage([]byte(obj), &got) {
			return
		}
		want, ok := decodeUsageObject([]byte(obj))
		if !ok || got != want {
			t.Fatalf("%s: scanUsage read %+v, the decoder %+v (ok %v)", obj, got, want, ok)
		}
	})
}

// TestAnswerUsageAllocatesTheModelAlone guards the per-request cost of
// reading a plain answer's usage: the model's string, nothing else (the
// decoder took five allocations).
func TestAnswerUsageAllocatesTheModelAlone(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":15,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`)
	want := Usage{Known: true, Prompt: 12, Completion: 15, Cached: 2, Reasoning: 1, Model: "gpt-4o-2024-08-06"}
	if got := answerUsage(translate.OpenAI, body); got != want {
		t.Fatalf("answerUsage = %+v, want %+v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { answerUsage(translate.OpenAI, body) }); n > 1 {
		t.Fatalf("answerUsage made %v allocations, want at most 1", n)
	}
}

func BenchmarkDecodedUsage(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help you today? This is a longer answer."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":15,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`)
	b.ReportAllocs()
	for b.Loop() {
		decodedUsage(translate.OpenAI, body)
	}
}

func BenchmarkAnswerUsage(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help you today? This is a longer answer."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":15,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`)
	b.ReportAllocs()
	for b.Loop() {
		answerUsage(translate.OpenAI, body)
	}
}

// TestTranslatedAnthropicStartIsAnEstimate: a stream translated into
// Anthropic's format carries the gateway's own input estimate in
// message_start; it was recorded as the upstream's count (and the
// answer's text no longer kept). It is Estimated, and the text kept,
// until a message_delta brings the upstream's input_tokens.
func TestTranslatedAnthropicStartIsAnEstimate(t *testing.T) {
	start := `data: {"type":"message_start","message":{"model":"gpt-4o","usage":{"input_tokens":12,"output_tokens":0}}}` + "\n\n"
	text := `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}` + "\n\n"
	tests := []struct {
		name, delta string
		guessed     bool
		want        Usage
		kept        string
	}{
		{"upstream reported nothing", `{"output_tokens":0}`, true,
			Usage{Known: true, Estimated: true, Prompt: 12, Model: "gpt-4o"}, "hello"},
		{"upstream reported usage", `{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":2}`, true,
			Usage{Known: true, Prompt: 9, Completion: 3, Cached: 2, Model: "gpt-4o"}, "hello"},
		{"Anthropic's own stream", `{"output_tokens":3}`, false,
			Usage{Known: true, Prompt: 12, Completion: 3, Model: "gpt-4o"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u Usage
			var s said
			in := start + text + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + tt.delta + "}\n\n"
			r := usageReader(bytes.NewReader([]byte(in)), translate.Anthropic, &u, false, tt.guessed, &s)
			var out bytes.Buffer
			if _, err := out.ReadFrom(r); err != nil {
				t.Fatal(err)
			}
			if u != tt.want {
				t.Errorf("usage %+v, want %+v", u, tt.want)
			}
			if got := s.text(); got != tt.kept {
				t.Errorf("kept %q, want %q", got, tt.kept)
			}
		})
	}
}
