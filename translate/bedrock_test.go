package translate

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/eventstream"
)

// The golden inputs follow the examples of AWS's Bedrock documentation
// (the Converse API reference, its tool-use example with top_song and
// WZPZ, the ConverseStream events, InvokeModel with Claude's Messages
// body); the outputs are what the gateway sends on.

// checkGolden compares got with testdata/name, or rewrites it with
// -update.
func checkGolden(t *testing.T, name string, got []byte, isJSON bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		out := got
		if isJSON {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			out = pretty.Bytes()
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFile(t, name)
	if isJSON && !sameJSON(t, got, want) || !isJSON && !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestBedrockGoldenJSON(t *testing.T) {
	cases := []struct {
		name string
		conv func([]byte) ([]byte, error)
	}{
		{"bedrock_req_anthropic_to_converse", AnthropicToConverse},
		{"bedrock_req_anthropic_to_invoke", func(b []byte) ([]byte, error) {
			return AnthropicToInvoke(b, []string{"token-efficient-tools-2025-02-19"})
		}},
		{"bedrock_resp_converse_text", func(b []byte) ([]byte, error) {
			return ConverseToAnthropic(b, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "msg_bdrk_1")
		}},
		{"bedrock_resp_converse_tool_use", func(b []byte) ([]byte, error) {
			return ConverseToAnthropic(b, "anthropic.claude-3-7-sonnet-20250219-v1:0", "msg_bdrk_2")
		}},
		{"bedrock_resp_converse_guardrail", func(b []byte) ([]byte, error) {
			return ConverseToAnthropic(b, "meta.llama3-1-70b-instruct-v1:0", "msg_bdrk_3")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.conv(readFile(t, tc.name+".in.json"))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name+".out.json", got, true)
		})
	}
}

// TestBedrockResponseToOpenAI follows a Converse answer through the
// existing Anthropic translator to what an OpenAI client reads.
func TestBedrockResponseToOpenAI(t *testing.T) {
	an, err := ConverseToAnthropic(readFile(t, "bedrock_resp_converse_tool_use.in.json"), "anthropic.claude-3-7-sonnet-20250219-v1:0", "msg_bdrk_2")
	if err != nil {
		t.Fatal(err)
	}
	oa, err := AnthropicResponseToOpenAI(an)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "bedrock_resp_converse_tool_use.openai.json", oa, true)
}

// encodeEvents frames the events of a .jsonl golden input as Bedrock
// sends them: each line an event (with its payload, or an Anthropic event
// wrapped as InvokeModel's chunk) or an exception.
func encodeEvents(t *testing.T, name string) []byte {
	t.Helper()
	var out []byte
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, name)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Event, Exception string
			Payload          json.RawMessage
			Anthropic        json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		m := eventstream.Message{Payload: l.Payload}
		if l.Anthropic != nil {
			m.Payload, _ = json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(l.Anthropic)})
		}
		if l.Exception != "" {
			m.Headers = []eventstream.Header{eventstream.String(":message-type", "exception"), eventstream.String(":exception-type", l.Exception)}
		} else {
			m.Headers = []eventstream.Header{eventstream.String(":message-type", "event"), eventstream.String(":event-type", l.Event), eventstream.String(":content-type", "application/json")}
		}
		var err error
		if out, err = eventstream.Encode(out, &m); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestBedrockGoldenStreams(t *testing.T) {
	cases := []struct {
		name   string
		invoke bool
	}{
		{"bedrock_stream_converse_text", false},
		{"bedrock_stream_converse_tools", false},
		{"bedrock_stream_converse_throttled", false},
		{"bedrock_stream_invoke_text", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := io.NopCloser(bytes.NewReader(encodeEvents(t, tc.name+".in.jsonl")))
			var sse io.ReadCloser
			if tc.invoke {
				sse = InvokeStreamToAnthropic(body)
			} else {
				sse = ConverseStreamToAnthropic(body, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "msg_bdrk_1")
			}
			an, err := io.ReadAll(sse)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name+".anthropic.sse", an, false)
			// The existing translator takes it on to OpenAI's chunks.
			// An error event ends OpenAI's stream with the error, which
			// the golden file records after the chunks.
			oa, err := io.ReadAll(NewReader(io.NopCloser(bytes.NewReader(an)), NewAnthropicToOpenAIStream(true)))
			if err != nil {
				oa = append(oa, "# error: "+err.Error()+"\n"...)
			}
			checkGolden(t, tc.name+".openai.sse", normalizeChunks(oa), false)
		})
	}
}

