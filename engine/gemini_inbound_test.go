package engine

// Gemini's own API inbound (issue 25 §4): clients of Google's Go SDK
// (google.golang.org/genai) through the request pipeline by base URL,
// against pools whose members are the simulator's Azure, Anthropic and
// Gemini flavours. Keys and the cross-site refusal are the gateway's
// (gateway/gemini_inbound_test.go).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/switchover-gw/switchover/internal/geminitest"
	"github.com/switchover-gw/switchover/sim"
)

var geminiWeatherTool = &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name:        "get_weather",
	Description: "The weather in a city",
	Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
		"city": {Type: genai.TypeString, Description: "the city"},
	}, Required: []string{"city"}},
}}}

// TestGeminiSDKThroughEveryFlavour: generateContent (with a system
// instruction), streamGenerateContent, countTokens and a function-calling
// round trip, from Google's SDK, through pools whose one member is each
// simulated flavour: Azure (translated), Anthropic (translated) and
// Gemini (passed through).
func TestGeminiSDKThroughEveryFlavour(t *testing.T) {
	for _, member := range []string{"aoai-weu", "claude", "gemini"} {
		t.Run(member, func(t *testing.T) {
			e := startProviders(t, []string{member}, nil, "")
			c := geminitest.Client(t, e.url, "unused")
			ctx := t.Context()
			cfg := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Answer briefly.", genai.RoleUser)}
			resp, err := c.Models.GenerateContent(ctx, "chat-prod", genai.Text("Say hello"), cfg)
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			if resp.Text() == "" || len(resp.Candidates) != 1 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Fatalf("answer: %+v", resp)
			}
			if u := resp.UsageMetadata; u == nil || u.PromptTokenCount == 0 || u.CandidatesTokenCount == 0 {
				t.Errorf("usage: %+v", u)
			}
			if resp.ModelVersion == "" {
				t.Error("no modelVersion")
			}

			var text strings.Builder
			var last *genai.GenerateContentResponse
			chunks := 0
			for r, err := range c.Models.GenerateContentStream(ctx, "chat-prod", genai.Text("Tell a story"), nil) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				chunks++
				text.WriteString(r.Text())
				last = r
			}
			if chunks < 2 || text.Len() == 0 {
				t.Fatalf("stream: %d chunks, text %q", chunks, text.String())
			}
			if last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount == 0 || last.Candidates[0].FinishReason != genai.FinishReasonStop {
				t.Errorf("last chunk: %+v usage %+v", last.Candidates[0], last.UsageMetadata)
			}

			ct, err := c.Models.CountTokens(ctx, "chat-prod", genai.Text("How many tokens is this sentence?"), nil)
			if err != nil || ct.TotalTokens <= 0 {
				t.Errorf("CountTokens: %+v, %v", ct, err)
			}

			// Function calling: the model calls the tool, the client
			// answers it, the model answers in text.
			tools := &genai.GenerateContentConfig{Tools: []*genai.Tool{geminiWeatherTool}}
			history := genai.Text("What is the weather in Paris?")
			resp, err = c.Models.GenerateContent(ctx, "chat-prod", history, tools)
			if err != nil {
				t.Fatalf("tool call: %v", err)
			}
			calls := resp.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != "get_weather" {
				t.Fatalf("calls: %+v", resp.Candidates[0].Content)
			}
			history = append(history, resp.Candidates[0].Content, genai.NewContentFromParts([]*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: calls[0].ID, Name: "get_weather", Response: map[string]any{"output": "sunny, 21 C"}}}}, genai.RoleUser))
			resp, err = c.Models.GenerateContent(ctx, "chat-prod", history, tools)
			if err != nil {
				t.Fatalf("after the tool's result: %v", err)
			}
			if len(resp.FunctionCalls()) != 0 || resp.Text() == "" {
				t.Errorf("answer after the tool: %+v", resp.Candidates[0].Content)
			}
		})
	}
}

// TestGeminiSDKEmbedContent: embedContent (the SDK calls
// batchEmbedContents) through a pool of OpenAI-format members, one vector
// per content, in order; the single embedContent path too.
func TestGeminiSDKEmbedContent(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu"}, nil, "")
	c := geminitest.Client(t, e.url, "unused")
	resp, err := c.Models.EmbedContent(t.Context(), "chat-prod", []*genai.Content{
		genai.NewContentFromText("first", genai.RoleUser), genai.NewContentFromText("second", genai.RoleUser)}, nil)
	if err != nil {
		t.Fatalf("EmbedContent: %v", err)
	}
	if len(resp.Embeddings) != 2 || len(resp.Embeddings[0].Values) == 0 || len(resp.Embeddings[1].Values) == 0 {
		t.Fatalf("embeddings: %+v", resp.Embeddings)
	}

	status, body := geminitest.Post(t, e.url+"/v1beta/models/chat-prod:embedContent", "", `{"content":{"parts":[{"text":"one"}]}}`)
	var one struct {
		Embedding struct {
			Values []float64 `json:"values"`
		} `json:"embedding"`
	}
	if status != 200 || json.Unmarshal(body, &one) != nil || len(one.Embedding.Values) == 0 {
		t.Fatalf("embedContent: %d %s", status, body)
	}
	// A task type changes the vector; an OpenAI-format model cannot.
	status, body = geminitest.Post(t, e.url+"/v1beta/models/chat-prod:embedContent", "", `{"content":{"parts":[{"text":"one"}]},"taskType":"RETRIEVAL_QUERY"}`)
	if status != 400 || geminitest.Status(t, body) != "INVALID_ARGUMENT" || !strings.Contains(string(body), "taskType") {
		t.Errorf("taskType: %d %s", status, body)
	}
}

