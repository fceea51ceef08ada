package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/switchover-gw/switchover/sim"
)

// foundryChatGolden is the chat completion of the Azure AI model
// inference API's reference (a Llama model's answer), as Microsoft's
// documentation shows it.
const foundryChatGolden = `{
  "id": "0a1234b5de6789f01gh2i345j6789klm",
  "object": "chat.completion",
  "created": 1718726686,
  "model": "Meta-Llama-3.1-405B-Instruct",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "As of now, it's estimated that there are about 7,000 languages spoken around the world.", "tool_calls": null}, "finish_reason": "stop", "logprobs": null}],
  "usage": {"prompt_tokens": 19, "total_tokens": 91, "completion_tokens": 72}
}`

// TestFoundryThroughTheEngine: an OpenAI client's chat and embeddings and
// an Anthropic client's messages reach a simulated Foundry resource's
// /models API with the api-key, the deployment as the body's model and
// the api-version.
func TestFoundryThroughTheEngine(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "foundry", Flavour: sim.Azure, Deployment: "Llama-3.3-70B-Instruct", Key: "foundry-key-0000000"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sv := serveConfig(t, fmt.Sprintf(`backends:
  - {name: foundry, type: foundry, url: %q, api_key: foundry-key-0000000, extra_parameters: drop}
pools:
  - name: llama
    aliases: [claude-sonnet-4-5, emb]
    members: [{backend: foundry, model: Llama-3.3-70B-Instruct}]
`, s.Deployments()[0].URL+"/models"), nil)
	ctx := t.Context()
	oc, ac := sv.openai(), sv.anthropic()
	c, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "llama",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content == "" || c.Usage.TotalTokens == 0 {
		t.Fatalf("chat %+v", c)
	}
	e, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "emb",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if err != nil || len(e.Data) != 1 {
		t.Fatalf("embeddings %v %+v", err, e)
	}
	m, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || len(m.Content) == 0 || m.Content[0].Text == "" {
		t.Fatalf("messages %v %+v", err, m)
	}
	if strings.Contains(sv.logs.String(), "foundry-key-0000000") {
		t.Error("the backend key is in the log")
	}
}

// TestFoundryGoldenAnswerAndUnknownModel: against a scripted Foundry
// resource, the request carries the api-key, the extra-parameters setting
// and the member's model; the documented answer reaches an OpenAI client
// as it is and an Anthropic client translated; a 400 unknown_model on
// chat (the member's deployment does not exist) fails over to the next
// member, as Azure's 404 DeploymentNotFound does.
func TestFoundryGoldenAnswerAndUnknownModel(t *testing.T) {
	var bad atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path != "/models/chat/completions" || r.URL.RawQuery != "api-version=2024-05-01-preview":
			http.Error(w, "path "+r.URL.String(), http.StatusTeapot)
		case r.Header.Get("Api-Key") != "f-key-1" || r.Header.Get("Extra-Parameters") != "pass-through" || r.Header.Get("Authorization") != "":
			http.Error(w, "headers", http.StatusTeapot)
		case strings.Contains(string(body), `"model":"Phi-9"`):
			bad.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":"unknown_model","message":"Unknown model: Phi-9","details":"Model Phi-9 is not found"}}`)
		case !strings.Contains(string(body), `"model":"Meta-Llama-3.1-405B-Instruct"`):
			http.Error(w, "model "+string(body), http.StatusTeapot)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, foundryChatGolden)
		}
	}))
	t.Cleanup(up.Close)
	sv := serveConfig(t, fmt.Sprintf(`backends:
  - {name: wrong, type: foundry, url: %[1]q, api_key: f-key-1, extra_parameters: pass-through}
  - {name: right, type: foundry, url: %[1]q, api_key: f-key-1, extra_parameters: pass-through}
pools:
  - name: llama
    aliases: [claude-sonnet-4-5]
    members:
      - {backend: wrong, priority: 1, model: Phi-9}
      - {backend: right, priority: 2, model: Meta-Llama-3.1-405B-Instruct}
`, up.URL+"/models"), nil)
	status, h, body := sv.post(t, "llama", "")
	if status != http.StatusOK || h.Get("X-Switchover-Backend") != "right" {
		t.Fatalf("%d from %q: %s", status, h.Get("X-Switchover-Backend"), body)
	}
	if !strings.Contains(body, "about 7,000 languages") || !strings.Contains(body, `"total_tokens": 91`) {
		t.Fatalf("answer %s", body)
	}
	if bad.Load() != 1 {
		t.Fatalf("unknown model asked %d times, want 1", bad.Load())
	}
	ac := sv.anthropic()
	m, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many languages are in the world?"))}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || !strings.Contains(m.Content[0].Text, "about 7,000 languages") ||
		m.Usage.InputTokens != 19 || m.Usage.OutputTokens != 72 || m.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("messages %+v", m)
	}
	if bad.Load() != 1 {
		t.Fatalf("the benched member was asked again: %d", bad.Load())
	}
}