// normalizeChunks blanks the created times of OpenAI chunks, which the
// translator takes from the clock.
func normalizeChunks(b []byte) []byte {
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		if data, ok := strings.CutPrefix(line, "data: {"); ok {
			var m map[string]any
			if json.Unmarshal([]byte("{"+strings.TrimSpace(data)), &m) == nil {
				if _, has := m["created"]; has {
					m["created"] = 0
				}
				j, _ := json.Marshal(m)
				out.WriteString("data: " + string(j) + "\n")
				continue
			}
		}
		out.WriteString(line)
	}
	return out.Bytes()
}

func TestBedrockStreamDamaged(t *testing.T) {
	good := encodeEvents(t, "bedrock_stream_converse_text.in.jsonl")
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 0xff
	_, err := io.ReadAll(ConverseStreamToAnthropic(io.NopCloser(bytes.NewReader(bad)), "m", "id"))
	if !errors.Is(err, eventstream.ErrCRC) {
		t.Fatalf("err = %v, want a checksum error", err)
	}
	cut := good[:len(good)-10]
	_, err = io.ReadAll(ConverseStreamToAnthropic(io.NopCloser(bytes.NewReader(cut)), "m", "id"))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF for a stream cut mid-message", err)
	}
}

func TestBedrockErrors(t *testing.T) {
	cases := []struct {
		name, exception string
		status          int
		body            string
		wantStatus      int
		wantType        string
	}{
		{"throttling", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", 429, `{"message":"Too many requests, please wait before trying again."}`, 429, "rate_limit_error"},
		{"quota", "ServiceQuotaExceededException", 400, `{"message":"Your request exceeds the service quota for your account."}`, 429, "rate_limit_error"},
		{"model not ready", "ModelNotReadyException", 429, `{"message":"Model is not ready for inference."}`, 503, "overloaded_error"},
		{"unavailable", "ServiceUnavailableException", 503, `{"message":"Bedrock is unable to process your request."}`, 503, "overloaded_error"},
		{"internal", "InternalServerException", 500, `{"message":"The server encountered an error processing your request."}`, 500, "api_error"},
		{"validation", "ValidationException", 400, `{"message":"The provided model identifier is invalid."}`, 400, "invalid_request_error"},
		{"access denied", "AccessDeniedException", 403, `{"Message":"You don't have access to the model with the specified model ID."}`, 403, "permission_error"},
		{"type in the body", "", 400, `{"__type":"com.amazon.coral.validate#ValidationException","message":"Malformed input request"}`, 400, "invalid_request_error"},
		{"stream exception name", "modelStreamErrorException", 424, `{"message":"x"}`, 500, "api_error"},
		{"unknown", "", 418, `not json`, 418, "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := BedrockError(tc.exception, tc.status, []byte(tc.body))
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatal(err)
			}
			if status != tc.wantStatus || e.Type != "error" || e.Error.Type != tc.wantType || e.Error.Message == "" {
				t.Fatalf("BedrockError = %d %s, want %d %s", status, body, tc.wantStatus, tc.wantType)
			}
			// The caller gets it in its own format through the existing
			// translator.
			if oa := ErrorToOpenAI(Anthropic, status, body); !bytes.Contains(oa, []byte(`"error"`)) {
				t.Fatalf("ErrorToOpenAI = %s", oa)
			}
		})
	}
}

