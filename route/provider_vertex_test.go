package route

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

// vertexToken is a TokenSource with one token, or an error.
type vertexToken struct {
	tok string
	err error
}

func (f vertexToken) Token(context.Context) (string, error) { return f.tok, f.err }

// TestVertexRequest: Gemini's generateContent and streamGenerateContent
// (alt=sse), Claude's rawPredict and streamRawPredict, under the project
// and location, at a regional or the global endpoint; the access token as
// a bearer; no API key of another provider.
func TestVertexRequest(t *testing.T) {
	regional := parseURL(t, "https://us-east5-aiplatform.googleapis.com")
	global := parseURL(t, "https://aiplatform.googleapis.com/")
	tok := vertexToken{tok: "ya29.token"}
	claude := []byte(`{"model":"claude-sonnet-4-5@20250929","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`)
	tests := []struct {
		name    string
		p       *Vertex
		o       Outgoing
		wantURL string
	}{
		{"gemini global", &Vertex{BaseURL: global, Project: "my-proj", Location: "global", Token: tok},
			Outgoing{Op: ChatCompletions, Model: "gemini-2.5-pro", Body: []byte(`{}`)},
			"https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-pro:generateContent"},
		{"gemini stream regional", &Vertex{BaseURL: parseURL(t, "https://europe-west4-aiplatform.googleapis.com"), Project: "my-proj", Location: "europe-west4", Publisher: PublisherGoogle, Token: tok},
			Outgoing{Op: ChatCompletions, Model: "gemini-2.5-flash", Stream: true, Body: []byte(`{}`)},
			"https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{"claude", &Vertex{BaseURL: regional, Project: "my-proj", Location: "us-east5", Publisher: PublisherAnthropic, Token: tok},
			Outgoing{Op: Messages, Model: "claude-sonnet-4-5@20250929", Body: claude},
			"https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"},
		{"claude stream", &Vertex{BaseURL: regional, Project: "my-proj", Location: "us-east5", Publisher: PublisherAnthropic, Token: tok},
			Outgoing{Op: Messages, Model: "claude-sonnet-4-5@20250929", Stream: true, Body: claude},
			"https://us-east5-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := sent(t, tc.p, &tc.o)
			checkRequest(t, req, http.MethodPost, tc.wantURL, http.Header{
				"Authorization": {"Bearer ya29.token"}, "X-Goog-Api-Key": nil, "X-Api-Key": nil, "Anthropic-Version": nil,
				"Content-Type": {"application/json"},
			})
			if got := appendCredentials(nil, tc.p); !slices.Equal(got, []string{"ya29.token"}) {
				t.Errorf("credentials for redaction %q, want the token sent", got)
			}
		})
	}
}

