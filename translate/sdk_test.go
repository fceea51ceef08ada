package translate

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// These tests read the converters' output with the official SDKs' own types
// and stream accumulators: what a real client would make of it.

// events parses SSE text with this package's parser.
func events(t *testing.T, sse []byte) []Event {
	t.Helper()
	var out []Event
	var p sseParser
	collect := func(e Event) error { out = append(out, e); return nil }
	if err := p.feed(sse, collect); err != nil {
		t.Fatal(err)
	}
	if err := p.flush(collect); err != nil {
		t.Fatal(err)
	}
	return out
}

func convertStream(t *testing.T, name string, c StreamConverter) []byte {
	t.Helper()
	out, err := io.ReadAll(NewReader(io.NopCloser(bytes.NewReader(readFile(t, name))), c))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSDKAccumulatesAnthropicStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		conv      StreamConverter
		wantText  string
		wantTools []string // name + input
		wantStop  anthropic.StopReason
		wantUsage [2]int64
	}{
		{"from openai", "stream_openai_to_anthropic_tools.in.sse", NewOpenAIToAnthropicStream(), "Let me look.",
			[]string{`get_current_weather {"location": "Boston, MA"}`, `get_time {}`}, anthropic.StopReasonToolUse, [2]int64{82, 17}},
		{"from gemini", "stream_chain_gemini_to_anthropic.in.sse", Chain(NewGeminiToOpenAIStream("m", true), NewOpenAIToAnthropicStream()), "Checking both cities.",
			[]string{`get_weather {"location":"Paris"}`, `get_weather {"location":"London"}`}, anthropic.StopReasonToolUse, [2]int64{60, 22}},
		{"text", "stream_openai_to_anthropic_text.in.sse", NewOpenAIToAnthropicStream(), "Hello there & <welcome>",
			nil, anthropic.StopReasonEndTurn, [2]int64{13, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msg anthropic.Message
			for _, ev := range events(t, convertStream(t, tc.in, tc.conv)) {
				var e anthropic.MessageStreamEventUnion
				if err := json.Unmarshal(ev.Data, &e); err != nil {
					t.Fatal(err)
				}
				if e.Type != ev.Name {
					t.Errorf("event name %q carries type %q", ev.Name, e.Type)
				}
				if err := msg.Accumulate(e); err != nil {
					t.Fatalf("Accumulate(%s): %v", ev.Data, err)
				}
			}
			var text strings.Builder
			var tools []string
			for _, b := range msg.Content {
				switch b.Type {
				case "text":
					text.WriteString(b.Text)
				case "tool_use":
					tools = append(tools, b.Name+" "+string(b.Input))
				}
			}
			if text.String() != tc.wantText || strings.Join(tools, "|") != strings.Join(tc.wantTools, "|") {
				t.Errorf("text %q tools %q", text.String(), tools)
			}
			if msg.StopReason != tc.wantStop || msg.Usage.InputTokens != tc.wantUsage[0] || msg.Usage.OutputTokens != tc.wantUsage[1] {
				t.Errorf("stop %q usage %d/%d", msg.StopReason, msg.Usage.InputTokens, msg.Usage.OutputTokens)
			}
		})
	}
}

func TestSDKAccumulatesOpenAIStream(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		conv       StreamConverter
		wantText   string
		wantTools  []string
		wantFinish string
		wantUsage  [2]int64
	}{
		{"from anthropic", "stream_anthropic_to_openai_tools.in.sse", NewAnthropicToOpenAIStream(true), "Okay, let's check the weather for San Francisco, CA:",
			[]string{`get_weather {"location": "San Francisco, CA", "unit": "fahrenheit"}`, `get_time `}, "tool_calls", [2]int64{472, 89}},
		{"from gemini", "stream_gemini_to_openai_tools.in.sse", NewGeminiToOpenAIStream("m", true), "Checking both cities.",
			[]string{`get_weather {"location":"Paris"}`, `get_weather {"location":"London"}`}, "tool_calls", [2]int64{60, 22}},
		{"gemini text", "stream_gemini_to_openai_text.in.sse", NewGeminiToOpenAIStream("m", true), `The opposite of "hot" is "cold".`,
			nil, "stop", [2]int64{8, 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var acc openai.ChatCompletionAccumulator
			for _, ev := range events(t, convertStream(t, tc.in, tc.conv)) {
				if string(ev.Data) == "[DONE]" {
					continue
				}
				var c openai.ChatCompletionChunk
				if err := json.Unmarshal(ev.Data, &c); err != nil {
					t.Fatal(err)
				}
				if !acc.AddChunk(c) {
					t.Fatalf("the accumulator refused %s", ev.Data)
				}
			}
			if len(acc.Choices) != 1 {
				t.Fatalf("%d choices", len(acc.Choices))
			}
			m := acc.Choices[0].Message
			var tools []string
			for _, tc := range m.ToolCalls {
				tools = append(tools, tc.Function.Name+" "+tc.Function.Arguments)
				if !strings.HasPrefix(tc.ID, "call_") && !strings.HasPrefix(tc.ID, "toolu_") {
					t.Errorf("tool call id %q", tc.ID)
				}
			}
			if m.Content != tc.wantText || strings.Join(tools, "|") != strings.Join(tc.wantTools, "|") {
				t.Errorf("content %q tools %q", m.Content, tools)
			}
			if acc.Choices[0].FinishReason != tc.wantFinish || acc.Usage.PromptTokens != tc.wantUsage[0] || acc.Usage.CompletionTokens != tc.wantUsage[1] {
				t.Errorf("finish %q usage %d/%d", acc.Choices[0].FinishReason, acc.Usage.PromptTokens, acc.Usage.CompletionTokens)
			}
		})
	}
}

