package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

// The conformance tests check every answer shape the gateway serves
// against JSON Schemas written from the providers' published API
// references (testdata/schemas: OpenAI's Chat Completions, Anthropic's
// Messages, the Responses API as Open Responses publishes it), on every
// pool shape: each API passed through to a member of its own format and
// translated for the others, plain and streamed (each event against its
// event's schema), and errors in each format. They are the offline form of
// the public conformance suites (docs/conformance.md).

// conformanceSims are the simulated members, one per pool shape. The
// OpenAI member's model reasons, so thinking can be translated to it.
var conformanceSims = []sim.Deployment{
	{Name: "aoai-weu", Flavour: sim.Azure, Deployment: "gpt-4o", Key: "azure-key-000000000"},
	{Name: "openai", Flavour: sim.OpenAI, Deployment: "o3-mini", Key: "sk-openai-00000000"},
	{Name: "claude", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-000000000000"},
	{Name: "gemini", Flavour: sim.Gemini, Deployment: "gemini-2.5-flash", Key: "goog-key-000000000"},
}

// schemaSet compiles the schemas of testdata/schemas once. Safe for
// concurrent use.
type schemaSet struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

var conformanceSchemas = sync.OnceValues(func() (*schemaSet, error) {
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob(filepath.Join("testdata", "schemas", "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no schemas in testdata/schemas: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if err := c.AddResource(filepath.Base(f), doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return &schemaSet{compiler: c, compiled: map[string]*jsonschema.Schema{}}, nil
})

// schema returns the definition def of file, e.g. ("responses.json",
// "Response").
func schemaFor(t *testing.T, file, def string) *jsonschema.Schema {
	t.Helper()
	set, err := conformanceSchemas()
	if err != nil {
		t.Fatal(err)
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	ref := file + "#/$defs/" + def
	if s, ok := set.compiled[ref]; ok {
		return s
	}
	s, err := set.compiler.Compile(ref)
	if err != nil {
		t.Fatalf("compile %s: %v", ref, err)
	}
	set.compiled[ref] = s
	return s
}

// validate checks one JSON document against file's definition def.
func validate(t *testing.T, file, def string, doc []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("not JSON (%v): %s", err, doc)
	}
	if err := schemaFor(t, file, def).Validate(inst); err != nil {
		t.Errorf("%s %s: %v\n%s", file, def, err, doc)
	}
}

// sseDocs returns the JSON of each data line of a stream and whether it
// ended with [DONE].
func sseDocs(t *testing.T, body []byte) (docs [][]byte, done bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			continue
		}
		docs = append(docs, []byte(data))
	}
	return docs, done
}

// eventTypes is the "type" of each document.
func eventTypes(t *testing.T, docs [][]byte) []string {
	t.Helper()
	var out []string
	for _, d := range docs {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v.Type)
	}
	return out
}

// conformanceGateway starts the simulated members and a gateway whose
// pool chat-prod has the one member given, and returns its base URL.
func conformanceGateway(t *testing.T, member string) string {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: conformanceSims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eps := map[string]sim.Endpoint{}
	for _, e := range s.Deployments() {
		eps[e.Name] = e
	}
	var y strings.Builder
	y.WriteString("log: {format: json, level: info}\nserver: {drain_delay: 0s}\nbackends:\n")
	model := ""
	for _, d := range conformanceSims {
		y.WriteString(backendYAML(d, eps[d.Name].URL))
		if d.Name == member {
			model = d.Deployment
		}
	}
	fmt.Fprintf(&y, "pools:\n  - name: chat-prod\n    members:\n      - {backend: %s, model: %s}\n", member, model)
	cfg, err := config.Parse("conformance.yaml", []byte(y.String()), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, "json", "info")})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, g)
}

