package gateway_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchover-gw/switchover/sim"
)

const (
	bedrockAKID   = "AKIDBEDROCKSIM0000"
	bedrockSecret = "bedrock-sim-secret-0000000000"
	bedrockModel  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// startBedrockFailover starts Anthropic (down: every call a 500) and
// Bedrock in the simulator, the Converse API and InvokeModel, and a
// gateway whose pool claude-sonnet-4-5 has Anthropic first and Bedrock
// second, pool invoke Bedrock's InvokeModel alone. secret is the secret
// the gateway signs with.
func startBedrockFailover(t *testing.T, secret string) string {
	t.Helper()
	key := bedrockAKID + ":" + bedrockSecret
	s, eps := startSim(t,
		sim.Deployment{Name: "claude", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-000000000000"},
		sim.Deployment{Name: "bedrock", Flavour: sim.Bedrock, Region: "us-east-1", Deployment: bedrockModel, Key: key},
		sim.Deployment{Name: "bedrock-invoke", Flavour: sim.Bedrock, Region: "us-west-2", Deployment: bedrockModel, Key: key})
	if err := s.SetFault("claude", sim.Fault{Mode: sim.FaultError500}); err != nil {
		t.Fatal(err)
	}
	yml := fmt.Sprintf(`log: {format: json, level: info}
server: {drain_delay: 0s}
backends:
  - {name: claude, type: anthropic, url: %q, api_key: sk-ant-000000000000}
  - {name: bedrock, type: bedrock, url: %q, region: us-east-1, aws: {access_key_id: %s, secret_access_key: %q}}
  - {name: bedrock-invoke, type: bedrock, url: %q, region: us-west-2, aws: {access_key_id: %s, secret_access_key: %q, api: invoke}}
pools:
  - name: claude-sonnet-4-5
    retry: {attempts: 3}
    members:
      - {backend: claude, priority: 1, model: claude-sonnet-4-5}
      - {backend: bedrock, priority: 2, model: %s}
  - name: invoke
    members: [{backend: bedrock-invoke, model: %s}]
`, eps["claude"], eps["bedrock"], bedrockAKID, secret, eps["bedrock-invoke"], bedrockAKID, secret, bedrockModel, bedrockModel)
	_, url, _ := serveYAML(t, "bedrock.yaml", yml, map[string]string{"AWS secret it signs with": secret, "AWS secret of Bedrock": bedrockSecret})
	return url
}

// TestBedrockThroughTheSDKs: with Anthropic down, the official OpenAI
// and Anthropic SDKs get their answers from Bedrock (Converse and
// ConverseStream, signed and verified by the simulator) in their own
// formats, streamed or not; InvokeModel serves Claude's native body.
func TestBedrockThroughTheSDKs(t *testing.T) {
	url := startBedrockFailover(t, bedrockSecret)
	oc, ac := sdkOpenAI(url), sdkAnthropic(url)
	chat := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	msg := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 16, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
	backend := func(raw *http.Response) string { return raw.Header.Get("X-Switchover-Backend") }

	t.Run("openai chat", func(t *testing.T) {
		var raw *http.Response
		c, err := oc.Chat.Completions.New(t.Context(), chat, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if backend(raw) != "bedrock" || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" || c.Choices[0].FinishReason != "stop" || c.Usage.CompletionTokens == 0 {
			t.Fatalf("from %q: %+v", backend(raw), c)
		}
	})
	t.Run("openai chat stream", func(t *testing.T) {
		var raw *http.Response
		s := oc.Chat.Completions.NewStreaming(t.Context(), chat, option.WithResponseInto(&raw))
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if backend(raw) != "bedrock" || len(acc.Choices) == 0 || acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason == "" {
			t.Fatalf("from %q: %+v", backend(raw), acc)
		}
	})
	t.Run("responses stream", func(t *testing.T) {
		s := oc.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "claude-sonnet-4-5", Store: openai.Bool(false),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
		text, completed := "", false
		for s.Next() {
			switch ev := s.Current(); ev.Type {
			case "response.output_text.delta":
				text += ev.Delta
			case "response.completed":
				completed = true
			}
		}
		if err := s.Err(); err != nil || !completed || text == "" {
			t.Fatalf("text %q, completed %v, err %v", text, completed, err)
		}
	})
	for _, pool := range []string{"claude-sonnet-4-5", "invoke"} {
		t.Run("anthropic messages via "+pool, func(t *testing.T) {
			p := msg
			p.Model = anthropic.Model(pool)
			var raw *http.Response
			m, err := ac.Messages.New(t.Context(), p, aoption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(backend(raw), "bedrock") || len(m.Content) == 0 || m.Content[0].Text == "" || m.StopReason == "" || m.Usage.OutputTokens == 0 {
				t.Fatalf("from %q: %+v", backend(raw), m)
			}
		})
		t.Run("anthropic stream via "+pool, func(t *testing.T) {
			p := msg
			p.Model = anthropic.Model(pool)
			var raw *http.Response
			m := readAnthropicStream(t, ac.Messages.NewStreaming(t.Context(), p, aoption.WithResponseInto(&raw)))
			if !strings.HasPrefix(backend(raw), "bedrock") || len(m.Content) == 0 || m.Content[0].Text == "" || m.StopReason == "" || m.Usage.OutputTokens == 0 {
				t.Fatalf("from %q: %+v", backend(raw), m)
			}
		})
	}
}

// TestBedrockWrongSecretIsRefused: signed with the wrong secret, Bedrock
// (the simulator) refuses the call; the caller, whose own key is not at
// fault, gets a 502 in its own format that does not show the secret.
func TestBedrockWrongSecretIsRefused(t *testing.T) {
	url := startBedrockFailover(t, "not-the-secret")
	oc := sdkOpenAI(url)
	_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "invoke",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var apiErr *openai.Error
	if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || strings.Contains(err.Error(), "not-the-secret") {
		t.Fatalf("err = %v", err)
	}
	t.Logf("the caller reads: %v", err)
}