// TestSDKReadsRequests decodes the converted requests with the SDKs'
// request types and encodes them again. OpenAI's params survive the round
// trip whole. Anthropic's SDK does not decode its optional numbers back and
// writes a tool_result's text as a block, so there every member we wrote
// must still be there, and the messages the same in number and roles.
func TestSDKReadsRequests(t *testing.T) {
	for _, name := range []string{"req_openai_to_anthropic_system", "req_openai_to_anthropic_tools", "req_openai_to_anthropic_images", "anth_req_reasoning_to_anthropic"} {
		t.Run(name, func(t *testing.T) {
			ours := readFile(t, name+".out.json")
			var p anthropic.MessageNewParams
			if err := json.Unmarshal(ours, &p); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]json.RawMessage
			_ = json.Unmarshal(ours, &want)
			_ = json.Unmarshal(again, &got)
			for k := range want {
				switch k {
				case "stream", "temperature", "top_p": // chosen by the method; not decoded by the SDK
					continue
				}
				if _, ok := got[k]; !ok {
					t.Errorf("the SDK lost %q: %s", k, again)
				}
			}
			if len(p.Messages) == 0 || len(p.Messages) != strings.Count(string(want["messages"]), `"role"`) {
				t.Errorf("the SDK read %d messages from %s", len(p.Messages), want["messages"])
			}
			for i, m := range p.Messages {
				if user := i%2 == 0; (m.OfUser != nil) != user || (m.OfAssistant != nil) == user {
					t.Errorf("message %d is not from the %s", i, map[bool]string{true: "user", false: "assistant"}[user])
				}
			}
		})
	}
	for _, name := range []string{"req_anthropic_to_openai_system", "req_anthropic_to_openai_tools"} {
		t.Run(name, func(t *testing.T) {
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
			want, _ = json.Marshal(m)
			if !sameJSON(t, got, want) {
				t.Errorf("the SDK read\n%s\nas\n%s", want, got)
			}
		})
	}
}