func TestAnthropicToConverseUnsupported(t *testing.T) {
	cases := map[string]string{
		"image by url":  `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`,
		"server tool":   `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
		"unknown block": `{"messages":[{"role":"user","content":[{"type":"container_upload","file_id":"f"}]}]}`,
	}
	for name, body := range cases {
		_, err := AnthropicToConverse([]byte(body))
		var ue *UnsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want an UnsupportedError", name, err)
		}
	}
}

// TestAnthropicToConverseToolChoiceNone: Converse has no "none"; the
// tools are left out unless the conversation already holds tool blocks.
func TestAnthropicToConverseToolChoiceNone(t *testing.T) {
	tools := `"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"}`
	got, err := AnthropicToConverse([]byte(`{"messages":[{"role":"user","content":"hi"}],` + tools + `}`))
	if err != nil || bytes.Contains(got, []byte("toolConfig")) {
		t.Fatalf("got %s, %v; want no toolConfig", got, err)
	}
	got, err = AnthropicToConverse([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}],` + tools + `}`))
	if err != nil || !bytes.Contains(got, []byte("toolConfig")) || bytes.Contains(got, []byte("toolChoice")) {
		t.Fatalf("got %s, %v; want the tools without a toolChoice", got, err)
	}
}

// TestConverseStopReasonOutsideAnthropicsEnum is the regression test for
// Converse stop reasons that Anthropic's API does not have
// (malformed_model_output, malformed_tool_use: the Bedrock documentation
// lists them) reaching Anthropic clients as they were, outside the
// stop_reason enum their SDKs know. Both the response and the stream
// now end the turn with end_turn; the reasons both APIs share pass.
func TestConverseStopReasonOutsideAnthropicsEnum(t *testing.T) {
	cases := map[string]string{
		"malformed_model_output":        "end_turn",
		"malformed_tool_use":            "end_turn",
		"some_future_reason":            "end_turn",
		"":                              "end_turn",
		"end_turn":                      "end_turn",
		"tool_use":                      "tool_use",
		"max_tokens":                    "max_tokens",
		"stop_sequence":                 "stop_sequence",
		"model_context_window_exceeded": "model_context_window_exceeded",
		"guardrail_intervened":          "refusal",
		"content_filtered":              "refusal",
	}
	for in, want := range cases {
		body := `{"output":{"message":{"role":"assistant","content":[{"text":"x"}]}},"stopReason":"` + in +
			`","usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4},"metrics":{"latencyMs":5}}`
		out, err := ConverseToAnthropic([]byte(body), "m", "id")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if got.StopReason != want {
			t.Errorf("response with stopReason %q: stop_reason %q, want %q", in, got.StopReason, want)
		}

		var events bytes.Buffer
		for _, e := range []struct{ typ, payload string }{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"x"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"` + in + `"}`},
			{"metadata", `{"usage":{"inputTokens":3,"outputTokens":1,"totalTokens":4},"metrics":{"latencyMs":5}}`},
		} {
			events.Write(eventMessage(t, e.typ, e.payload))
		}
		sse, err := io.ReadAll(ConverseStreamToAnthropic(io.NopCloser(&events), "m", "id"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(sse, []byte(`"stop_reason":"`+want+`"`)) {
			t.Errorf("stream with stopReason %q: want stop_reason %q in\n%s", in, want, sse)
		}
	}
}

// eventMessage encodes one ConverseStream event as Bedrock frames it.
func eventMessage(t *testing.T, typ, payload string) []byte {
	t.Helper()
	m := eventstream.Message{Payload: []byte(payload), Headers: []eventstream.Header{
		eventstream.String(":message-type", "event"), eventstream.String(":event-type", typ), eventstream.String(":content-type", "application/json")}}
	b, err := eventstream.Encode(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
