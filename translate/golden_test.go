package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// jsonGoldens are the request and response conversions checked against
// testdata/<name>.in.json and testdata/<name>.out.json.
var jsonGoldens = []struct {
	name string
	conv func([]byte) ([]byte, error)
}{
	{"req_openai_to_anthropic_system", func(b []byte) ([]byte, error) {
		return OpenAIRequestToAnthropic(b, "claude-sonnet-4-5", AnthropicOptions{})
	}},
	{"req_openai_to_anthropic_tools", func(b []byte) ([]byte, error) {
		return OpenAIRequestToAnthropic(b, "claude-sonnet-4-5", AnthropicOptions{})
	}},
	{"req_openai_to_anthropic_images", func(b []byte) ([]byte, error) {
		return OpenAIRequestToAnthropic(b, "claude-haiku-4-5", AnthropicOptions{MaxTokens: 2048})
	}},
	{"req_openai_to_gemini_system", func(b []byte) ([]byte, error) { return OpenAIRequestToGemini(b, GeminiOptions{}) }},
	{"req_openai_to_gemini_tools", func(b []byte) ([]byte, error) { return OpenAIRequestToGemini(b, GeminiOptions{}) }},
	{"req_openai_to_gemini_images", func(b []byte) ([]byte, error) { return OpenAIRequestToGemini(b, GeminiOptions{}) }},
	{"req_openai_to_gemini_json_schema", func(b []byte) ([]byte, error) { return OpenAIRequestToGemini(b, GeminiOptions{}) }},
	{"req_anthropic_to_openai_system", AnthropicRequestToOpenAI},
	{"req_anthropic_to_openai_tools", AnthropicRequestToOpenAI},
	{"resp_anthropic_to_openai_text", AnthropicResponseToOpenAI},
	{"resp_anthropic_to_openai_tools", AnthropicResponseToOpenAI},
	{"resp_gemini_to_openai_text", func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "gemini-flash-latest") }},
	{"resp_gemini_to_openai_tools", func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "gemini-pro-latest") }},
	{"resp_gemini_to_openai_blocked", func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "gemini-2.5-flash") }},
	{"resp_gemini_to_openai_candidates", func(b []byte) ([]byte, error) { return GeminiResponseToOpenAI(b, "unused") }},
	{"resp_openai_to_anthropic_text", OpenAIResponseToAnthropic},
	{"resp_openai_to_anthropic_tools", OpenAIResponseToAnthropic},
	{"anth_req_thinking_to_openai", AnthropicRequestToOpenAI},
	{"anth_req_tool_result_image", AnthropicRequestToOpenAI},
	{"anth_req_reasoning_to_anthropic", func(b []byte) ([]byte, error) {
		return OpenAIRequestToAnthropic(b, "claude-sonnet-4-5", AnthropicOptions{})
	}},
	{"anth_resp_thinking_to_openai", AnthropicResponseToOpenAI},
	{"anth_resp_reasoning_to_anthropic", OpenAIResponseToAnthropic},
}

func TestGoldenJSON(t *testing.T) {
	for _, tc := range jsonGoldens {
		t.Run(tc.name, func(t *testing.T) {
			in := readFile(t, tc.name+".in.json")
			got, err := tc.conv(in)
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("output is not JSON: %s", got)
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
			want := readFile(t, tc.name+".out.json")
			if !sameJSON(t, got, want) {
				t.Errorf("output differs from %s (run go test -update to accept):\ngot:  %s\nwant: %s", golden, got, compactJSON(want))
			}
		})
	}
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON compares two JSON documents as values: key order and spacing do
// not count, numbers compare exactly.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(decodeAny(t, a), decodeAny(t, b))
}

func decodeAny(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return v
}

// assertJSON fails the test unless got and want are the same JSON value.
func assertJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	if !sameJSON(t, got, []byte(want)) {
		t.Errorf("got  %s\nwant %s", got, compactJSON([]byte(want)))
	}
}
