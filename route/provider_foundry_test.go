package route

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// TestFoundryRequest: the /models root of a resource endpoint, a
// serverless endpoint's own root, the api-version query, the api-key
// header or an Entra ID token, and the extra-parameters header.
func TestFoundryRequest(t *testing.T) {
	res := parseURL(t, "https://ai-weu.services.ai.azure.com")
	tests := []struct {
		name    string
		p       *Foundry
		o       Outgoing
		wantURL string
		want    http.Header
	}{
		{"resource endpoint with key", &Foundry{Endpoint: res, APIKey: "f-1"},
			Outgoing{Op: ChatCompletions, Model: "Llama-3.3-70B-Instruct", Body: []byte(`{}`)},
			"https://ai-weu.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview",
			http.Header{"Api-Key": {"f-1"}, "Authorization": nil, "Extra-Parameters": nil}},
		{"explicit root and version", &Foundry{Endpoint: parseURL(t, "https://ai-weu.services.ai.azure.com/models/"), APIKey: "f-1", APIVersion: "2025-04-01"},
			Outgoing{Op: Embeddings, Model: "Cohere-embed-v3-english", Body: []byte(`{}`)},
			"https://ai-weu.services.ai.azure.com/models/embeddings?api-version=2025-04-01",
			http.Header{"Api-Key": {"f-1"}}},
		{"serverless endpoint", &Foundry{Endpoint: parseURL(t, "https://llama-serverless.eastus2.models.ai.azure.com"), APIKey: "f-2", ExtraParameters: "drop"},
			Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{}`)},
			"https://llama-serverless.eastus2.models.ai.azure.com/chat/completions?api-version=2024-05-01-preview",
			http.Header{"Api-Key": {"f-2"}, "Extra-Parameters": {"drop"}}},
		{"entra token and pass-through", &Foundry{Endpoint: res, APIKey: "unused", Token: fixedToken("tok-1"), ExtraParameters: "pass-through"},
			Outgoing{Op: ChatCompletions, Model: "DeepSeek-R1", Body: []byte(`{}`)},
			"https://ai-weu.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview",
			http.Header{"Authorization": {"Bearer tok-1"}, "Api-Key": nil, "Extra-Parameters": {"pass-through"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRequest(t, sent(t, tc.p, &tc.o), http.MethodPost, tc.wantURL, tc.want)
			if tc.p.Token != nil && !slices.Contains(tc.p.Credentials(), "tok-1") {
				t.Errorf("credentials %d, want the token sent among them", len(tc.p.Credentials()))
			}
		})
	}
}

// TestFoundryCallerCannotSetExtraParameters: the backend's setting wins
// over a caller's header of the same name, so no caller turns on
// pass-through where the operator chose drop.
func TestFoundryCallerCannotSetExtraParameters(t *testing.T) {
	p := &Foundry{Endpoint: parseURL(t, "https://ai-weu.services.ai.azure.com"), APIKey: "f-1", ExtraParameters: "drop"}
	req := sent(t, p, &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{}`), Header: http.Header{"Extra-Parameters": {"pass-through"}}})
	if got := req.Header.Values("Extra-Parameters"); !slices.Equal(got, []string{"drop"}) {
		t.Fatalf("extra-parameters %q, want [drop]", got)
	}
}

// TestFoundrySupports: chat completions and embeddings, nothing else.
func TestFoundrySupports(t *testing.T) {
	p := &Foundry{}
	for op, want := range map[Operation]bool{ChatCompletions: true, Embeddings: true, Completions: false, Responses: false,
		Messages: false, AudioSpeech: false, ImagesGenerations: false, Moderations: false} {
		if got := p.supports(op); got != want {
			t.Errorf("supports(%s) = %v, want %v", op, got, want)
		}
	}
	if kindOf(p) != "foundry" {
		t.Errorf("kind %q, want foundry", kindOf(p))
	}
}

// TestFoundryTokenFailureIsErrAuth: no token, no call.
func TestFoundryTokenFailureIsErrAuth(t *testing.T) {
	p := &Foundry{Endpoint: parseURL(t, "https://ai-weu.services.ai.azure.com"), Token: failingToken{}}
	_, err := p.NewRequest(t.Context(), &Outgoing{Op: ChatCompletions, Model: "m", Body: []byte(`{}`)})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("err %v, want ErrAuth", err)
	}
}

// foundryAnswer is a chat completions answer in the shape the Azure AI
// model inference API's reference documents (learn.microsoft.com, "Azure
// AI Model Inference API", Get Chat Completions): its explicit nulls
// (tool_calls, logprobs) included, and DeepSeek-R1's reasoning_content.
const foundryAnswer = `{
  "id": "0a1234b5de6789f01gh2i345j6789klm",
  "object": "chat.completion",
  "created": 1718726686,
  "model": "DeepSeek-R1",
  "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
    "message": {"role": "assistant", "content": "The capital of France is Paris.", "tool_calls": null,
      "reasoning_content": "The user asks for a capital."}}],
  "usage": {"prompt_tokens": 19, "completion_tokens": 16, "total_tokens": 35}
}`

// TestFoundryAnswerTranslated: the documented answer reaches an
// Anthropic caller through OpenAI's translation: text, DeepSeek-R1's
// reasoning as thinking, finish and usage.
func TestFoundryAnswerTranslated(t *testing.T) {
	out, err := convertResponse(translate.OpenAI, translate.Anthropic, []byte(foundryAnswer), "DeepSeek-R1", nil)
	if err != nil {
		t.Fatal(err)
	}
	var an struct {
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text, Thinking string }
		Usage      struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(out, &an); err != nil || an.StopReason != "end_turn" || an.Usage.In != 19 || an.Usage.Out != 16 {
		t.Fatalf("anthropic %s (%v)", out, err)
	}
	var text, thinking string
	for _, c := range an.Content {
		switch c.Type {
		case "text":
			text += c.Text
		case "thinking":
			thinking += c.Thinking
		}
	}
	if text != "The capital of France is Paris." || thinking != "The user asks for a capital." {
		t.Fatalf("anthropic text %q, thinking %q in %s", text, thinking, out)
	}
}
