package translate

import (
	"errors"
	"strings"
	"testing"
)

func toAnthropic(b []byte) ([]byte, error) {
	return OpenAIRequestToAnthropic(b, "claude-sonnet-4-5", AnthropicOptions{})
}

func toGemini(b []byte) ([]byte, error) { return OpenAIRequestToGemini(b, GeminiOptions{}) }

const hi = `"messages":[{"role":"user","content":"hi"}]`

func TestUnsupported(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}]`
	for _, tc := range []struct {
		name    string
		conv    func([]byte) ([]byte, error)
		body    string
		target  Format
		feature string
	}{
		{"anthropic n", toAnthropic, `{` + hi + `,"n":2}`, Anthropic, "n > 1"},
		{"anthropic logprobs", toAnthropic, `{` + hi + `,"logprobs":true}`, Anthropic, "logprobs"},
		{"anthropic top_logprobs", toAnthropic, `{` + hi + `,"top_logprobs":2}`, Anthropic, "top_logprobs"},
		{"anthropic logit_bias", toAnthropic, `{` + hi + `,"logit_bias":{"50256":-100}}`, Anthropic, "logit_bias"},
		{"anthropic presence_penalty", toAnthropic, `{` + hi + `,"presence_penalty":0.5}`, Anthropic, "presence_penalty"},
		{"anthropic frequency_penalty", toAnthropic, `{` + hi + `,"frequency_penalty":-1}`, Anthropic, "frequency_penalty"},
		{"anthropic seed", toAnthropic, `{` + hi + `,"seed":1}`, Anthropic, "seed"},
		{"anthropic temperature", toAnthropic, `{` + hi + `,"temperature":1.2}`, Anthropic, "temperature > 1"},
		{"anthropic json_object", toAnthropic, `{` + hi + `,"response_format":{"type":"json_object"}}`, Anthropic, "json_object response_format"},
		{"anthropic json_schema", toAnthropic, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`, Anthropic, "json_schema response_format"},
		{"anthropic audio", toAnthropic, `{` + hi + `,"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}}`, Anthropic, "audio output"},
		{"anthropic modalities", toAnthropic, `{` + hi + `,"modalities":["text","audio"]}`, Anthropic, "audio output"},
		{"anthropic unknown parameter", toAnthropic, `{` + hi + `,"reasoning_effort":"low","web_search_options":{}}`, Anthropic, `parameter "web_search_options"`},
		{"anthropic unknown reasoning_effort", toAnthropic, `{` + hi + `,"reasoning_effort":"max"}`, Anthropic, `reasoning_effort "max"`},
		{"anthropic thinking with temperature", toAnthropic, `{` + hi + `,"reasoning_effort":"low","temperature":0.5}`, Anthropic, "temperature other than 1 with reasoning_effort"},
		{"anthropic thinking with top_k", toAnthropic, `{` + hi + `,"reasoning_effort":"medium","top_k":40}`, Anthropic, "top_k with reasoning_effort"},
		{"anthropic thinking with top_p", toAnthropic, `{` + hi + `,"reasoning_effort":"high","top_p":0.9}`, Anthropic, "top_p below 0.95 with reasoning_effort"},
		{"anthropic thinking with tool_choice required", toAnthropic, `{` + hi + `,` + tools + `,"tool_choice":"required","reasoning_effort":"low"}`, Anthropic, "forced tool use (tool_choice required) with reasoning_effort"},
		{"anthropic thinking with a forced function", toAnthropic, `{` + hi + `,` + tools + `,"tool_choice":{"type":"function","function":{"name":"f"}},"reasoning_effort":"low"}`, Anthropic, "forced tool use (tool_choice function) with reasoning_effort"},
		{"anthropic input audio", toAnthropic, `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`, Anthropic, `user content of type "input_audio"`},
		{"anthropic bmp", toAnthropic, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]}]}`, Anthropic, `image type "image/bmp"`},
		{"anthropic file_id", toAnthropic, `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, Anthropic, "file content by file_id"},
		{"anthropic custom tool", toAnthropic, `{` + hi + `,"tools":[{"type":"custom","custom":{"name":"x"}}]}`, Anthropic, `tool type "custom"`},
		{"anthropic allowed_tools", toAnthropic, `{` + hi + `,` + tools + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`, Anthropic, `tool_choice of type "allowed_tools"`},
		{"anthropic legacy function_call", toAnthropic, `{"messages":[{"role":"assistant","function_call":{"name":"f","arguments":"{}"}}]}`, Anthropic, "legacy function_call"},
		{"anthropic legacy functions", toAnthropic, `{` + hi + `,"functions":[{"name":"f"}]}`, Anthropic, `parameter "functions"`},
		{"gemini http image", toGemini, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`, Gemini, "an image by URL"},
		{"gemini logprobs", toGemini, `{` + hi + `,"logprobs":true,"top_logprobs":3}`, Gemini, "logprobs"},
		{"gemini logit_bias", toGemini, `{` + hi + `,"logit_bias":{"1":1}}`, Gemini, "logit_bias"},
		{"gemini audio", toGemini, `{` + hi + `,"audio":{"voice":"alloy","format":"wav"}}`, Gemini, "audio output"},
		{"gemini parallel_tool_calls", toGemini, `{` + hi + `,` + tools + `,"parallel_tool_calls":false}`, Gemini, "parallel_tool_calls: false"},
		{"gemini six stops", toGemini, `{` + hi + `,"stop":["a","b","c","d","e","f"]}`, Gemini, "more than 5 stop sequences"},
		{"gemini oneOf", toGemini, `{` + hi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}}}]}`, Gemini, `JSON Schema keyword "oneOf" (at tools[0].function.parameters.properties.x)`},
		{"gemini map", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"m","schema":{"type":"object","additionalProperties":{"type":"string"}}}}}`, Gemini, "additionalProperties other than false"},
		{"gemini recursive ref", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}}}}`, Gemini, `recursive JSON Schema $ref "#/$defs/node"`},
		{"gemini remote ref", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"$ref":"https://example.com/s.json"}}}}`, Gemini, `JSON Schema $ref "https://example.com/s.json"`},
		{"gemini integer enum", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"type":"integer","enum":[1,2]}}}}`, Gemini, "enum with a value that is not a string"},
		{"gemini type list", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"type":["string","integer"]}}}}`, Gemini, "several types"},
		{"gemini boolean schema", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"t","schema":{"type":"object","properties":{"x":true}}}}}`, Gemini, "not an object"},
		{"gemini big seed", toGemini, `{` + hi + `,"seed":4294967296}`, Gemini, "a seed beyond 32 bits"},
		{"gemini reasoning_effort", toGemini, `{` + hi + `,"reasoning_effort":"low","top_k":3}`, Gemini, `parameter "reasoning_effort"`},
		{"for openai top_k", forOpenAI(OpenAIOptions{Reasoning: true}), `{` + hi + `,"top_k":5,"reasoning_effort":"low"}`, OpenAI, "top_k"},
		{"for openai reasoning_effort", forOpenAI(OpenAIOptions{TopK: true}), `{` + hi + `,"top_k":5,"reasoning_effort":"low"}`, OpenAI, "reasoning_effort"},
		{"gemini unknown parameter", toGemini, `{` + hi + `,"prediction":{"type":"content","content":"x"}}`, Gemini, `parameter "prediction"`},
		{"inbound thinking between tools", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"thinking":{"type":"between_tools"}}`, OpenAI, `thinking of type "between_tools"`},
		{"inbound unknown effort", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"output_config":{"effort":"ultra"}}`, OpenAI, `output_config.effort "ultra"`},
		{"inbound compaction", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"context_management":{"edits":[{"type":"clear_tool_uses_20250919"},{"type":"compact_20260112"}]}}`, OpenAI, `context_management edit "compact_20260112"`},
		{"inbound server tool", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, OpenAI, `server tool "web_search_20250305"`},
		{"inbound output_config", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"output_config":{"effort":"low","format":{"type":"json_schema","schema":{}}}}`, OpenAI, "output_config.format"},
		{"inbound search result in tool_result", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"search_result","source":"s","title":"t","content":[]}]}]}]}`, OpenAI, `tool_result content of type "search_result"`},
		{"inbound document by url in tool_result", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]}]}`, OpenAI, "a document other than a base64 PDF"},
		{"inbound image file in tool_result", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}]}`, OpenAI, `image source of type "file"`},
		{"inbound document by url", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]}`, OpenAI, "a document other than a base64 PDF"},
		{"inbound file image", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}`, OpenAI, `image source of type "file"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.conv([]byte(tc.body))
			var u *UnsupportedError
			if !errors.As(err, &u) {
				t.Fatalf("err = %v (output %s), want an *UnsupportedError", err, out)
			}
			if u.Target != tc.target || !strings.Contains(u.Feature, tc.feature) {
				t.Errorf("got %s %q, want %s %q", u.Target, u.Feature, tc.target, tc.feature)
			}
			if !strings.HasPrefix(u.Error(), string(tc.target)+" cannot honour ") {
				t.Errorf("Error() = %q", u.Error())
			}
		})
	}
}

// TestSupportedNeighbours checks the values next to each refusal that must
// still convert: the feature's off or default setting.
func TestSupportedNeighbours(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv func([]byte) ([]byte, error)
		body string
	}{
		{"anthropic n=1 and zero penalties", toAnthropic, `{` + hi + `,"n":1,"presence_penalty":0,"frequency_penalty":0,"logprobs":false,"logit_bias":{},"modalities":["text"],"temperature":1}`},
		{"anthropic text response_format", toAnthropic, `{` + hi + `,"response_format":{"type":"text"}}`},
		{"anthropic nulls", toAnthropic, `{` + hi + `,"seed":null,"audio":null,"tools":null,"reasoning_effort":null}`},
		{"anthropic ignored", toAnthropic, `{` + hi + `,"store":true,"metadata":{"a":"b"},"service_tier":"auto","stream_options":{"include_usage":true},"prompt_cache_key":"k","safety_identifier":"s"}`},
		{"gemini n and penalties", toGemini, `{` + hi + `,"n":3,"seed":7,"presence_penalty":1,"frequency_penalty":1,"temperature":2}`},
		{"gemini parallel_tool_calls without tools", toGemini, `{` + hi + `,"parallel_tool_calls":false}`},
		{"gemini parallel_tool_calls with tool_choice none", toGemini, `{` + hi + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`},
		{"inbound thinking disabled", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"thinking":{"type":"disabled"}}`},
		{"inbound clearing edits", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"},{"type":"clear_tool_uses_20250919"}]}}`},
		{"inbound empty context_management", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"context_management":{}}`},
		{"anthropic no thinking keeps temperature", toAnthropic, `{` + hi + `,"reasoning_effort":"minimal","temperature":0.2,"top_k":3,"top_p":0.5}`},
		{"anthropic thinking with temperature 1 and top_p 0.95", toAnthropic, `{` + hi + `,"reasoning_effort":"low","temperature":1,"top_p":0.95,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`},
		{"anthropic thinking with tool_choice required but no tools", toAnthropic, `{` + hi + `,"reasoning_effort":"low","tool_choice":"required"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.conv([]byte(tc.body)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMalformedRequests checks that bodies that are wrong (not merely beyond
// a target) give an error that is not an UnsupportedError.
func TestMalformedRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv func([]byte) ([]byte, error)
		body string
	}{
		{"not json", toAnthropic, `{`},
		{"array", toGemini, `[]`},
		{"null", toGemini, `null`},
		{"no messages", toAnthropic, `{"model":"x"}`},
		{"bad arguments", toAnthropic, `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`},
		{"tool result without call", toGemini, `{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}]}`},
		{"unknown role", toGemini, `{"messages":[{"role":"robot","content":"x"}]}`},
		{"only system", toAnthropic, `{"messages":[{"role":"system","content":"x"}]}`},
		{"tool without id", toAnthropic, `{"messages":[{"role":"tool","content":"x"}]}`},
		{"json_schema without schema", toGemini, `{` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`},
		{"inbound not json", AnthropicRequestToOpenAI, `nope`},
		{"inbound bad role", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.conv([]byte(tc.body))
			var u *UnsupportedError
			if err == nil || errors.As(err, &u) {
				t.Fatalf("err = %v, want a malformed-body error", err)
			}
		})
	}
}

func forOpenAI(opt OpenAIOptions) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) { return ForOpenAI(b, opt) }
}

func TestAnthropicIDs(t *testing.T) {
	out, err := toAnthropic([]byte(`{"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","tool_calls":[{"id":"call:1/a","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call:1/a","content":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[
		{"role":"user","content":[{"type":"text","text":"go"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"call_1_a","name":"f","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1_a","content":"ok"}]}]}`)
}

// TestImageURLAsString accepts the older form of an image part, whose
// image_url is the URL itself.
func TestImageURLAsString(t *testing.T) {
	out, err := toGemini([]byte(`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":"data:image/webp;base64,UklGRg=="}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/webp","data":"UklGRg=="}}]}]}`)
}

// TestInboundEffort checks the mapping of Anthropic thinking and
// output_config.effort to reasoning_effort, at the band edges.
func TestInboundEffort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		want  string // reasoning_effort, "" for none
	}{
		{"no thinking", ``, ""},
		{"disabled", `,"thinking":{"type":"disabled"}`, ""},
		{"disabled wins over effort", `,"thinking":{"type":"disabled"},"output_config":{"effort":"low"}`, ""},
		{"minimum budget", `,"thinking":{"type":"enabled","budget_tokens":1024}`, "low"},
		{"below 4096", `,"thinking":{"type":"enabled","budget_tokens":4095}`, "low"},
		{"4096", `,"thinking":{"type":"enabled","budget_tokens":4096}`, "medium"},
		{"below 16384", `,"thinking":{"type":"enabled","budget_tokens":16383}`, "medium"},
		{"16384", `,"thinking":{"type":"enabled","budget_tokens":16384,"display":"omitted"}`, "high"},
		{"adaptive", `,"thinking":{"type":"adaptive"}`, "high"},
		{"adaptive with effort", `,"thinking":{"type":"adaptive"},"output_config":{"effort":"low"}`, "low"},
		{"effort over budget", `,"thinking":{"type":"enabled","budget_tokens":30000},"output_config":{"effort":"medium"}`, "medium"},
		{"effort alone", `,"output_config":{"effort":"medium"}`, "medium"},
		{"max effort", `,"output_config":{"effort":"max"}`, "high"},
		{"xhigh effort", `,"thinking":{"type":"adaptive"},"output_config":{"effort":"xhigh"}`, "high"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AnthropicRequestToOpenAI([]byte(`{"model":"m","max_tokens":5,` + hi + tc.extra + `}`))
			if err != nil {
				t.Fatal(err)
			}
			want := `{"model":"m","max_completion_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
			if tc.want != "" {
				want = `{"model":"m","max_completion_tokens":5,"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"` + tc.want + `"}`
			}
			assertJSON(t, out, want)
		})
	}
	if _, err := AnthropicRequestToOpenAI([]byte(`{"model":"m","max_tokens":5,` + hi + `,"thinking":{"type":"enabled"}}`)); err == nil || errors.As(err, new(*UnsupportedError)) {
		t.Errorf("thinking enabled without budget_tokens: err = %v, want a malformed-body error", err)
	}
}

