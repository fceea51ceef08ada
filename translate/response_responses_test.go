package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
)

// chatAnswer is a chat.completion with one choice of the given message and
// finish_reason, and usage.
func chatAnswer(message, finish string) []byte {
	return []byte(`{"id":"chatcmpl-t1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + message +
		`,"logprobs":null,"finish_reason":` + finish + `}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`)
}

func TestOpenAIResponseToResponses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       []byte
		req        string
		wantStatus string
		wantReason string // incomplete_details.reason
		wantOutput string // the output items, as JSON
	}{
		{
			name: "stop", body: chatAnswer(`{"role":"assistant","content":"hi"}`, `"stop"`), wantStatus: "completed",
			wantOutput: `[{"id":"msg_` + shortHash("resp_t1", "msg_", "0") + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"hi"}]}]`,
		},
		{
			name: "null finish_reason", body: chatAnswer(`{"role":"assistant","content":"hi"}`, `null`), wantStatus: "completed",
			wantOutput: `[{"id":"msg_` + shortHash("resp_t1", "msg_", "0") + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"hi"}]}]`,
		},
		{
			name: "content_filter", body: chatAnswer(`{"role":"assistant","content":"I"}`, `"content_filter"`), wantStatus: "incomplete", wantReason: "content_filter",
			wantOutput: `[{"id":"msg_` + shortHash("resp_t1", "msg_", "0") + `","type":"message","status":"incomplete","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"I"}]}]`,
		},
		{
			name: "refusal", body: chatAnswer(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, `"stop"`), wantStatus: "completed",
			wantOutput: `[{"id":"msg_` + shortHash("resp_t1", "msg_", "0") + `","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}]`,
		},
		{
			name: "empty answer is one empty text", body: chatAnswer(`{"role":"assistant","content":null}`, `"stop"`), wantStatus: "completed",
			wantOutput: `[{"id":"msg_` + shortHash("resp_t1", "msg_", "0") + `","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":""}]}]`,
		},
		{
			name: "reasoning named reasoning, cut off while thinking", body: chatAnswer(`{"role":"assistant","content":"","reasoning":"hmm"}`, `"length"`),
			wantStatus: "incomplete", wantReason: "max_output_tokens",
			wantOutput: `[{"id":"rs_` + shortHash("resp_t1", "rs_", "0") + `","type":"reasoning","summary":[{"type":"summary_text","text":"hmm"}]}]`,
		},
		{
			name: "empty arguments are an empty object", body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}`, `"tool_calls"`),
			wantStatus: "completed",
			wantOutput: `[{"id":"fc_` + shortHash("resp_t1", "fc_", "0") + `","type":"function_call","status":"completed","arguments":"{}","call_id":"c1","name":"f"}]`,
		},
		{
			name: "tool calls cut off: the last call is incomplete", body: chatAnswer(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\":"}}]}`, `"length"`),
			wantStatus: "incomplete", wantReason: "max_output_tokens",
			wantOutput: `[{"id":"fc_` + shortHash("resp_t1", "fc_", "0") + `","type":"function_call","status":"completed","arguments":"{}","call_id":"c1","name":"f"},` +
				`{"id":"fc_` + shortHash("resp_t1", "fc_", "1") + `","type":"function_call","status":"incomplete","arguments":"{\"a\":","call_id":"c2","name":"g"}]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := OpenAIResponseToResponses(tc.body, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				ID                string          `json:"id"`
				Status            string          `json:"status"`
				IncompleteDetails *rsIncomplete   `json:"incomplete_details"`
				Output            json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != "resp_t1" || got.Status != tc.wantStatus {
				t.Errorf("id %q status %q, want resp_t1 %q", got.ID, got.Status, tc.wantStatus)
			}
			if reason := ""; got.IncompleteDetails != nil {
				if reason = got.IncompleteDetails.Reason; reason != tc.wantReason {
					t.Errorf("incomplete reason %q, want %q", reason, tc.wantReason)
				}
			} else if tc.wantReason != "" {
				t.Errorf("no incomplete_details, want reason %q", tc.wantReason)
			}
			assertJSON(t, got.Output, tc.wantOutput)
		})
	}
}

// TestOpenAIResponseToResponsesDefaults checks the echoed fields of a
// request that set none of them, and of no request at all.
func TestOpenAIResponseToResponsesDefaults(t *testing.T) {
	const want = `{"id":"resp_t1","object":"response","created_at":1,"completed_at":1,"status":"completed","background":false,"error":null,
		"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"m","output":[],
		"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{"effort":null,"summary":null},
		"safety_identifier":null,"store":true,"temperature":1,"presence_penalty":0,"frequency_penalty":0,
		"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"top_logprobs":0,"service_tier":"default",
		"truncation":"disabled","usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,
		"output_tokens_details":{"reasoning_tokens":0},"total_tokens":8},"user":null,"metadata":{}}`
	for name, req := range map[string][]byte{"nil": nil, "minimal": []byte(`{"model":"asked","input":"hi"}`)} {
		t.Run(name, func(t *testing.T) {
			out, err := OpenAIResponseToResponses(chatAnswer(`{"role":"assistant","content":"hi"}`, `"stop"`), req)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal(out, &m)
			m["output"] = json.RawMessage("[]")
			out, _ = json.Marshal(m)
			assertJSON(t, out, want)
		})
	}
}

func TestOpenAIResponseToResponsesIDs(t *testing.T) {
	body := []byte(`{"id":"","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}]}`)
	a, err := OpenAIResponseToResponses(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := OpenAIResponseToResponses(body, nil)
	other, _ := OpenAIResponseToResponses([]byte(strings.Replace(string(body), `"x"`, `"y"`, 1)), nil)
	id := func(b []byte) string {
		var r struct {
			ID    string          `json:"id"`
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(b, &r)
		if string(r.Usage) != "null" {
			t.Errorf("usage %s, want null for a body without usage", r.Usage)
		}
		return r.ID
	}
	if !strings.HasPrefix(id(a), "resp_") || id(a) != id(b) || id(a) == id(other) {
		t.Errorf("ids %q %q %q: want resp_ ids, stable for one body, different for another", id(a), id(b), id(other))
	}
}

func TestOpenAIResponseToResponsesErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body, req string
	}{
		{"not JSON", `{"id":`, ``},
		{"no choices", `{"id":"chatcmpl-1","choices":[]}`, ``},
		{"request not JSON", string(chatAnswer(`{"role":"assistant","content":"hi"}`, `"stop"`)), `{"input":`},
		{"request of the wrong shape", string(chatAnswer(`{"role":"assistant","content":"hi"}`, `"stop"`)), `{"tools":{"a":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req []byte
			if tc.req != "" {
				req = []byte(tc.req)
			}
			out, err := OpenAIResponseToResponses([]byte(tc.body), req)
			var u *UnsupportedError
			if err == nil || errors.As(err, &u) {
				t.Errorf("err = %v (output %s), want a malformed-body error", err, out)
			}
		})
	}
}

// TestSDKReadsResponsesObjects decodes the golden responses with the SDK's
// Response type and checks what a client would read from them.
func TestSDKReadsResponsesObjects(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wantStatus  responses.ResponseStatus
		wantReason  string
		wantText    string
		wantCalls   []string // call_id name arguments
		wantSummary string
		wantUsage   [5]int64 // input, cached, output, reasoning, total
		wantInstr   string
		wantTemp    float64
	}{
		{name: "responses_resp_text", wantStatus: "completed", wantText: "Sunlight scatters off air molecules, & blue light scatters most <strongly>.",
			wantUsage: [5]int64{31, 0, 84, 64, 115}, wantInstr: "You are a terse assistant. Answer in one sentence.", wantTemp: 0.2},
		{name: "responses_resp_tools", wantStatus: "completed", wantText: "Checking both cities.",
			wantCalls: []string{`call_Ab12 get_weather {"city":"Paris"}`, `call_Cd34 get_weather {"city":"London"}`},
			wantUsage: [5]int64{212, 128, 46, 0, 258}, wantTemp: 1},
		{name: "responses_resp_length", wantStatus: "incomplete", wantReason: "max_output_tokens", wantText: `{"name":"Science fair","date":"Fri`,
			wantUsage: [5]int64{90, 0, 16, 0, 106}, wantTemp: 1},
		{name: "responses_resp_reasoning", wantStatus: "completed", wantText: "391 is 17 × 23, so it is not prime.",
			wantSummary: "Try small primes: 391 / 17 = 23. So 391 = 17 * 23.", wantUsage: [5]int64{44, 0, 120, 96, 164}, wantTemp: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r responses.Response
			if err := json.Unmarshal(readFile(t, tc.name+".out.json"), &r); err != nil {
				t.Fatal(err)
			}
			checkSDKResponse(t, &r, sdkWant{tc.wantStatus, tc.wantReason, tc.wantText, tc.wantCalls, tc.wantSummary, tc.wantUsage})
			if r.Instructions.OfString != tc.wantInstr || r.Temperature != tc.wantTemp || r.TopP != 1 {
				t.Errorf("instructions %q temperature %v top_p %v", r.Instructions.OfString, r.Temperature, r.TopP)
			}
			if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") {
				t.Errorf("object %q id %q", r.Object, r.ID)
			}
		})
	}
}