func TestSDKReadsResponses(t *testing.T) {
	var msg anthropic.Message
	if err := json.Unmarshal(readFile(t, "resp_openai_to_anthropic_tools.out.json"), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[0].AsToolUse().Name != "get_weather" {
		t.Errorf("message %+v", msg)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(readFile(t, "resp_gemini_to_openai_tools.out.json"), &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices) != 1 || len(cc.Choices[0].Message.ToolCalls) != 3 || cc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("completion %+v", cc)
	}
}

// TestSDKReadsThinkingAndUsage decodes translated Messages and streams with
// anthropic-sdk-go: the thinking block with its empty signature, the whole
// usage, the stop reason and the null members.
func TestSDKReadsThinkingAndUsage(t *testing.T) {
	stream := func(name string, opt AnthropicStreamOptions) anthropic.Message {
		t.Helper()
		var msg anthropic.Message
		for _, ev := range events(t, convertStream(t, name, NewOpenAIToAnthropicStreamWith(opt))) {
			var e anthropic.MessageStreamEventUnion
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				t.Fatal(err)
			}
			if e.Type == "message_start" && e.Message.Usage.InputTokens != int64(opt.InputTokens) {
				t.Errorf("message_start input_tokens %d, want the estimate %d", e.Message.Usage.InputTokens, opt.InputTokens)
			}
			if err := msg.Accumulate(e); err != nil {
				t.Fatalf("Accumulate(%s): %v", ev.Data, err)
			}
		}
		return msg
	}
	decode := func(name string) anthropic.Message {
		t.Helper()
		var msg anthropic.Message
		if err := json.Unmarshal(readFile(t, name), &msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	type usage struct{ in, out, cacheRead, cacheWrite, thinking int64 }
	for _, tc := range []struct {
		name     string
		msg      anthropic.Message
		thinking string
		text     string
		stop     anthropic.StopReason
		usage    usage
		tier     anthropic.UsageServiceTier
	}{
		{name: "response", msg: decode("anth_resp_reasoning_to_anthropic.out.json"), thinking: "2+2 is 4.", text: "4",
			stop: anthropic.StopReasonEndTurn, usage: usage{176, 30, 1024, 0, 25}, tier: anthropic.UsageServiceTierPriority},
		{name: "stream", msg: stream("anth_stream_reasoning_to_anthropic.in.sse", AnthropicStreamOptions{InputTokens: 150}), thinking: "The user greets me.", text: "Hello!",
			stop: anthropic.StopReasonEndTurn, usage: usage{12, 12, 128, 0, 8}, tier: anthropic.UsageServiceTierStandard},
		{name: "stream usage replaces the estimate", msg: stream("stream_openai_to_anthropic_tools.in.sse", AnthropicStreamOptions{InputTokens: 77}), text: "Let me look.",
			stop: anthropic.StopReasonToolUse, usage: usage{82, 17, 0, 0, 0}, tier: anthropic.UsageServiceTierStandard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.msg
			var thinking, text strings.Builder
			for i, b := range m.Content {
				switch b.Type {
				case "thinking":
					if i != 0 {
						t.Errorf("thinking block at %d, want it first", i)
					}
					th := b.AsThinking()
					thinking.WriteString(th.Thinking)
					if !th.JSON.Signature.Valid() || th.Signature != "" {
						t.Errorf("signature %q (present %v), want an empty string", th.Signature, th.JSON.Signature.Valid())
					}
				case "text":
					text.WriteString(b.AsText().Text)
				}
			}
			if thinking.String() != tc.thinking || text.String() != tc.text {
				t.Errorf("thinking %q text %q", thinking.String(), text.String())
			}
			u := m.Usage
			got := usage{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokensDetails.ThinkingTokens}
			if m.StopReason != tc.stop || got != tc.usage {
				t.Errorf("stop %q usage %+v, want %q %+v", m.StopReason, got, tc.stop, tc.usage)
			}
			if u.ServiceTier != tc.tier || !u.JSON.CacheCreation.Valid() || !u.JSON.ServerToolUse.Valid() || u.ServerToolUse.WebSearchRequests != 0 {
				t.Errorf("usage %s", u.RawJSON())
			}
			if m.StopSequence != "" || m.StopDetails.Type != "" || m.Container.ID != "" {
				t.Errorf("stop_sequence %q stop_details %q container %q, want nulls", m.StopSequence, m.StopDetails.Type, m.Container.ID)
			}
		})
	}
}

// TestSDKReadsReasoning checks that the OpenAI SDK still reads a completion
// and chunks carrying reasoning_content, and keeps the member for a client
// that looks for it.
func TestSDKReadsReasoning(t *testing.T) {
	var cc openai.ChatCompletion
	if err := json.Unmarshal(readFile(t, "anth_resp_thinking_to_openai.out.json"), &cc); err != nil {
		t.Fatal(err)
	}
	m := cc.Choices[0].Message
	if m.Content != "4" || m.JSON.ExtraFields["reasoning_content"].Raw() != `"The user wants 2+2. That is 4."` || cc.Usage.CompletionTokensDetails.ReasoningTokens != 50 {
		t.Errorf("message %s usage %s", m.RawJSON(), cc.Usage.RawJSON())
	}
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	for _, ev := range events(t, convertStream(t, "anth_stream_thinking_to_openai.in.sse", NewAnthropicToOpenAIStream(true))) {
		if string(ev.Data) == "[DONE]" {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatal(err)
		}
		if !acc.AddChunk(c) {
			t.Fatalf("the accumulator refused %s", ev.Data)
		}
		if len(c.Choices) > 0 {
			var s string
			if f, ok := c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
					t.Fatal(err)
				}
			}
			reasoning.WriteString(s)
		}
	}
	if reasoning.String() != "Two plus two is four." || acc.Choices[0].Message.Content != "4" || acc.Usage.CompletionTokensDetails.ReasoningTokens != 35 {
		t.Errorf("reasoning %q content %q usage %+v", reasoning.String(), acc.Choices[0].Message.Content, acc.Usage)
	}
}
