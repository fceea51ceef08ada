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
	"time"
)

// geminiInGoldens are the Gemini inbound conversions checked against
// testdata/<name>.in.json and .out.json.
var geminiInGoldens = []struct {
	name string
	conv func([]byte) ([]byte, error)
}{
	{"gemini_in_req_full", func(b []byte) ([]byte, error) {
		return GeminiRequestToOpenAI(b, GeminiInboundOptions{Model: "chat-prod"})
	}},
	{"gemini_in_req_json_schema", func(b []byte) ([]byte, error) {
		return GeminiRequestToOpenAI(b, GeminiInboundOptions{Model: "chat-prod", Stream: true})
	}},
	{"gemini_in_resp_tools", func(b []byte) ([]byte, error) {
		return OpenAIResponseToGemini(b, []byte(`{"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`))
	}},
}

func TestGoldenGeminiInbound(t *testing.T) {
	for _, tc := range geminiInGoldens {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.conv(readFile(t, tc.name+".in.json"))
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			golden := filepath.Join("testdata", tc.name+".out.json")
			if *update {
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				if err := os.WriteFile(golden, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := readFile(t, tc.name+".out.json"); !sameJSON(t, got, want) {
				t.Errorf("output differs from %s (run go test -update to accept):\ngot:  %s\nwant: %s", golden, got, compactJSON(want))
			}
		})
	}
}

// TestGoldenGeminiInboundStreams: OpenAI chunk streams into Gemini's
// streamGenerateContent events, however the source arrives.
func TestGoldenGeminiInboundStreams(t *testing.T) {
	for _, name := range []string{"gemini_in_stream_text", "gemini_in_stream_tools"} {
		t.Run(name, func(t *testing.T) {
			in := readFile(t, name+".in.sse")
			golden := filepath.Join("testdata", name+".out.sse")
			for _, src := range sources {
				got, err := drain(NewReader(io.NopCloser(src.wrap(in)), NewOpenAIToGeminiStream(GeminiStreamOptions{})), 5)
				if err != io.EOF {
					t.Fatalf("%s: ended with %v", src.name, err)
				}
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if want := readFile(t, name+".out.sse"); !bytes.Equal(got, want) {
					t.Fatalf("%s: differs from %s:\ngot:\n%s\nwant:\n%s", src.name, golden, got, want)
				}
			}
		})
	}
}

func TestGeminiInboundStreamErrorAndCutOff(t *testing.T) {
	errStream := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":\"overloaded\"}}\n\n"
	got, err := drain(NewReader(io.NopCloser(strings.NewReader(errStream)), NewOpenAIToGeminiStream(GeminiStreamOptions{})), 5)
	var se *StreamError
	if !errors.As(err, &se) || se.Code != "overloaded" {
		t.Fatalf("ended with %v", err)
	}
	if !strings.Contains(string(got), `"status":"UNAVAILABLE"`) || !strings.Contains(string(got), `"code":529`) && !strings.Contains(string(got), `"code":503`) {
		t.Errorf("error event: %s", got)
	}
	// A source cut off before its finish_reason is not closed as whole.
	cut := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
	got, err = drain(NewReader(io.NopCloser(strings.NewReader(cut)), NewOpenAIToGeminiStream(GeminiStreamOptions{})), 5)
	if !errors.Is(err, ErrTruncated) || strings.Contains(string(got), "finishReason") {
		t.Errorf("cut off: %v %s", err, got)
	}
}