// TestAnthropicThinking checks reasoning_effort to thinking, and max_tokens
// raised above the budget.
func TestAnthropicThinking(t *testing.T) {
	for _, tc := range []struct {
		name      string
		extra     string
		wantMax   int
		wantThink string // "" for no thinking member
	}{
		{"none", `,"reasoning_effort":"none"`, 4096, ""},
		{"minimal", `,"reasoning_effort":"minimal","max_tokens":100`, 100, ""},
		{"low fits the default", `,"reasoning_effort":"low"`, 4096, `{"type":"enabled","budget_tokens":2048}`},
		{"medium raises the default", `,"reasoning_effort":"medium"`, 8192 + 4096, `{"type":"enabled","budget_tokens":8192}`},
		{"high raises the client's limit", `,"reasoning_effort":"high","max_completion_tokens":1000,"max_tokens":5`, 16384 + 1000, `{"type":"enabled","budget_tokens":16384}`},
		{"xhigh", `,"reasoning_effort":"xhigh","max_tokens":40000`, 40000, `{"type":"enabled","budget_tokens":32768}`},
		{"equal to the budget is raised", `,"reasoning_effort":"low","max_tokens":2048`, 4096, `{"type":"enabled","budget_tokens":2048}`},
		{"option default", `,"reasoning_effort":"low","max_tokens":null`, 4096, `{"type":"enabled","budget_tokens":2048}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := toAnthropic([]byte(`{` + hi + tc.extra + `}`))
			if err != nil {
				t.Fatal(err)
			}
			want := `{"model":"claude-sonnet-4-5","max_tokens":` + itoa(tc.wantMax) + `,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]`
			if tc.wantThink != "" {
				want += `,"thinking":` + tc.wantThink
			}
			assertJSON(t, out, want+`}`)
		})
	}
}

// TestTopK checks top_k to Anthropic and Gemini, and the values that mean
// none.
func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		name string
		conv func([]byte) ([]byte, error)
		body string
		want string
	}{
		{"anthropic", toAnthropic, `{` + hi + `,"top_k":40}`, `{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"top_k":40}`},
		{"anthropic zero is none", toAnthropic, `{` + hi + `,"top_k":0}`, `{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"anthropic null", toAnthropic, `{` + hi + `,"top_k":null}`, `{"model":"claude-sonnet-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"gemini", toGemini, `{` + hi + `,"top_k":3,"temperature":0.5}`, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"temperature":0.5,"topK":3}}`},
		{"gemini alone", toGemini, `{` + hi + `,"top_k":7}`, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"topK":7}}`},
		{"gemini -1 is none", toGemini, `{` + hi + `,"top_k":-1}`, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
		{"inbound", AnthropicRequestToOpenAI, `{"model":"m","max_tokens":5,` + hi + `,"top_k":5}`, `{"model":"m","max_completion_tokens":5,"messages":[{"role":"user","content":"hi"}],"top_k":5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.conv([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, out, tc.want)
		})
	}
	if _, err := toAnthropic([]byte(`{` + hi + `,"top_k":"many"}`)); err == nil || errors.As(err, new(*UnsupportedError)) {
		t.Errorf("top_k string: err = %v, want a malformed-body error", err)
	}
}

