package translate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
)

// These tests run the Responses legs together with the other converters,
// as the gateway does for a Responses client served by another backend:
// Responses request -> chat -> backend, and backend -> chat -> Responses.

func TestResponsesRequestsReachOtherBackends(t *testing.T) {
	for _, tc := range []struct {
		name    string
		golden  string
		backend Format
		// wantErr is the feature an *UnsupportedError names; "" for success
		wantErr string
	}{
		{"tools to anthropic", "responses_req_tools", Anthropic, ""},
		{"tools to gemini", "responses_req_tools", Gemini, `parallel_tool_calls: false`},
		{"images to anthropic", "responses_req_images", Anthropic, ""},
		{"images to gemini", "responses_req_images", Gemini, "an image by URL"},
		{"json_schema to gemini", "responses_req_json_schema", Gemini, `parameter "verbosity"`},
		// reasoning_effort becomes extended thinking, which Anthropic runs
		// only at temperature 1; the golden asks for another.
		{"reasoning effort to anthropic", "responses_req_string", Anthropic, `temperature other than 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chat, err := ResponsesRequestToOpenAI(readFile(t, tc.golden+".in.json"))
			if err != nil {
				t.Fatal(err)
			}
			var out []byte
			switch tc.backend {
			case Anthropic:
				out, err = OpenAIRequestToAnthropic(chat, "claude-sonnet-4-5", AnthropicOptions{})
			case Gemini:
				out, err = OpenAIRequestToGemini(chat, GeminiOptions{})
			}
			if tc.wantErr != "" {
				var u *UnsupportedError
				if !errors.As(err, &u) || !strings.Contains(u.Feature, tc.wantErr) {
					t.Fatalf("err = %v, want an *UnsupportedError about %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !json.Valid(out) {
				t.Fatalf("err = %v, output %s", err, out)
			}
		})
	}
}

// TestResponsesFromAnthropic converts an Anthropic answer, plain and
// streamed, to Responses through chat and reads it with the SDK.
func TestResponsesFromAnthropic(t *testing.T) {
	req := readFile(t, "responses_req_tools.in.json")
	t.Run("plain", func(t *testing.T) {
		chat, err := AnthropicResponseToOpenAI(readFile(t, "resp_anthropic_to_openai_tools.in.json"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := OpenAIResponseToResponses(chat, req)
		if err != nil {
			t.Fatal(err)
		}
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		var calls int
		for _, item := range r.Output {
			if fc, ok := item.AsAny().(responses.ResponseFunctionToolCall); ok {
				calls++
				if !strings.HasPrefix(fc.CallID, "toolu_") || !json.Valid([]byte(fc.Arguments)) {
					t.Errorf("call %+v", fc)
				}
			}
		}
		if r.Status != "completed" || calls == 0 || r.Usage.InputTokens == 0 {
			t.Errorf("status %q, %d calls, usage %+v", r.Status, calls, r.Usage)
		}
	})
	t.Run("stream", func(t *testing.T) {
		out := convertStream(t, "stream_anthropic_to_openai_tools.in.sse", Chain(NewAnthropicToOpenAIStream(true), NewOpenAIToResponsesStream(req)))
		evs, final := sdkStream(t, out)
		if final == nil {
			t.Fatal("no final response")
		}
		text, _, _, args := deltas(evs)
		if text != "Okay, let's check the weather for San Francisco, CA:" || final.OutputText() != text {
			t.Errorf("text %q, OutputText %q", text, final.OutputText())
		}
		var calls []string
		for _, item := range final.Output {
			if fc, ok := item.AsAny().(responses.ResponseFunctionToolCall); ok {
				calls = append(calls, fc.Name+" "+fc.Arguments)
				if args[fc.ID] != fc.Arguments {
					t.Errorf("call %s: deltas %q, final %q", fc.ID, args[fc.ID], fc.Arguments)
				}
			}
		}
		want := `get_weather {"location": "San Francisco, CA", "unit": "fahrenheit"}|get_time {}`
		if strings.Join(calls, "|") != want {
			t.Errorf("calls %q, want %q", calls, want)
		}
		if final.Usage.InputTokens != 472 || final.Usage.OutputTokens != 89 {
			t.Errorf("usage %+v", final.Usage)
		}
	})
}

// TestResponsesRoundTrip feeds the output of OpenAIResponseToResponses
// back as input, as a client continuing the conversation does (with the
// results of the calls), and checks the chat history it makes: the answer's
// text and calls in one assistant message, then a tool message per call.
func TestResponsesRoundTrip(t *testing.T) {
	for _, name := range []string{"responses_resp_text", "responses_resp_tools", "responses_resp_reasoning"} {
		t.Run(name, func(t *testing.T) {
			var resp struct {
				Output []json.RawMessage `json:"output"`
			}
			if err := json.Unmarshal(readFile(t, name+".out.json"), &resp); err != nil {
				t.Fatal(err)
			}
			input := []any{map[string]string{"role": "user", "content": "q"}}
			var callIDs []string
			var text string
			for _, raw := range resp.Output {
				var it struct {
					Type    string `json:"type"`
					CallID  string `json:"call_id"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				}
				_ = json.Unmarshal(raw, &it)
				input = append(input, raw)
				switch it.Type {
				case "function_call":
					callIDs = append(callIDs, it.CallID)
				case "message":
					text = it.Content[0].Text
				}
			}
			for _, id := range callIDs {
				input = append(input, map[string]string{"type": "function_call_output", "call_id": id, "output": "ok " + id})
			}
			body, _ := json.Marshal(map[string]any{"model": "m", "input": input})
			chat, err := ResponsesRequestToOpenAI(body)
			if err != nil {
				t.Fatalf("our own output is refused as input: %v", err)
			}
			var got struct {
				Messages []struct {
					Role       string       `json:"role"`
					Content    any          `json:"content"`
					ToolCalls  []oaToolCall `json:"tool_calls"`
					ToolCallID string       `json:"tool_call_id"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(chat, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) != 2+len(callIDs) {
				t.Fatalf("%d messages, want %d: %s", len(got.Messages), 2+len(callIDs), chat)
			}
			a := got.Messages[1]
			if a.Role != "assistant" || a.Content != text || len(a.ToolCalls) != len(callIDs) {
				t.Errorf("assistant message %+v, want text %q and %d calls", a, text, len(callIDs))
			}
			for i, id := range callIDs {
				if a.ToolCalls[i].ID != id {
					t.Errorf("call %d id %q, want %q", i, a.ToolCalls[i].ID, id)
				}
				if m := got.Messages[2+i]; m.Role != "tool" || m.ToolCallID != id || m.Content != "ok "+id {
					t.Errorf("tool message %+v", m)
				}
			}
		})
	}
}
