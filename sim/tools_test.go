package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

func TestToolArguments(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"every type, in required order", `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"a":{"type":"array","items":{"type":"string"}},"o":{"type":"object"}},"required":["o","a","b","i","n","s"]}`,
			`{"o":{},"a":[],"b":true,"i":1,"n":1,"s":"x"}`},
		{"optional properties left out", `{"type":"object","properties":{"s":{"type":"string"},"opt":{"type":"string"}},"required":["s"]}`, `{"s":"x"}`},
		{"no required", `{"type":"object","properties":{"s":{"type":"string"}}}`, `{}`},
		{"enum takes its first value", `{"properties":{"u":{"type":"string","enum":["celsius","fahrenheit"]},"k":{"enum":[3,4]}},"required":["u","k"]}`, `{"u":"celsius","k":3}`},
		{"gemini upper-case types", `{"type":"OBJECT","properties":{"s":{"type":"STRING"},"i":{"type":"INTEGER"}},"required":["s","i"]}`, `{"s":"x","i":1}`},
		{"nullable type list", `{"properties":{"s":{"type":["null","string"]}},"required":["s"]}`, `{"s":"x"}`},
		{"anyOf", `{"properties":{"v":{"anyOf":[{"type":"null"},{"type":"integer"}]}},"required":["v"]}`, `{"v":1}`},
		{"unknown or missing property", `{"properties":{"r":{"$ref":"#/$defs/x"}},"required":["r","missing"]}`, `{"r":null,"missing":null}`},
		{"duplicate required", `{"properties":{"s":{"type":"string"}},"required":["s","s"]}`, `{"s":"x"}`},
		{"key needing escapes", `{"properties":{"a\"b":{"type":"boolean"}},"required":["a\"b"]}`, `{"a\"b":true}`},
		{"no schema", ``, `{}`},
		{"not a schema", `[1,2]`, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := toolArguments(json.RawMessage(tc.schema))
			if got != tc.want {
				t.Errorf("toolArguments = %s, want %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not valid JSON", got)
			}
		})
	}
}

func TestToolCallFragments(t *testing.T) {
	tc := &toolCall{args: `{"city":"Zürich"}`}
	frags := tc.fragments()
	if strings.Join(frags, "") != tc.args {
		t.Fatalf("fragments %q do not join to %q", frags, tc.args)
	}
	for _, f := range frags[:len(frags)-1] {
		if n := len([]rune(f)); n != 4 {
			t.Errorf("fragment %q has %d runes, want 4", f, n)
		}
	}
}

func TestChooseTool(t *testing.T) {
	tools := []toolSpec{{name: "a"}, {name: "b"}}
	tests := []struct {
		name     string
		tools    []toolSpec
		forbid   bool
		forced   string
		userLast bool
		want     string // "" for no call
		wantErr  bool
	}{
		{"first offered", tools, false, "", true, "a", false},
		{"forced", tools, false, "b", true, "b", false},
		{"forbidden", tools, true, "", true, "", false},
		{"after a tool result", tools, false, "b", false, "", false},
		{"no tools", nil, false, "", true, "", false},
		{"forced tool not offered", tools, false, "c", true, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseTool(tc.tools, tc.forbid, tc.forced, tc.userLast)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			name := ""
			if got != nil {
				name = got.name
			}
			if name != tc.want {
				t.Errorf("picked %q, want %q", name, tc.want)
			}
		})
	}
}

// weatherFunction is the OpenAI form of the weather tool.
func weatherFunction() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: openai.FunctionParameters{
			"type": "object",
			"properties": map[string]any{
				"location": map[string]any{"type": "string"},
				"unit":     map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				"days":     map[string]any{"type": "integer"},
				"detailed": map[string]any{"type": "boolean"},
			},
			"required": []string{"location", "unit", "days"},
		},
	})
}

