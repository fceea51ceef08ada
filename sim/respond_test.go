package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func TestChatCompletionThroughClient(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		maxTokens  int64
		wantWords  int
		wantFinish string
	}{
		{"azure default length", Azure, 0, DefaultReplyTokens, "stop"},
		{"azure cut by max_tokens", Azure, 5, 5, "length"},
		{"azure max_tokens above the reply", Azure, 50, DefaultReplyTokens, "stop"},
		{"openai default length", OpenAI, 0, DefaultReplyTokens, "stop"},
		{"openai cut by max_tokens", OpenAI, 7, 7, "length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Key = "secret-key-123" }))
			ep := s.Deployments()[0]
			var raw *http.Response
			client := newClient(ep, option.WithResponseInto(&raw))
			prompt := "What is the capital of France?" // 30 chars: 8 tokens
			got, err := client.Chat.Completions.New(context.Background(), chatParams(ep, prompt, tc.maxTokens))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Created == 0 || got.Model == "" {
				t.Errorf("header fields: id %q object %q created %d model %q", got.ID, got.Object, got.Created, got.Model)
			}
			if len(got.Choices) != 1 {
				t.Fatalf("%d choices, want 1", len(got.Choices))
			}
			c := got.Choices[0]
			if c.Message.Role != "assistant" || c.FinishReason != tc.wantFinish {
				t.Errorf("role %q finish %q, want assistant and %q", c.Message.Role, c.FinishReason, tc.wantFinish)
			}
			if n := len(strings.Fields(c.Message.Content)); n != tc.wantWords {
				t.Errorf("content has %d words, want %d: %q", n, tc.wantWords, c.Message.Content)
			}
			u := got.Usage
			if u.PromptTokens != 8 || u.CompletionTokens != int64(tc.wantWords) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage = %+v, want prompt 8, completion %d", u, tc.wantWords)
			}
			if !strings.Contains(got.RawJSON(), `"system_fingerprint":"fp_`) {
				t.Error("system_fingerprint missing")
			}
			fields := got.JSON.ExtraFields
			_, hasPromptFilter := fields["prompt_filter_results"]
			_, hasChoiceFilter := c.JSON.ExtraFields["content_filter_results"]
			if hasPromptFilter != (tc.fl == Azure) || hasChoiceFilter != (tc.fl == Azure) {
				t.Errorf("prompt_filter_results %v, content_filter_results %v; want both only for azure", hasPromptFilter, hasChoiceFilter)
			}
			if tc.fl == Azure && raw.Header.Get("x-ms-region") != "testregion" {
				t.Errorf("x-ms-region = %q", raw.Header.Get("x-ms-region"))
			}
		})
	}
}

