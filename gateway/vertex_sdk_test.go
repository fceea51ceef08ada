package gateway_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/internal/gcptest"
	"github.com/switchover-gw/switchover/sim"
)

// TestVertexThroughGatewayWithSDKs: one Claude model on Anthropic
// (priority 1) and on Vertex AI (priority 2), and Gemini on Vertex, behind
// a gateway; the official OpenAI and Anthropic SDKs call both, plain and
// streamed, while Anthropic is down. Vertex's access token comes from a
// service-account file whose token endpoint is local; it is fetched once
// and never logged.
func TestVertexThroughGatewayWithSDKs(t *testing.T) {
	const token = "ya29.gateway-vertex-token-abcdef"
	acct := gcptest.NewAccount(t, token)
	s, eps := startSim(t,
		sim.Deployment{Name: "anthropic", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-gateway-000000"},
		sim.Deployment{Name: "vertex-claude", Flavour: sim.Vertex, Deployment: "claude-sonnet-4-5@20250929", Key: token, Project: "sim-project", Location: "us-east5"},
		sim.Deployment{Name: "vertex-gemini", Flavour: sim.Vertex, Deployment: "gemini-2.5-pro", Key: token, Project: "sim-project", Location: "global"})
	y := fmt.Sprintf(`log: {format: json, level: info}
server: {drain_delay: 0s}
backends:
  - {name: anthropic, type: anthropic, url: %q, api_key: sk-ant-gateway-000000}
  - {name: vertex-claude, type: vertex, url: %q, project: sim-project, location: us-east5, credentials_file: %q}
  - {name: vertex-gemini, type: vertex, url: %q, project: sim-project, credentials_file: %q}
pools:
  - name: claude-sonnet-4-5
    members:
      - {backend: anthropic, priority: 1, model: claude-sonnet-4-5}
      - {backend: vertex-claude, priority: 2, model: "claude-sonnet-4-5@20250929"}
  - name: gemini-2.5-pro
    members:
      - {backend: vertex-gemini, model: gemini-2.5-pro}
`, eps["anthropic"], eps["vertex-claude"], acct.File, eps["vertex-gemini"], acct.File)
	_, url, logs := serveYAML(t, "vertex.yaml", y, map[string]string{"access token": token})
	if err := s.SetFault("anthropic", sim.Fault{Mode: sim.FaultDown}); err != nil {
		t.Fatal(err)
	}

	oc, ac := sdkOpenAI(url), sdkAnthropic(url)
	for _, tc := range []struct{ model, backend string }{
		{"claude-sonnet-4-5", "vertex-claude"},
		{"gemini-2.5-pro", "vertex-gemini"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			p := openai.ChatCompletionNewParams{Model: tc.model, MaxTokens: openai.Int(16),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello")}}
			var raw *http.Response
			cc, err := oc.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if cc.Choices[0].Message.Content == "" || cc.Usage.TotalTokens == 0 || raw.Header.Get("X-Switchover-Backend") != tc.backend {
				t.Fatalf("openai: %+v from %s", cc, raw.Header.Get("X-Switchover-Backend"))
			}
			st := oc.Chat.Completions.NewStreaming(t.Context(), p, option.WithJSONSet("stream_options", map[string]any{"include_usage": true}))
			var acc openai.ChatCompletionAccumulator
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil || len(acc.Choices) == 0 || acc.Choices[0].Message.Content == "" || acc.Usage.TotalTokens == 0 {
				t.Fatalf("openai stream: %+v, %v", acc.ChatCompletion, err)
			}

			params := anthropic.MessageNewParams{Model: tc.model, MaxTokens: 1024,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
			msg, err := ac.Messages.New(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.OutputTokens == 0 {
				t.Fatalf("anthropic: %+v", msg)
			}
			am := readAnthropicStream(t, ac.Messages.NewStreaming(t.Context(), params))
			if len(am.Content) == 0 || am.Content[0].Text == "" || am.StopReason == "" {
				t.Fatalf("anthropic stream: %+v", am)
			}
		})
	}
	if n := acct.Requests(); n != 1 {
		t.Errorf("%d token requests; want 1, shared and cached", n)
	}
	if st := s.Stats(); st["vertex-claude"].Calls != 4 || st["vertex-gemini"].Calls != 4 {
		t.Errorf("sim stats %+v", st)
	}
	// Priced at Vertex's list prices: Claude Sonnet 4.5 at a regional
	// endpoint 10% over Anthropic's, Gemini at the global one as listed.
	priced := map[string]int{}
	perMillion := map[string][2]float64{"vertex-claude": {3.3, 16.5}, "vertex-gemini": {1.25, 10}}
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct {
			Msg, Backend string
			CostUSD      string  `json:"cost_usd"`
			Prompt       float64 `json:"prompt_tokens"`
			Completion   float64 `json:"completion_tokens"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "request" || l.Backend == "" {
			continue
		}
		pm := perMillion[l.Backend]
		cost, err := strconv.ParseFloat(l.CostUSD, 64)
		if want := (l.Prompt*pm[0] + l.Completion*pm[1]) / 1e6; err != nil || math.Abs(cost-want) > 6e-7 {
			t.Errorf("%s: cost %q for %v+%v tokens, want %.6f", l.Backend, l.CostUSD, l.Prompt, l.Completion, want)
		}
		priced[l.Backend]++
	}
	if priced["vertex-claude"] != 4 || priced["vertex-gemini"] != 4 {
		t.Errorf("priced request lines %v", priced)
	}
}