// confCall sends body to path with method and returns the status and answer.
func confCall(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// conformanceCase is one request and what each pool shape must answer:
// the status by member (200 unless listed), the schema of a 200 (def of
// file, per event when stream) and of an error (file's Error), and an
// extra check of a 200.
type conformanceCase struct {
	name   string
	method string // POST unless set
	path   string
	body   string
	stream bool
	file   string
	def    string
	status map[string]int
	check  func(t *testing.T, member string, body []byte)
}

const (
	chatSchema      = "openai_chat.json"
	messagesSchema  = "anthropic_messages.json"
	responsesSchema = "responses.json"
)

const weatherChatTool = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a place.","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}]`

const weatherAnthropicTool = `"tools":[{"name":"get_weather","description":"Weather of a place.","input_schema":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}]`

const weatherResponsesTool = `"tools":[{"type":"function","name":"get_weather","description":"Weather of a place.","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}]`

var conformanceCases = []conformanceCase{
	// Chat Completions.
	{name: "chat", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body: `{"model":"chat-prod","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello."}]}`,
		check: func(t *testing.T, _ string, b []byte) {
			if !bytes.Contains(b, []byte(`"annotations":[]`)) {
				t.Errorf("message without annotations: %s", b)
			}
		}},
	{name: "chat n 2", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body:   `{"model":"chat-prod","n":2,"messages":[{"role":"user","content":"Say hello."}]}`,
		status: map[string]int{"claude": 400},
		check: func(t *testing.T, member string, b []byte) {
			var c struct{ Choices []json.RawMessage }
			_ = json.Unmarshal(b, &c)
			if (member == "aoai-weu" || member == "openai") && len(c.Choices) != 2 {
				t.Errorf("%d choices, want 2: %s", len(c.Choices), b)
			}
		}},
	{name: "chat tools", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body:  `{"model":"chat-prod","messages":[{"role":"user","content":"Weather in Paris?"}],` + weatherChatTool + `,"tool_choice":"required"}`,
		check: wantContains(`"finish_reason":"tool_calls"`, `"name":"get_weather"`)},
	{name: "chat json_schema", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body:   `{"model":"chat-prod","messages":[{"role":"user","content":"A city."}],"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`,
		status: map[string]int{"claude": 400}},
	{name: "chat logprobs", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body:   `{"model":"chat-prod","logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"Say hello."}]}`,
		status: map[string]int{"claude": 400, "gemini": 400},
		check:  wantContains(`"logprobs":{"content":[{"token":`, `"top_logprobs":[{"token":`)},
	{name: "chat reasoning_effort", path: "/v1/chat/completions", file: chatSchema, def: "ChatCompletion",
		body:   `{"model":"chat-prod","reasoning_effort":"low","messages":[{"role":"user","content":"Think."}]}`,
		status: map[string]int{"gemini": 400},
		check:  wantContains(`"reasoning_tokens":`)},
	{name: "chat stream", path: "/v1/chat/completions", file: chatSchema, def: "Chunk", stream: true,
		body: `{"model":"chat-prod","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count to five."}]}`},
	{name: "chat stream n 2", path: "/v1/chat/completions", file: chatSchema, def: "Chunk", stream: true,
		body:   `{"model":"chat-prod","stream":true,"n":2,"messages":[{"role":"user","content":"Say hello."}]}`,
		status: map[string]int{"claude": 400}},
	{name: "chat stream tools", path: "/v1/chat/completions", file: chatSchema, def: "Chunk", stream: true,
		body: `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],` + weatherChatTool + `,"tool_choice":"required"}`},
	{name: "chat error without messages", path: "/v1/chat/completions", file: chatSchema,
		body:   `{"model":"chat-prod"}`,
		status: map[string]int{"aoai-weu": 400, "openai": 400, "claude": 400, "gemini": 400}},
	{name: "chat error without model", path: "/v1/chat/completions", file: chatSchema,
		body:   `{"messages":[{"role":"user","content":"test"}]}`,
		status: map[string]int{"aoai-weu": 400, "openai": 400, "claude": 400, "gemini": 400}},

	// Anthropic Messages.
	{name: "messages", path: "/v1/messages", file: messagesSchema, def: "Message",
		body:  `{"model":"chat-prod","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"Say hello."}]}`,
		check: wantContains(`"stop_reason":"end_turn"`)},
	{name: "messages tool_use", path: "/v1/messages", file: messagesSchema, def: "Message",
		body:  `{"model":"chat-prod","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"}],` + weatherAnthropicTool + `,"tool_choice":{"type":"any"}}`,
		check: wantContains(`"stop_reason":"tool_use"`, `"type":"tool_use"`)},
	{name: "messages thinking", path: "/v1/messages", file: messagesSchema, def: "Message",
		body:   `{"model":"chat-prod","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"Think, then say hello."}]}`,
		status: map[string]int{"aoai-weu": 400, "gemini": 400},
		check: func(t *testing.T, member string, b []byte) {
			if member == "claude" && !bytes.Contains(b, []byte(`"type":"thinking"`)) {
				t.Errorf("no thinking block: %s", b)
			}
		}},
	{name: "messages stream", path: "/v1/messages", file: messagesSchema, def: "Event", stream: true,
		body: `{"model":"chat-prod","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Count to five."}]}`},
	{name: "messages stream tool_use", path: "/v1/messages", file: messagesSchema, def: "Event", stream: true,
		body: `{"model":"chat-prod","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],` + weatherAnthropicTool + `,"tool_choice":{"type":"any"}}`},
	{name: "messages stream thinking", path: "/v1/messages", file: messagesSchema, def: "Event", stream: true,
		body:   `{"model":"chat-prod","max_tokens":4096,"stream":true,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"Think, then say hello."}]}`,
		status: map[string]int{"aoai-weu": 400, "gemini": 400},
		check: func(t *testing.T, member string, b []byte) {
			if member == "claude" && (!bytes.Contains(b, []byte(`"thinking_delta"`)) || !bytes.Contains(b, []byte(`"signature_delta"`))) {
				t.Errorf("no thinking_delta and signature_delta: %s", b)
			}
		}},
	{name: "count_tokens", path: "/v1/messages/count_tokens", file: messagesSchema, def: "CountTokens",
		body: `{"model":"chat-prod","messages":[{"role":"user","content":"Say hello."}]}`},
	{name: "messages error without max_tokens", path: "/v1/messages", file: messagesSchema,
		body:   `{"model":"chat-prod","messages":[{"role":"user","content":"test"}]}`,
		status: map[string]int{"aoai-weu": 400, "openai": 400, "claude": 400, "gemini": 400}},

	// Responses.
	{name: "responses", path: "/v1/responses", file: responsesSchema, def: "Response",
		body:  `{"model":"chat-prod","input":[{"type":"message","role":"developer","content":"Be brief."},{"type":"message","role":"user","content":"Say hello."}]}`,
		check: wantContains(`"status":"completed"`)},
	{name: "responses tools", path: "/v1/responses", file: responsesSchema, def: "Response",
		body:  `{"model":"chat-prod","input":"Weather in Paris?",` + weatherResponsesTool + `,"tool_choice":"required"}`,
		check: wantContains(`"type":"function_call"`)},
	{name: "responses stream", path: "/v1/responses", file: responsesSchema, def: "Event", stream: true,
		body: `{"model":"chat-prod","stream":true,"input":"Count to five."}`},
	{name: "responses stream tools", path: "/v1/responses", file: responsesSchema, def: "Event", stream: true,
		body: `{"model":"chat-prod","stream":true,"input":"Weather in Paris?",` + weatherResponsesTool + `,"tool_choice":"required"}`},
	{name: "responses compact", path: "/v1/responses/compact", file: responsesSchema, def: "Compaction",
		body:   `{"model":"chat-prod","input":[{"type":"message","role":"user","content":"We launch on Tuesday."},{"type":"message","role":"assistant","content":"Understood."}]}`,
		status: map[string]int{"claude": 404, "gemini": 404}},
	{name: "responses error without model", path: "/v1/responses", file: responsesSchema,
		body:   `{"input":"test"}`,
		status: map[string]int{"aoai-weu": 400, "openai": 400, "claude": 400, "gemini": 400}},
}

// wantContains checks that a 200 holds each of subs.
func wantContains(subs ...string) func(t *testing.T, member string, b []byte) {
	return func(t *testing.T, _ string, b []byte) {
		t.Helper()
		for _, s := range subs {
			if !bytes.Contains(b, []byte(s)) {
				t.Errorf("no %s in %s", s, b)
			}
		}
	}
}

// TestConformanceSchemas runs every case on every pool shape.
func TestConformanceSchemas(t *testing.T) {
	for _, d := range conformanceSims {
		member := d.Name
		t.Run(member, func(t *testing.T) {
			url := conformanceGateway(t, member)
			for _, tc := range conformanceCases {
				t.Run(tc.name, func(t *testing.T) {
					method := tc.method
					if method == "" {
						method = http.MethodPost
					}
					status, body := confCall(t, method, url+tc.path, tc.body)
					want := http.StatusOK
					if s, ok := tc.status[member]; ok {
						want = s
					}
					if status != want {
						t.Fatalf("status %d, want %d: %s", status, want, body)
					}
					if status != http.StatusOK {
						validate(t, tc.file, "Error", body)
						return
					}
					if tc.stream {
						checkStream(t, tc.file, tc.def, body)
					} else {
						validate(t, tc.file, tc.def, body)
					}
					if tc.check != nil {
						tc.check(t, member, body)
					}
				})
			}
		})
	}
}

// checkStream validates each event of a stream and the order the API
// gives them: chat ends with [DONE]; Messages starts with message_start
// and ends with message_delta, message_stop; Responses starts with
// response.created, ends with response.completed, numbering every event
// in sequence.
func checkStream(t *testing.T, file, def string, body []byte) {
	t.Helper()
	docs, done := sseDocs(t, body)
	if len(docs) == 0 {
		t.Fatalf("no events: %s", body)
	}
	for _, d := range docs {
		validate(t, file, def, d)
	}
	types := eventTypes(t, docs)
	switch file {
	case chatSchema:
		if !done {
			t.Errorf("no [DONE]: %s", body)
		}
	case messagesSchema:
		n := len(types)
		if types[0] != "message_start" || n < 3 || types[n-2] != "message_delta" || types[n-1] != "message_stop" {
			t.Errorf("event order %v", types)
		}
	case responsesSchema:
		if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
			t.Errorf("event order %v", types)
		}
		for i, d := range docs {
			var v struct {
				Seq int `json:"sequence_number"`
			}
			_ = json.Unmarshal(d, &v)
			if v.Seq != i && v.Seq != docs0Seq(docs)+i {
				t.Errorf("event %d has sequence_number %d", i, v.Seq)
				break
			}
		}
	}
}

// docs0Seq is the first event's sequence number (0 or 1, as servers
// differ).
func docs0Seq(docs [][]byte) int {
	var v struct {
		Seq int `json:"sequence_number"`
	}
	_ = json.Unmarshal(docs[0], &v)
	return v.Seq
}

// TestConformanceResponsesRetrieve: a stored response is retrieved in the
// Response schema from a member with the Responses API; a translated
// pool keeps no response, and says so in the Responses error format.
func TestConformanceResponsesRetrieve(t *testing.T) {
	for _, d := range conformanceSims {
		member := d.Name
		t.Run(member, func(t *testing.T) {
			url := conformanceGateway(t, member)
			status, body := confCall(t, http.MethodPost, url+"/v1/responses", `{"model":"chat-prod","input":"Say hello."}`)
			if status != http.StatusOK {
				t.Fatalf("create: %d %s", status, body)
			}
			var r struct{ ID string }
			if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
				t.Fatalf("no id: %s", body)
			}
			status, body = confCall(t, http.MethodGet, url+"/v1/responses/"+r.ID, "")
			if member == "aoai-weu" || member == "openai" {
				if status != http.StatusOK {
					t.Fatalf("retrieve: %d %s", status, body)
				}
				validate(t, responsesSchema, "Response", body)
				return
			}
			if status < 400 {
				t.Fatalf("retrieve from a translated pool: %d %s", status, body)
			}
			validate(t, responsesSchema, "Error", body)
		})
	}
}