// TestVertexClaudeBody: the Messages body of Anthropic's documentation,
// as Claude on Vertex takes it: no model (the URL names it),
// anthropic_version vertex-2023-10-16, everything else as it was; a
// caller's own anthropic_version kept.
func TestVertexClaudeBody(t *testing.T) {
	p := &Vertex{BaseURL: parseURL(t, "https://us-east5-aiplatform.googleapis.com"), Project: "p-123456", Location: "us-east5", Publisher: PublisherAnthropic}
	tests := []struct{ name, in, want string }{
		{"documented request",
			`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":false,"messages":[{"role":"user","content":"Hello, world"}]}`,
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":1024,"messages":[{"role":"user","content":"Hello, world"}],"stream":false}`},
		{"version kept, html not escaped",
			`{"anthropic_version":"vertex-2023-10-16","model":"x","max_tokens":8,"system":"<b>&</b>","messages":[]}`,
			`{"anthropic_version":"vertex-2023-10-16","max_tokens":8,"messages":[],"system":"<b>&</b>"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := sent(t, p, &Outgoing{Op: Messages, Model: "claude-sonnet-4-5@20250929", Body: []byte(tc.in)})
			got, _ := io.ReadAll(req.Body)
			if string(got) != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", got, tc.want)
			}
			if req.ContentLength != int64(len(got)) {
				t.Fatalf("Content-Length %d for a body of %d", req.ContentLength, len(got))
			}
			again, _ := req.GetBody()
			if b, _ := io.ReadAll(again); string(b) != tc.want {
				t.Fatalf("GetBody gave %s", b)
			}
		})
	}
	if _, err := p.NewRequest(t.Context(), &Outgoing{Op: Messages, Model: "m", Body: []byte(`[1]`)}); !errors.Is(err, ErrBadBody) {
		t.Fatalf("a body that is not an object: %v, want ErrBadBody", err)
	}
}

// TestVertexNoToken: a token that cannot be had is ErrAuth (another
// backend may serve), with the cause.
func TestVertexNoToken(t *testing.T) {
	p := &Vertex{BaseURL: parseURL(t, "https://aiplatform.googleapis.com"), Project: "my-proj", Location: "global",
		Token: vertexToken{err: errors.New("metadata server unreachable")}}
	_, err := p.NewRequest(t.Context(), &Outgoing{Op: ChatCompletions, Model: "gemini-2.5-pro", Body: []byte(`{}`)})
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "metadata server unreachable") {
		t.Fatalf("err %v, want ErrAuth with its cause", err)
	}
}

// TestVertexSupports: Claude's messages or Gemini's chat; the format
// follows the publisher.
func TestVertexSupports(t *testing.T) {
	g, a := &Vertex{}, &Vertex{Publisher: PublisherAnthropic}
	if g.Format() != translate.Gemini || a.Format() != translate.Anthropic {
		t.Fatalf("formats %s, %s", g.Format(), a.Format())
	}
	for op, want := range map[Operation]bool{ChatCompletions: true, Messages: false, Embeddings: false, CountTokens: false, Responses: false} {
		if got := g.supports(op); got != want {
			t.Errorf("google supports(%s) = %v, want %v", op, got, want)
		}
	}
	for op, want := range map[Operation]bool{ChatCompletions: false, Messages: true, Embeddings: false, CountTokens: false} {
		if got := a.supports(op); got != want {
			t.Errorf("anthropic supports(%s) = %v, want %v", op, got, want)
		}
	}
	if kindOf(a) != "vertex" {
		t.Errorf("kind %q", kindOf(a))
	}
}

// Vertex's front end answers in Google's error shape; Claude's own errors
// are Anthropic's.
const (
	vertexQuotaError = `{"error":{"code":429,"message":"Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.","status":"RESOURCE_EXHAUSTED"}}`
	vertexNotFound   = `{"error":{"code":404,"message":"Publisher Model ` + "`projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-x`" + ` not found.","status":"NOT_FOUND"}}`
	claudeOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
)

func TestVertexErrorFormat(t *testing.T) {
	a, g := &Vertex{Publisher: PublisherAnthropic}, &Vertex{}
	for _, tc := range []struct {
		name string
		p    *Vertex
		body string
		want translate.Format
	}{
		{"claude quota from Vertex", a, vertexQuotaError, translate.Gemini},
		{"claude not found from Vertex", a, vertexNotFound, translate.Gemini},
		{"claude stream error list", a, "[" + vertexQuotaError + "]", translate.Gemini},
		{"claude's own", a, claudeOverloaded, translate.Anthropic},
		{"not json", a, "upstream connect error", translate.Anthropic},
		{"gemini", g, claudeOverloaded, translate.Gemini},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bodyErrorFormat(tc.p, tc.p.Format(), []byte(tc.body)); got != tc.want {
				t.Fatalf("format %s, want %s", got, tc.want)
			}
		})
	}
}

// TestVertexClaudeGoogleErrorToAnthropicCaller: a Google-shaped error from
// Claude on Vertex reached an Anthropic caller as it was, since the
// backend's format (Anthropic) matched the caller's. It is translated to
// Anthropic's shape, keeping Vertex's message, and OpenAI callers get
// RESOURCE_EXHAUSTED as rate_limit_exceeded.
func TestVertexClaudeGoogleErrorToAnthropicCaller(t *testing.T) {
	p := &Vertex{Publisher: PublisherAnthropic}
	b := &Backend{Name: "vertex", Provider: p}
	for _, tc := range []struct {
		client   translate.Format
		status   int
		body     string
		wantType string
	}{
		{translate.Anthropic, 429, vertexQuotaError, "rate_limit_error"},
		{translate.Anthropic, 404, vertexNotFound, "not_found_error"},
		{translate.Anthropic, 529, claudeOverloaded, "overloaded_error"},
		{translate.OpenAI, 429, vertexQuotaError, "rate_limit_error"},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
		passError(resp, b, []byte(tc.body), bodyErrorFormat(p, p.Format(), []byte(tc.body)), tc.client, "")
		got, _ := io.ReadAll(resp.Body)
		var out struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
				Code          *string
			} `json:"error"`
		}
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("%s: %s: %v", tc.client, got, err)
		}
		if tc.client == translate.Anthropic && out.Type != "error" {
			t.Errorf("%s %d: not Anthropic's shape: %s", tc.client, tc.status, got)
		}
		if out.Error.Type != tc.wantType || out.Error.Message == "" {
			t.Errorf("%s %d: error %+v, want type %s: %s", tc.client, tc.status, out.Error, tc.wantType, got)
		}
		if tc.client == translate.OpenAI && (out.Error.Code == nil || *out.Error.Code != "rate_limit_exceeded") {
			t.Errorf("openai code %v: %s", out.Error.Code, got)
		}
	}
}

// vertexGeminiAnswer is a generateContent answer in the shape Vertex AI's
// reference documents: Vertex adds createTime, responseId, avgLogprobs
// and the usage's trafficType and per-modality details to AI Studio's.
const vertexGeminiAnswer = `{
  "candidates": [{"content": {"role": "model", "parts": [{"text": "Paris is the capital of France."}]},
    "finishReason": "STOP", "avgLogprobs": -0.0421}],
  "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 7, "totalTokenCount": 16, "trafficType": "ON_DEMAND",
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
    "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 7}]},
  "modelVersion": "gemini-2.5-pro",
  "createTime": "2025-10-01T09:30:00.123456Z",
  "responseId": "aBcDeFgHiJkLmNoP"
}`

// TestVertexGeminiAnswerTranslated: Vertex's generateContent answer, with
// its extra fields, reaches OpenAI and Anthropic callers through Gemini's
// translation: text, finish and usage.
func TestVertexGeminiAnswerTranslated(t *testing.T) {
	out, err := convertResponse(translate.Gemini, translate.OpenAI, []byte(vertexGeminiAnswer), "gemini-2.5-pro", nil)
	if err != nil {
		t.Fatal(err)
	}
	var oa struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(out, &oa); err != nil || len(oa.Choices) != 1 || oa.Choices[0].Message.Content != "Paris is the capital of France." ||
		oa.Choices[0].FinishReason != "stop" || oa.Usage.Prompt != 9 || oa.Usage.Completion != 7 {
		t.Fatalf("openai %s (%v)", out, err)
	}
	out, err = convertResponse(translate.Gemini, translate.Anthropic, []byte(vertexGeminiAnswer), "gemini-2.5-pro", nil)
	if err != nil {
		t.Fatal(err)
	}
	var an struct {
		StopReason string `json:"stop_reason"`
		Content    []struct{ Text string }
		Usage      struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(out, &an); err != nil || len(an.Content) != 1 || an.Content[0].Text != "Paris is the capital of France." ||
		an.StopReason != "end_turn" || an.Usage.In != 9 || an.Usage.Out != 7 {
		t.Fatalf("anthropic %s (%v)", out, err)
	}
}