func TestWrongKeyIs401(t *testing.T) {
	tests := []struct {
		name     string
		fl       Flavour
		hdr      map[string]string
		wantCode string
		wantMsg  string
	}{
		{"azure missing", Azure, nil, "401", "Access denied due to invalid subscription key"},
		{"azure wrong", Azure, map[string]string{"api-key": "nope"}, "401", "Access denied due to invalid subscription key"},
		{"openai missing", OpenAI, nil, "", "You didn't provide an API key."},
		{"openai wrong", OpenAI, map[string]string{"Authorization": "Bearer sk-wrong-key-0000"}, "invalid_api_key", "Incorrect API key provided: sk-****0000."},
		{"openai api-key header not accepted", OpenAI, map[string]string{"api-key": "right"}, "", "You didn't provide an API key."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Key = "right" }))
			ep := s.Deployments()[0]
			resp, b := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, "hi", 3), tc.hdr)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", resp.StatusCode, b)
			}
			var body struct {
				Error struct {
					Code    *string `json:"code"`
					Message string  `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			code := ""
			if body.Error.Code != nil {
				code = *body.Error.Code
			}
			if code != tc.wantCode || !strings.Contains(body.Error.Message, tc.wantMsg) {
				t.Errorf("body %s, want code %q and message containing %q", b, tc.wantCode, tc.wantMsg)
			}
			if st := s.Stats()["d1"]; st.Rejected != 1 {
				t.Errorf("rejected = %d, want 1", st.Rejected)
			}
		})
	}
}

func TestRightKeyAccepted(t *testing.T) {
	tests := []struct {
		name string
		fl   Flavour
		hdr  map[string]string
	}{
		{"azure api-key", Azure, map[string]string{"api-key": "right"}},
		{"azure bearer", Azure, map[string]string{"Authorization": "Bearer right"}},
		{"openai bearer", OpenAI, map[string]string{"Authorization": "Bearer right"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Key = "right" }))
			ep := s.Deployments()[0]
			if resp, b := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, "hi", 3), tc.hdr); resp.StatusCode != http.StatusOK {
				t.Errorf("status %d: %s", resp.StatusCode, b)
			}
		})
	}
}

func TestEmbeddingsThroughClient(t *testing.T) {
	for _, fl := range []Flavour{Azure, OpenAI} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Reply.EmbeddingDimensions = 64 }))
			ep := s.Deployments()[0]
			client := newClient(ep)
			ctx := context.Background()
			res, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
				Model: ep.Deployment,
				Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first input", "second input", "first input"}},
			})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if res.Object != "list" || len(res.Data) != 3 {
				t.Fatalf("object %q with %d items, want list of 3", res.Object, len(res.Data))
			}
			for i, e := range res.Data {
				if e.Index != int64(i) || len(e.Embedding) != 64 {
					t.Errorf("item %d: index %d, %d dims", i, e.Index, len(e.Embedding))
				}
				var sum float64
				for _, x := range e.Embedding {
					sum += x * x
				}
				if math.Abs(sum-1) > 1e-3 {
					t.Errorf("item %d: |v|^2 = %g, want 1", i, sum)
				}
			}
			if !equalFloats(res.Data[0].Embedding, res.Data[2].Embedding) || equalFloats(res.Data[0].Embedding, res.Data[1].Embedding) {
				t.Error("equal inputs should get equal vectors, different inputs different ones")
			}
			if res.Usage.PromptTokens != 9 || res.Usage.TotalTokens != 9 { // 3+3+3
				t.Errorf("usage = %+v, want 9 prompt tokens", res.Usage)
			}
			b64, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
				Model: ep.Deployment, Dimensions: openai.Int(8),
				EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
				Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String("first input")},
			})
			if err != nil {
				t.Fatalf("base64: %v", err)
			}
			if len(b64.Data) != 1 || len(b64.Data[0].Embedding) != 8 {
				t.Fatalf("base64 answer: %+v", b64.Data)
			}
			want := embedding("first input", 8)
			for i, x := range b64.Data[0].Embedding {
				if float32(x) != want[i] {
					t.Fatalf("base64 vector[%d] = %g, want %g", i, x, want[i])
				}
			}
		})
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCompletionsThroughClient(t *testing.T) {
	for _, fl := range []Flavour{Azure, OpenAI} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, nil))
			ep := s.Deployments()[0]
			client := newClient(ep)
			res, err := client.Completions.New(context.Background(), openai.CompletionNewParams{
				Model:     openai.CompletionNewParamsModel(ep.Deployment),
				Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
				MaxTokens: openai.Int(4),
			})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if res.Object != "text_completion" || len(res.Choices) != 1 {
				t.Fatalf("object %q, %d choices", res.Object, len(res.Choices))
			}
			if c := res.Choices[0]; c.FinishReason != "length" || len(strings.Fields(c.Text)) != 4 {
				t.Errorf("choice = %q finish %q, want 4 words and length", c.Text, c.FinishReason)
			}
			if res.Usage.PromptTokens != 4 || res.Usage.CompletionTokens != 4 {
				t.Errorf("usage = %+v, want 4 prompt and 4 completion tokens", res.Usage)
			}
		})
	}
}

func TestContentFilter(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		prompt     string
		wantStatus int
		wantCode   string
		wantFinish string
	}{
		{"azure block", Azure, "please TRIGGER-CONTENT-FILTER now", 400, "content_filter", ""},
		{"azure truncate", Azure, "trigger-filtered-reply", 200, "", "content_filter"},
		{"openai block", OpenAI, "trigger-content-filter", 400, "invalid_prompt", ""},
		{"openai truncate", OpenAI, "x trigger-filtered-reply y", 200, "", "content_filter"},
		{"clean prompt", Azure, "hello", 200, "", "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, nil))
			ep := s.Deployments()[0]
			client := newClient(ep, option.WithMaxRetries(0))
			got, err := client.Chat.Completions.New(context.Background(), chatParams(ep, tc.prompt, 0))
			if tc.wantStatus != 200 {
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.wantStatus || apiErr.Code != tc.wantCode {
					t.Fatalf("err = %v, want %d %s", err, tc.wantStatus, tc.wantCode)
				}
				if tc.fl == Azure {
					raw := apiErr.RawJSON()
					for _, want := range []string{`"param":"prompt"`, `"status":400`, `"code":"ResponsibleAIPolicyViolation"`, `"hate":{"filtered":true,"severity":"high"}`, `"jailbreak":{"filtered":false,"detected":false}`, "content management policy"} {
						if !strings.Contains(raw, want) {
							t.Errorf("body lacks %s: %s", want, raw)
						}
					}
				}
				if st := s.Stats()["d1"]; st.Filtered != 1 || st.Tokens == 0 {
					t.Errorf("stats = %+v, want 1 filtered with its tokens charged", st)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f := got.Choices[0].FinishReason; f != tc.wantFinish {
				t.Errorf("finish_reason = %q, want %q", f, tc.wantFinish)
			}
		})
	}
}

func TestContentFilterConfigurable(t *testing.T) {
	tests := []struct {
		name   string
		filter ContentFilter
		prompt string
		want   int
	}{
		{"custom block phrase", ContentFilter{Block: "forbidden"}, "a FORBIDDEN word", 400},
		{"default phrase replaced", ContentFilter{Block: "forbidden"}, "trigger-content-filter", 200},
		{"disabled", ContentFilter{Disabled: true}, "trigger-content-filter", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(Azure, func(d *Deployment) { d.ContentFilter = tc.filter }))
			if resp, b := chat(t, s.Deployments()[0], tc.prompt, 3); resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
}

func TestModelsList(t *testing.T) {
	s := startSim(t, one(OpenAI, func(d *Deployment) { d.Deployment = "gpt-4o-mini" }))
	ep := s.Deployments()[0]
	client := newClient(ep)
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "gpt-4o-mini" {
		t.Errorf("models = %+v", page.Data)
	}
	if _, err := client.Models.Get(context.Background(), "nope"); err == nil {
		t.Error("unknown model found")
	}
}