// TestInboundDropsCacheControl checks that cache_control on system, message,
// tool and tool_result blocks leaves no trace in the canonical body.
func TestInboundDropsCacheControl(t *testing.T) {
	cc := `"cache_control":{"type":"ephemeral","ttl":"5m"}`
	out, err := AnthropicRequestToOpenAI([]byte(`{"model":"m","max_tokens":5,` + cc + `,
		"system":[{"type":"text","text":"s",` + cc + `}],
		"tools":[{"name":"f","input_schema":{"type":"object"},` + cc + `}],
		"messages":[{"role":"user","content":[{"type":"text","text":"go",` + cc + `}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{},` + cc + `}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok",` + cc + `}],` + cc + `}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"model":"m","max_completion_tokens":5,"messages":[
		{"role":"system","content":"s"},
		{"role":"user","content":"go"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","content":"ok","tool_call_id":"t1"}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`)
}

// TestInboundToolResultMediaOrder checks where tool_result media go when
// the turn has no text of its own, and when a text stands between tool
// results.
func TestInboundToolResultMediaOrder(t *testing.T) {
	img := `{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`
	for _, tc := range []struct {
		name, content, want string
	}{
		{"media only", `[{"type":"tool_result","tool_use_id":"a","content":[` + img + `]}]`,
			`[{"role":"tool","content":"","tool_call_id":"a"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]`},
		{"text between results", `[{"type":"tool_result","tool_use_id":"a","content":[` + img + `]},{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"b","content":"ok"}]`,
			`[{"role":"tool","content":"","tool_call_id":"a"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"text","text":"x"}]},{"role":"tool","content":"ok","tool_call_id":"b"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AnthropicRequestToOpenAI([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":` + tc.content + `}]}`))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, out, `{"model":"m","max_completion_tokens":5,"messages":`+tc.want+`}`)
		})
	}
}
