package translate

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

const rsHi = `"model":"m","input":"hi"`

func TestResponsesRequestUnsupported(t *testing.T) {
	fn := `{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}`
	user := func(part string) string {
		return `{"model":"m","input":[{"role":"user","content":[` + part + `]}]}`
	}
	for _, tc := range []struct {
		name    string
		body    string
		feature string
	}{
		{"previous_response_id", `{` + rsHi + `,"previous_response_id":"resp_1"}`, "previous_response_id"},
		{"conversation id", `{` + rsHi + `,"conversation":"conv_1"}`, "conversation"},
		{"conversation object", `{` + rsHi + `,"conversation":{"id":"conv_1"}}`, "conversation"},
		{"background", `{` + rsHi + `,"background":true}`, "background: true"},
		{"include", `{` + rsHi + `,"include":["reasoning.encrypted_content"]}`, `include "reasoning.encrypted_content"`},
		{"include logprobs", `{` + rsHi + `,"include":["message.output_text.logprobs"]}`, `include "message.output_text.logprobs"`},
		{"prompt template", `{"model":"m","prompt":{"id":"pmpt_1","variables":{"x":"y"}}}`, "prompt templates"},
		{"truncation auto", `{` + rsHi + `,"truncation":"auto"}`, `truncation "auto"`},
		{"top_logprobs", `{` + rsHi + `,"top_logprobs":3}`, "top_logprobs"},
		{"unknown member", `{` + rsHi + `,"context_management":[{"type":"compaction"}]}`, `parameter "context_management"`},
		{"unknown member sorted first", `{` + rsHi + `,"zeta":1,"moderation":{}}`, `parameter "moderation"`},
		{"reasoning member", `{` + rsHi + `,"reasoning":{"effort":"low","mode":"fast"}}`, `reasoning.mode`},
		{"text member", `{` + rsHi + `,"text":{"format":{"type":"text"},"tone":"dry"}}`, `text.tone`},
		{"text format grammar", `{` + rsHi + `,"text":{"format":{"type":"grammar"}}}`, `text.format of type "grammar"`},
		{"web_search tool", `{` + rsHi + `,"tools":[{"type":"web_search"}]}`, `tool type "web_search"`},
		{"web_search_preview tool", `{` + rsHi + `,"tools":[{"type":"web_search_preview"}]}`, `tool type "web_search_preview"`},
		{"file_search tool", `{` + rsHi + `,"tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, `tool type "file_search"`},
		{"computer tool", `{` + rsHi + `,"tools":[{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"}]}`, `tool type "computer_use_preview"`},
		{"code_interpreter tool", `{` + rsHi + `,"tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`, `tool type "code_interpreter"`},
		{"mcp tool", `{` + rsHi + `,"tools":[{"type":"mcp","server_label":"x","server_url":"https://example.com/mcp"}]}`, `tool type "mcp"`},
		{"image_generation tool", `{` + rsHi + `,"tools":[{"type":"image_generation"}]}`, `tool type "image_generation"`},
		{"custom tool", `{` + rsHi + `,"tools":[{"type":"custom","name":"x"}]}`, `tool type "custom"`},
		{"function tool member", `{` + rsHi + `,"tools":[{"type":"function","name":"f","parameters":{},"defer_loading":true}]}`, `function tool member "defer_loading"`},
		{"tool_choice allowed_tools", `{` + rsHi + `,"tools":[` + fn + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`, `tool_choice of type "allowed_tools"`},
		{"tool_choice hosted", `{` + rsHi + `,"tool_choice":{"type":"file_search"}}`, `tool_choice of type "file_search"`},
		{"tool_choice string", `{` + rsHi + `,"tool_choice":"any"}`, `tool_choice "any"`},
		{"image by file_id", user(`{"type":"input_image","file_id":"file-1","detail":"auto"}`), "input_image by file_id"},
		{"image detail", user(`{"type":"input_image","image_url":"https://example.com/a.png","detail":"original"}`), `image detail "original"`},
		{"file by file_id", user(`{"type":"input_file","file_id":"file-1"}`), "input_file by file_id"},
		{"file by url", user(`{"type":"input_file","file_url":"https://example.com/a.pdf"}`), "input_file by file_url"},
		{"input_audio part", user(`{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}`), `content of type "input_audio"`},
		{"image in system message", `{"model":"m","input":[{"role":"system","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`, "input_image in system content"},
		{"file in assistant message", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_file","file_data":"JVBER"}]}]}`, "input_file in assistant content"},
		{"refusal in user message", `{"model":"m","input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, "refusal in user content"},
		{"encrypted reasoning", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"}]}`, "encrypted_content"},
		{"item_reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, "item_reference"},
		{"bare id is an item_reference", `{"model":"m","input":[{"id":"msg_1"}]}`, "item_reference"},
		{"web_search_call item", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"x"}}]}`, `input item of type "web_search_call"`},
		{"computer_call_output item", `{"model":"m","input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"data:image/png;base64,AA=="}}]}`, `input item of type "computer_call_output"`},
		{"image in function output", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`, `function_call_output content of type "input_image"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ResponsesRequestToOpenAI([]byte(tc.body))
			var u *UnsupportedError
			if !errors.As(err, &u) {
				t.Fatalf("err = %v (output %s), want an *UnsupportedError", err, out)
			}
			if u.Target != OpenAI || !strings.Contains(u.Feature, tc.feature) {
				t.Errorf("got %s %q, want %s %q", u.Target, u.Feature, OpenAI, tc.feature)
			}
		})
	}
}

func TestResponsesRequestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
	}{
		{"not JSON", `{"model":`},
		{"not an object", `["model"]`},
		{"null body", `null`},
		{"input of the wrong type", `{"model":"m","input":5}`},
		{"no input", `{"model":"m"}`},
		{"empty input list", `{"model":"m","input":[]}`},
		{"item not an object", `{"model":"m","input":[7]}`},
		{"unknown role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`},
		{"message without content", `{"model":"m","input":[{"role":"user"}]}`},
		{"content of the wrong type", `{"model":"m","input":[{"role":"user","content":{"text":"x"}}]}`},
		{"input_text without text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}`},
		{"image without url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","detail":"auto"}]}]}`},
		{"file without data", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf"}]}]}`},
		{"function_call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`},
		{"function_call_output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`},
		{"function output of the wrong type", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":{"x":1}}]}`},
		{"tool without name", `{` + rsHi + `,"tools":[{"type":"function","parameters":{}}]}`},
		{"tool not an object", `{` + rsHi + `,"tools":["f"]}`},
		{"tool_choice function without name", `{` + rsHi + `,"tool_choice":{"type":"function"}}`},
		{"json_schema without schema", `{` + rsHi + `,"text":{"format":{"type":"json_schema","name":"x"}}}`},
		{"temperature string", `{` + rsHi + `,"temperature":"hot"}`},
		{"reasoning not an object", `{` + rsHi + `,"reasoning":"high"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ResponsesRequestToOpenAI([]byte(tc.body))
			var u *UnsupportedError
			if err == nil || errors.As(err, &u) {
				t.Fatalf("err = %v (output %s), want a malformed-body error", err, out)
			}
		})
	}
}

func TestResponsesRequestMapping(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want string
	}{
		{
			name: "nulls are absent",
			body: `{"model":"m","input":"hi","instructions":null,"tools":null,"tool_choice":null,"text":null,"reasoning":null,"previous_response_id":null,"conversation":null,"prompt":null,"include":null,"top_logprobs":null,"truncation":null,"background":null,"temperature":null,"metadata":null,"user":null}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			name: "ignored members",
			body: `{"model":"m","input":"hi","store":true,"service_tier":"flex","prompt_cache_key":"k","prompt_cache_retention":"24h","safety_identifier":"u","stream_options":{"include_obfuscation":false},"max_tool_calls":3,"truncation":"disabled","background":false,"include":[],"top_logprobs":0}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			name: "tool_choice function and required",
			body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f","description":"d","strict":false}],"tool_choice":{"type":"function","name":"f"}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","description":"d","strict":false}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		},
		{
			name: "tool_choice none",
			body: `{"model":"m","input":"hi","tool_choice":"none"}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"none"}`,
		},
		{
			name: "json_object and text format text",
			body: `{"model":"m","input":"hi","text":{"format":{"type":"json_object"}}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`,
		},
		{
			name: "format text is the default",
			body: `{"model":"m","input":"hi","text":{"format":{"type":"text"},"verbosity":null}}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			name: "summary-only reasoning items are dropped, items without type are messages",
			body: `{"model":"m","input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":null},{"role":"assistant","content":"a"},{"type":"reasoning","id":"rs_2","summary":[],"content":[{"type":"reasoning_text","text":"raw"}]},{"role":"user","content":[{"type":"input_text","text":"q2"},{"type":"input_text","text":"q3"}]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"q2"},{"type":"text","text":"q3"}]}]}`,
		},
		{
			name: "a call after a user message starts an assistant message; empty instructions are left out",
			body: `{"model":"m","instructions":"","input":[{"role":"user","content":"q"},{"role":"assistant","content":""},{"type":"function_call","call_id":"c1","name":"f"},{"type":"function_call_output","call_id":"c1","output":null}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","content":"","tool_call_id":"c1"}]}`,
		},
		{
			name: "temperature 0 and a zero limit are kept",
			body: `{"model":"m","input":"hi","temperature":0,"top_p":0.5,"max_output_tokens":0,"parallel_tool_calls":true}`,
			want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0,"top_p":0.5,"max_completion_tokens":0,"parallel_tool_calls":true}`,
		},
		{
			name: "easy message with type and empty content list",
			body: `{"model":"m","input":[{"type":"message","role":"user","content":[]}]}`,
			want: `{"model":"m","messages":[{"role":"user","content":""}]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResponsesRequestToOpenAI([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
		})
	}
}

// TestSDKReadsResponsesRequests checks the golden inputs are Responses
// requests the SDK reads, and that our chat requests survive a round trip
// through the SDK's chat params whole.
func TestSDKReadsResponsesRequests(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "responses_req_*.in.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no request goldens: %v", err)
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".in.json")
		t.Run(name, func(t *testing.T) {
			var in responses.ResponseNewParams
			if err := json.Unmarshal(readFile(t, name+".in.json"), &in); err != nil {
				t.Fatalf("the SDK does not read our input: %v", err)
			}
			if in.Model == "" {
				t.Errorf("the SDK read no model")
			}
			want := readFile(t, name+".out.json")
			var p openai.ChatCompletionNewParams
			if err := json.Unmarshal(want, &p); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.Unmarshal(want, &m)
			delete(m, "stream") // chosen by the method, not a params field
			msgs, _ := m["messages"].([]any)
			for _, msg := range msgs {
				if mm, _ := msg.(map[string]any); mm["content"] == nil {
					delete(mm, "content") // the SDK writes a null content as absent
				}
			}
			want, _ = json.Marshal(m)
			if !sameJSON(t, got, want) {
				t.Errorf("the SDK read\n%s\nas\n%s", want, got)
			}
		})
	}
}

// FuzzResponsesRequest checks that ResponsesRequestToOpenAI never panics and
// that what it returns is JSON.
func FuzzResponsesRequest(f *testing.F) {
	addSeeds(f, ".json")
	f.Add([]byte(`{"input":[{"type":"function_call"},{"role":"user","content":[{"type":"input_image"}]}]}`))
	f.Add([]byte(`{"input":[{"id":"x"},{"type":"reasoning","encrypted_content":""}],"tools":[{}],"text":{"format":{}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := ResponsesRequestToOpenAI(in)
		if err == nil && !json.Valid(out) {
			t.Fatalf("output is not JSON: %s", out)
		}
	})
}