func TestChatToolCallsThroughClient(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, nil))
			ep := s.Deployments()[0]
			client := newClient(ep)
			ctx := context.Background()
			p := chatParams(ep, "what is the weather?", 0)
			p.Tools = []openai.ChatCompletionToolUnionParam{weatherFunction()}

			checkCall := func(t *testing.T, id, name, args string) {
				t.Helper()
				if !strings.HasPrefix(id, "call_") || len(id) != len("call_")+24 || name != "get_weather" {
					t.Errorf("tool call id %q name %q", id, name)
				}
				var got, want map[string]any
				if err := json.Unmarshal([]byte(args), &got); err != nil {
					t.Fatalf("arguments %q: %v", args, err)
				}
				_ = json.Unmarshal([]byte(weatherArgs), &want)
				if !equalJSON(got, want) {
					t.Errorf("arguments = %s, want %s", args, weatherArgs)
				}
			}

			t.Run("plain, then the tool result", func(t *testing.T) {
				c, err := client.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				ch := c.Choices[0]
				if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
					t.Fatalf("choice = %s, want one tool call and finish_reason tool_calls", ch.RawJSON())
				}
				if !strings.Contains(ch.RawJSON(), `"content":null`) {
					t.Errorf("content not null: %s", ch.RawJSON())
				}
				call := ch.Message.ToolCalls[0]
				if call.Type != "function" {
					t.Errorf("type %q", call.Type)
				}
				checkCall(t, call.ID, call.Function.Name, call.Function.Arguments)
				if c.Usage.CompletionTokens != int64(len((&toolCall{args: weatherArgs}).fragments())) {
					t.Errorf("completion tokens %d", c.Usage.CompletionTokens)
				}

				follow := p
				follow.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, p.Messages...),
					ch.Message.ToParam(), openai.ToolMessage("sunny, 21 degrees", call.ID))
				reply, err := client.Chat.Completions.New(ctx, follow)
				if err != nil {
					t.Fatal(err)
				}
				if r := reply.Choices[0]; r.FinishReason != "stop" || len(r.Message.ToolCalls) != 0 || len(strings.Fields(r.Message.Content)) != DefaultReplyTokens {
					t.Errorf("after the tool result: %s, want text", r.RawJSON())
				}
			})
			t.Run("streamed", func(t *testing.T) {
				stream := client.Chat.Completions.NewStreaming(ctx, p)
				var acc openai.ChatCompletionAccumulator
				finished := false
				for stream.Next() {
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("accumulator rejected %s", stream.Current().RawJSON())
					}
					if tc, ok := acc.JustFinishedToolCall(); ok {
						finished = true
						checkCall(t, tc.ID, tc.Name, tc.Arguments)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				ch := acc.Choices[0]
				if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
					t.Fatalf("accumulated %+v", ch)
				}
				call := ch.Message.ToolCalls[0]
				checkCall(t, call.ID, call.Function.Name, call.Function.Arguments)
				if !finished {
					t.Error("the accumulator never reported the finished tool call")
				}
			})
			t.Run("tool_choice none", func(t *testing.T) {
				q := p
				q.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")}
				c, err := client.Chat.Completions.New(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if ch := c.Choices[0]; ch.FinishReason != "stop" || len(ch.Message.ToolCalls) != 0 {
					t.Errorf("tool_choice none: %s", ch.RawJSON())
				}
			})
			t.Run("forced function", func(t *testing.T) {
				q := p
				q.Tools = append([]openai.ChatCompletionToolUnionParam{}, p.Tools...)
				q.Tools = append(q.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
					Name:       "lookup",
					Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}},
				}))
				q.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfFunctionToolChoice: &openai.ChatCompletionNamedToolChoiceParam{
					Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "lookup"},
				}}
				c, err := client.Chat.Completions.New(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if calls := c.Choices[0].Message.ToolCalls; len(calls) != 1 || calls[0].Function.Name != "lookup" || calls[0].Function.Arguments != `{"q":"x"}` {
					t.Errorf("forced: %s", c.Choices[0].RawJSON())
				}
			})
		})
	}
}

func TestChatToolChoiceNamesUnknownFunction(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, chatPath(ep), `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}],
		"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"type":"invalid_request_error"`) {
		t.Errorf("%d %s, want 400 invalid_request_error", resp.StatusCode, b)
	}
}

// Regression: adding tool calls must not change the answers to requests
// that offer no tools. The digests were taken from the sim before tool
// calling existed (seed 1, deployment d1, prompt "hello"); the members
// added since for the published schemas (a message's annotations, usage's
// details) are taken out before the plain answer is hashed, so the words,
// ids and the rest stay pinned.
func TestTextAnswersUnchangedByToolSupport(t *testing.T) {
	want := map[Flavour][2]string{
		OpenAI: {"6549bd908acadcbfee3e42071d6350500213b904d4ac4c8ceeac296a7dfca104", "d92a84ac77101350119ee6563b36db76a40f8c998c080672a4f37bef4404a643"},
		Azure:  {"81c6ed873436400d68512bcca16cbdc16259b4f3e473f331389bada45db47eba", "c8d89194eda5b54779d50a2c7500573e5c32f9ba8b04ee7d234933ac5ba72ba7"},
	}
	for fl, digests := range want {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, nil))
			ep := s.Deployments()[0]
			_, plain := chat(t, ep, "hello", 0)
			_, streamed := do(t, http.MethodPost, chatPath(ep), streamBody(ep), nil)
			plain = bytes.Replace(plain, []byte(`,"annotations":[]`), nil, 1)
			plain = bytes.Replace(plain, []byte(`,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`), nil, 1)
			if got := sha256Hex(plain); got != digests[0] {
				t.Errorf("plain answer changed: sha256 %s, want %s\n%s", got, digests[0], plain)
			}
			if got := sha256Hex(streamed); got != digests[1] {
				t.Errorf("streamed answer changed: sha256 %s, want %s", got, digests[1])
			}
		})
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