// TestGeminiSDKFailsOver: the first member overloaded (503, or Gemini's
// 503 UNAVAILABLE), the next answers; the SDK sees one good answer, plain
// and streamed.
func TestGeminiSDKFailsOver(t *testing.T) {
	for _, order := range [][]string{{"aoai-weu", "gemini"}, {"gemini", "claude"}} {
		t.Run(strings.Join(order, ">"), func(t *testing.T) {
			e := startProviders(t, order, nil, "")
			if err := e.sim.SetFault(order[0], sim.Fault{Mode: sim.FaultOverloaded}); err != nil {
				t.Fatal(err)
			}
			c := geminitest.Client(t, e.url, "unused")
			resp, err := c.Models.GenerateContent(t.Context(), "chat-prod", genai.Text("hello"), nil)
			if err != nil || resp.Text() == "" {
				t.Fatalf("GenerateContent: %v", err)
			}
			if got := resp.SDKHTTPResponse.Headers.Get("X-Switchover-Attempts"); got != "2" {
				t.Errorf("attempts %q, want 2", got)
			}
			n := 0
			for r, err := range c.Models.GenerateContentStream(t.Context(), "chat-prod", genai.Text("hello"), nil) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				n += len(r.Text())
			}
			if n == 0 {
				t.Error("the stream said nothing")
			}
		})
	}
}