// TestGeminiRequestToOpenAIRefuses: what the canonical format cannot
// carry is an *UnsupportedError naming it, never dropped; a malformed
// body is another error.
func TestGeminiRequestToOpenAIRefuses(t *testing.T) {
	for _, c := range []struct{ name, body, feature string }{
		{"safety settings", `{"contents":[{"parts":[{"text":"x"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`, `"safetySettings"`},
		{"cached content", `{"contents":[{"parts":[{"text":"x"}]}],"cachedContent":"cachedContents/1"}`, `"cachedContent"`},
		{"google search", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"googleSearch":{}}]}`, `"googleSearch"`},
		{"code execution", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"codeExecution":{}}]}`, `"codeExecution"`},
		{"image output", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseModalities":["TEXT","IMAGE"]}}`, `"IMAGE"`},
		{"logprobs", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseLogprobs":true}}`, `responseLogprobs`},
		{"speech", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"speechConfig":{}}}`, `speechConfig`},
		{"enum output", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"text/x.enum"}}`, `text/x.enum`},
		{"file by URI", `{"contents":[{"parts":[{"fileData":{"mimeType":"image/png","fileUri":"https://x/files/1"}}]}]}`, `"fileData"`},
		{"audio", `{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":"AAAA"}}]}]}`, `audio/wav`},
		{"executable code", `{"contents":[{"parts":[{"executableCode":{"language":"PYTHON","code":"1"}}]}]}`, `"executableCode"`},
		{"validated mode", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],"toolConfig":{"functionCallingConfig":{"mode":"VALIDATED"}}}`, `VALIDATED`},
		{"some of several functions", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"},{"name":"g"},{"name":"h"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f","g"]}}}`, `allowedFunctionNames`},
		{"schema keyword", `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT","oneOf":[]}}]}]}`, `"oneOf"`},
		{"thinking level", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"EXTREME"}}}`, `EXTREME`},
		{"snake_case member", `{"contents":[{"parts":[{"text":"x"}]}],"system_instruction":{"parts":[{"text":"y"}]}}`, `"system_instruction"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := GeminiRequestToOpenAI([]byte(c.body), GeminiInboundOptions{Model: "m"})
			var ue *UnsupportedError
			if !errors.As(err, &ue) || !strings.Contains(ue.Feature, strings.Trim(c.feature, `"`)) {
				t.Errorf("got %v, want an UnsupportedError about %s", err, c.feature)
			}
		})
	}
	for _, c := range []struct{ name, body string }{
		{"not JSON", `{`},
		{"no contents", `{"contents":[]}`},
		{"bad role", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`},
		{"an unanswered response", `{"contents":[{"parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`},
		{"a schema without JSON", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseSchema":{"type":"STRING"}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := GeminiRequestToOpenAI([]byte(c.body), GeminiInboundOptions{})
			var ue *UnsupportedError
			if err == nil || errors.As(err, &ue) {
				t.Errorf("got %v, want a malformed-body error", err)
			}
		})
	}
}

// TestGeminiThinkingConfigToEffort: thinkingBudget in the bands of
// effortOfBudget, 0 none, -1 (dynamic) medium; thinkingLevel by name.
func TestGeminiThinkingConfigToEffort(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"thinkingBudget":0}`:        "none",
		`{"thinkingBudget":-1}`:       "medium",
		`{"thinkingBudget":1024}`:     "low",
		`{"thinkingBudget":8192}`:     "medium",
		`{"thinkingBudget":24576}`:    "high",
		`{"thinkingLevel":"low"}`:     "low",
		`{"thinkingLevel":"MINIMAL"}`: "minimal",
		`{"includeThoughts":true}`:    "",
	} {
		out, err := GeminiRequestToOpenAI([]byte(`{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"thinkingConfig":`+cfg+`}}`), GeminiInboundOptions{})
		if err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		var r struct {
			ReasoningEffort string `json:"reasoning_effort"`
		}
		json.Unmarshal(out, &r)
		if r.ReasoningEffort != want {
			t.Errorf("%s: reasoning_effort %q, want %q", cfg, r.ReasoningEffort, want)
		}
	}
}

// TestGeminiFunctionResponsesPairedByIDOrName: a functionResponse answers
// the call with its id when it names one, else the first unanswered call
// of its name.
func TestGeminiFunctionResponsesPairedByIDOrName(t *testing.T) {
	body := `{"contents":[
	  {"role":"user","parts":[{"text":"x"}]},
	  {"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1}}},{"functionCall":{"name":"f","args":{"a":2}}},{"functionCall":{"id":"own","name":"g"}}]},
	  {"role":"user","parts":[{"functionResponse":{"id":"own","name":"g","response":{"result":"G"}}},{"functionResponse":{"name":"f","response":{"v":1}}},{"functionResponse":{"name":"f","response":{"output":"two"}}}]}
	]}`
	out, err := GeminiRequestToOpenAI([]byte(body), GeminiInboundOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Messages) != 5 {
		t.Fatalf("%v %s", err, out)
	}
	calls := r.Messages[1].ToolCalls
	if len(calls) != 3 || calls[2].ID != "own" || calls[0].ID == calls[1].ID {
		t.Fatalf("calls %+v", calls)
	}
	want := []struct{ id, content string }{{"own", "G"}, {calls[0].ID, `{"v":1}`}, {calls[1].ID, "two"}}
	for i, w := range want {
		m := r.Messages[2+i]
		if m.Role != "tool" || m.ToolCallID != w.id || m.Content != w.content {
			t.Errorf("tool message %d: %+v, want %+v", i, m, w)
		}
	}
}

func TestOpenAIResponseToGeminiLeavesOutThoughtsUnlessAsked(t *testing.T) {
	body := `{"id":"chatcmpl-x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"A","reasoning_content":"R"},"finish_reason":"stop"}]}`
	out, err := OpenAIResponseToGemini([]byte(body), []byte(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"candidates":[{"content":{"role":"model","parts":[{"text":"A"}]},"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":0,"candidatesTokenCount":0,"totalTokenCount":0},"modelVersion":"m","responseId":"x"}`)
}

func TestErrorToGemini(t *testing.T) {
	for _, c := range []struct {
		name   string
		from   Format
		status int
		body   string
		want   string
	}{
		{"openai rate limit", OpenAI, 429, `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`,
			`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"rate_limit_exceeded","domain":"switchover"}]}}`},
		{"anthropic overloaded 529", Anthropic, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			`{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"overloaded_error","domain":"switchover"}]}}`},
		{"not a known shape", OpenAI, 401, `no`, `{"error":{"code":401,"message":"no","status":"UNAUTHENTICATED"}}`},
		{"unauthenticated", OpenAI, 403, `{"error":{"message":"m","type":"permission_error","code":null}}`,
			`{"error":{"code":403,"message":"m","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"permission_error","domain":"switchover"}]}}`},
		{"timeout", OpenAI, 504, `{"error":{"message":"late","type":"server_error","code":null}}`,
			`{"error":{"code":504,"message":"late","status":"DEADLINE_EXCEEDED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"server_error","domain":"switchover"}]}}`},
		{"gemini passes", Gemini, 400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`},
	} {
		t.Run(c.name, func(t *testing.T) { assertJSON(t, ErrorToGemini(c.from, c.status, []byte(c.body)), c.want) })
	}
	withRetry := WithGeminiRetryDelay([]byte(`{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`), 11500*time.Millisecond)
	if d := RetryDelay(Gemini, withRetry); d != 12*time.Second {
		t.Errorf("RetryInfo %v in %s", d, withRetry)
	}
	if again := WithGeminiRetryDelay(withRetry, time.Second); !bytes.Equal(again, withRetry) {
		t.Errorf("a second RetryInfo: %s", again)
	}
}

func TestGeminiEmbedToOpenAI(t *testing.T) {
	out, err := GeminiEmbedToOpenAI([]byte(`{"requests":[{"model":"models/e","content":{"parts":[{"text":"a"},{"text":"b"}]},"outputDimensionality":8},{"content":{"parts":[{"text":"c"}]},"outputDimensionality":8}]}`), "emb", true)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"model":"emb","input":["a b","c"],"dimensions":8}`)
	for _, bad := range []string{
		`{"content":{"parts":[{"text":"a"}]},"taskType":"RETRIEVAL_DOCUMENT"}`,
		`{"content":{"parts":[{"text":"a"}]},"title":"T"}`,
		`{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA"}}]}}`,
	} {
		var ue *UnsupportedError
		if _, err := GeminiEmbedToOpenAI([]byte(bad), "emb", false); !errors.As(err, &ue) {
			t.Errorf("%s: %v, want refused", bad, err)
		}
	}
	resp := `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0.3]},{"object":"embedding","index":0,"embedding":[0.1,0.2]}]}`
	got, err := OpenAIEmbeddingToGemini([]byte(resp), true)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, got, `{"embeddings":[{"values":[0.1,0.2]},{"values":[0.3]}]}`)
	if _, err := OpenAIEmbeddingToGemini([]byte(resp), false); err == nil {
		t.Error("two embeddings for one content: no error")
	}
}

// FuzzGeminiInbound checks that the Gemini inbound converters never
// panic: a request converts to JSON or fails, and an OpenAI stream of
// any bytes becomes well-formed SSE whose data is JSON.
func FuzzGeminiInbound(f *testing.F) {
	addSeeds(f, ".json")
	addSeeds(f, ".sse")
	f.Fuzz(func(t *testing.T, in []byte) {
		if out, err := GeminiRequestToOpenAI(in, GeminiInboundOptions{Model: "m", Stream: true}); err == nil && !json.Valid(out) {
			t.Fatalf("not JSON: %s", out)
		}
		if out, err := OpenAIResponseToGemini(in, in); err == nil && !json.Valid(out) {
			t.Fatalf("not JSON: %s", out)
		}
		if out, err := GeminiEmbedToOpenAI(in, "m", true); err == nil && !json.Valid(out) {
			t.Fatalf("not JSON: %s", out)
		}
		out, _ := io.ReadAll(NewReader(io.NopCloser(&pieceReader{b: in, n: 11}), NewOpenAIToGeminiStream(GeminiStreamOptions{IncludeThoughts: true})))
		checkSSE(t, out)
	})
}