type sdkWant struct {
	status  responses.ResponseStatus
	reason  string
	text    string
	calls   []string
	summary string
	usage   [5]int64
}

// checkSDKResponse checks a Response the SDK decoded.
func checkSDKResponse(t *testing.T, r *responses.Response, w sdkWant) {
	t.Helper()
	if r.Status != w.status || r.IncompleteDetails.Reason != w.reason {
		t.Errorf("status %q reason %q, want %q %q", r.Status, r.IncompleteDetails.Reason, w.status, w.reason)
	}
	if got := r.OutputText(); got != w.text {
		t.Errorf("OutputText() = %q, want %q", got, w.text)
	}
	var calls []string
	var summary string
	for _, item := range r.Output {
		switch v := item.AsAny().(type) {
		case responses.ResponseFunctionToolCall:
			calls = append(calls, v.CallID+" "+v.Name+" "+v.Arguments)
			if !strings.HasPrefix(v.ID, "fc_") {
				t.Errorf("function call id %q", v.ID)
			}
		case responses.ResponseReasoningItem:
			for _, s := range v.Summary {
				summary += s.Text
			}
		case responses.ResponseOutputMessage:
			if v.Role != "assistant" || !strings.HasPrefix(v.ID, "msg_") {
				t.Errorf("message role %q id %q", v.Role, v.ID)
			}
		default:
			t.Errorf("output item of type %T", v)
		}
	}
	if strings.Join(calls, "|") != strings.Join(w.calls, "|") || summary != w.summary {
		t.Errorf("calls %q summary %q, want %q %q", calls, summary, w.calls, w.summary)
	}
	u := r.Usage
	if got := [5]int64{u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens, u.TotalTokens}; got != w.usage {
		t.Errorf("usage %v, want %v", got, w.usage)
	}
}

// FuzzOpenAIResponseToResponses checks that the response converter never
// panics and that what it returns is JSON, with and without a request.
func FuzzOpenAIResponseToResponses(f *testing.F) {
	addSeeds(f, ".json")
	f.Add(chatAnswer(`{"role":"assistant","content":null,"reasoning_content":"r","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{"}}]}`, `"length"`))
	req := readFile(f, "responses_req_tools.in.json")
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, r := range [][]byte{nil, req, in} {
			if out, err := OpenAIResponseToResponses(in, r); err == nil && !json.Valid(out) {
				t.Fatalf("output is not JSON: %s", out)
			}
		}
	})
}