// TestGeminiRateLimitedHasRetryInfo: every member out of quota, the
// gateway's 429 is Google's RESOURCE_EXHAUSTED with Retry-After and a
// google.rpc.RetryInfo detail, as Google's own.
func TestGeminiRateLimitedHasRetryInfo(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu"}, nil, "")
	if err := e.sim.SetFault("aoai-weu", sim.Fault{Mode: sim.FaultQuota, RPM: 1}); err != nil {
		t.Fatal(err)
	}
	var status int
	var body []byte
	var retryAfter string
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/v1beta/models/chat-prod:generateContent", strings.NewReader(`{"contents":[{"parts":[{"text":"hi"}]}]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		status, retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		if status == 429 {
			break
		}
	}
	if status != 429 || retryAfter == "" {
		t.Fatalf("got %d (Retry-After %q) %s", status, retryAfter, body)
	}
	var b struct {
		Error struct {
			Code    int              `json:"code"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Error.Code != 429 || b.Error.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("body: %s", body)
	}
	found := false
	for _, d := range b.Error.Details {
		if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" && d["retryDelay"] == retryAfter+"s" {
			found = true
		}
	}
	if !found {
		t.Errorf("no RetryInfo of %ss: %s", retryAfter, body)
	}
}

// capture is an upstream that records the request bodies it gets and
// answers each with answer.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
	urls   []string
	keys   []string // the x-goog-api-key each request came with
	answer func(w http.ResponseWriter, r *http.Request)
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.paths = append(c.paths, r.URL.Path)
	c.urls = append(c.urls, r.URL.String())
	c.keys = append(c.keys, r.Header.Get("X-Goog-Api-Key"))
	c.mu.Unlock()
	c.answer(w, r)
}

func (c *capture) last(t *testing.T) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == 0 {
		t.Fatal("the upstream got no request")
	}
	var m map[string]any
	if err := json.Unmarshal(c.bodies[len(c.bodies)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// startCaptured serves an engine with pool chat-prod over one backend of
// type typ at the capture's URL.
func startCaptured(t *testing.T, typ string, c *capture) string {
	t.Helper()
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e := startProvidersWith(t, []string{"gemini"}, nil, "", func(y string) string {
		y = strings.Replace(y, "backends:\n", fmt.Sprintf("backends:\n  - {name: captured, type: %s, url: %q, api_key: captured-key-000000}\n", typ, srv.URL), 1)
		return strings.Replace(y, "      - {backend: gemini, priority: 1, model: gemini-2.5-flash}\n", "      - {backend: captured, priority: 1, model: upstream-model}\n", 1)
	})
	return e.url
}

// TestGeminiSchemaAndImageTranslated: a JSON-schema response and an image
// part, sent by the SDK to a pool of an OpenAI-format member, reach it as
// response_format json_schema (JSON Schema types) and an image_url data
// URL; the member's JSON answer comes back as the SDK's text.
func TestGeminiSchemaAndImageTranslated(t *testing.T) {
	c := &capture{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"upstream-model","choices":[{"index":0,"message":{"role":"assistant","content":"{\"colour\":\"red\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":90,"completion_tokens":5,"total_tokens":95}}`)
	}}
	url := startCaptured(t, "openai", c)
	cl := geminitest.Client(t, url, "unused")
	png := []byte("\x89PNG\r\n\x1a\nfake")
	cfg := &genai.GenerateContentConfig{
		ResponseMIMEType: "application/json",
		ResponseSchema: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{
			"colour": {Type: genai.TypeString, Enum: []string{"red", "green"}},
		}, Required: []string{"colour"}},
	}
	contents := []*genai.Content{genai.NewContentFromParts([]*genai.Part{genai.NewPartFromText("Which colour?"), genai.NewPartFromBytes(png, "image/png")}, genai.RoleUser)}
	resp, err := cl.Models.GenerateContent(t.Context(), "chat-prod", contents, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != `{"colour":"red"}` || resp.UsageMetadata.PromptTokenCount != 90 || resp.UsageMetadata.CandidatesTokenCount != 5 {
		t.Errorf("answer %q usage %+v", resp.Text(), resp.UsageMetadata)
	}
	sent := c.last(t)
	rf, _ := json.Marshal(sent["response_format"])
	if !strings.Contains(string(rf), `"type":"json_schema"`) || !strings.Contains(string(rf), `"type":"string"`) || !strings.Contains(string(rf), `"enum":["red","green"]`) {
		t.Errorf("response_format sent: %s", rf)
	}
	msgs, _ := json.Marshal(sent["messages"])
	if !strings.Contains(string(msgs), `"url":"data:image/png;base64,iVBORw0KGgpmYWtl"`) {
		t.Errorf("messages sent: %s", msgs)
	}

	// What no translation can honour is refused, in Google's shape, and
	// never sent without it.
	status, body := geminitest.Post(t, url+"/v1beta/models/chat-prod:generateContent", "",
		`{"contents":[{"parts":[{"text":"hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`)
	if status != 400 || geminitest.Status(t, body) != "INVALID_ARGUMENT" || !strings.Contains(string(body), "safetySettings") {
		t.Errorf("safetySettings: %d %s", status, body)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) != 1 {
		t.Errorf("the upstream got %d requests, want 1", len(c.bodies))
	}
}

// TestGeminiPassedThroughToGemini: a Gemini member gets the client's body
// as it was sent, Gemini-only members and all (safetySettings, which no
// translation could honour), at its own model's URL, with its own key:
// the client's, sent in the query, reaches neither its URL nor headers.
func TestGeminiPassedThroughToGemini(t *testing.T) {
	c := &capture{answer: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"upstream-model","responseId":"r1"}`)
	}}
	url := startCaptured(t, "gemini", c)
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`
	status, got := geminitest.Post(t, url+"/v1beta/models/chat-prod:generateContent?key=client-secret-0123456789", "", body)
	if status != 200 || !strings.Contains(string(got), `"responseId":"r1"`) {
		t.Fatalf("%d %s", status, got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if string(c.bodies[0]) != body || c.paths[0] != "/v1beta/models/upstream-model:generateContent" {
		t.Errorf("upstream got %s at %s", c.bodies[0], c.paths[0])
	}
	if strings.Contains(c.urls[0], "client-secret") || c.keys[0] != "captured-key-000000" {
		t.Errorf("upstream URL %s, key %q", c.urls[0], c.keys[0])
	}
}

// TestGeminiStreamWithoutAltSSE: streamGenerateContent without alt=sse is
// answered as Gemini does then, one JSON array of the chunks.
func TestGeminiStreamWithoutAltSSE(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu"}, nil, "")
	resp, err := http.Post(e.url+"/v1beta/models/chat-prod:streamGenerateContent", "application/json", strings.NewReader(`{"contents":[{"parts":[{"text":"Tell a story"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var chunks []struct {
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata *struct {
			TotalTokenCount int `json:"totalTokenCount"`
		} `json:"usageMetadata"`
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if err := json.Unmarshal(body, &chunks); err != nil || len(chunks) < 2 {
		t.Fatalf("not a JSON array of chunks (%v): %s", err, body)
	}
	lastChunk := chunks[len(chunks)-1]
	if lastChunk.Candidates[0].FinishReason != "STOP" || lastChunk.UsageMetadata == nil || lastChunk.UsageMetadata.TotalTokenCount == 0 {
		t.Errorf("last chunk: %+v", lastChunk)
	}
}