// TestConformanceSchemasRefuseWrongShapes: the schemas catch what the
// public suites caught (a schema that passes anything proves nothing).
func TestConformanceSchemasRefuseWrongShapes(t *testing.T) {
	for _, tc := range []struct{ file, def, doc string }{
		{chatSchema, "ChatCompletion", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop","logprobs":null}]}`},
		{messagesSchema, "Message", `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`},
		{messagesSchema, "Message", `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi","citations":null}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":null,"server_tool_use":null,"service_tier":"standard"}}`},
		{messagesSchema, "ToolUseBlock", `{"type":"tool_use","id":"toolu_1","name":"f","input":{}}`},
		{responsesSchema, "Response", `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[]}`},
		{responsesSchema, "Tool", `{"type":"function","name":"f","parameters":{}}`},
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		if schemaFor(t, tc.file, tc.def).Validate(inst) == nil {
			t.Errorf("%s %s accepts %s", tc.file, tc.def, tc.doc)
		}
	}
}

// TestCompactOnATranslatedPoolIs404: a compaction that no member of the
// pool can make was 400, which the Open Responses suite counts as a
// failure; it is 404, as from a provider without the endpoint, and still
// says why.
func TestCompactOnATranslatedPoolIs404(t *testing.T) {
	url := conformanceGateway(t, "claude")
	status, body := confCall(t, http.MethodPost, url+"/v1/responses/compact", `{"model":"chat-prod","input":"We launch on Tuesday."}`)
	if status != http.StatusNotFound || !bytes.Contains(body, []byte(`"code":"unsupported_by_backends"`)) || !bytes.Contains(body, []byte("responses/compact")) {
		t.Fatalf("%d %s", status, body)
	}
	validate(t, responsesSchema, "Error", body)
}
