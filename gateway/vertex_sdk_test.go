package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
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
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "anthropic", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-gateway-000000"},
		{Name: "vertex-claude", Flavour: sim.Vertex, Deployment: "claude-sonnet-4-5@20250929", Key: token, Project: "sim-project", Location: "us-east5"},
		{Name: "vertex-gemini", Flavour: sim.Vertex, Deployment: "gemini-2.5-pro", Key: token, Project: "sim-project", Location: "global"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eps := s.Deployments()
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
`, eps[0].URL, eps[1].URL, acct.File, eps[2].URL, acct.File)
	cfg, err := config.Parse("vertex.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	logs := &syncBuffer{}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logs, "json", "info")})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + ln.Addr().String()
	if err := s.SetFault("anthropic", sim.Fault{Mode: sim.FaultDown}); err != nil {
		t.Fatal(err)
	}

	oc := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ac := anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
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
			as := ac.Messages.NewStreaming(t.Context(), params)
			var am anthropic.Message
			for as.Next() {
				if err := am.Accumulate(as.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := as.Err(); err != nil || len(am.Content) == 0 || am.Content[0].Text == "" || am.StopReason == "" {
				t.Fatalf("anthropic stream: %+v, %v", am, err)
			}
		})
	}
	if n := acct.Requests(); n != 1 {
		t.Errorf("%d token requests; want 1, shared and cached", n)
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the access token is in the log")
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
