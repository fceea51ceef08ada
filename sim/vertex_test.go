package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

const vertexToken = "ya29.sim-token"

// vertexPost posts body to the vertex deployment's path under its
// project and location, with token as the bearer ("" for none).
func vertexPost(t *testing.T, ep Endpoint, path, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ep.URL+"/v1/projects/my-proj/locations/us-east5/publishers/"+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func vertexSim(t *testing.T, rpm int) (gemini, claude Endpoint) {
	t.Helper()
	cfg := Config{Seed: 1, Deployments: []Deployment{
		{Name: "vg", Flavour: Vertex, Deployment: "gemini-2.5-pro", Key: vertexToken, Project: "my-proj", Location: "us-east5", Quota: Quota{RPM: rpm}},
		{Name: "vc", Flavour: Vertex, Deployment: "claude-sonnet-4-5@20250929", Key: vertexToken, Project: "my-proj", Location: "us-east5", Quota: Quota{RPM: rpm}},
	}}
	s := startSim(t, cfg)
	eps := s.Deployments()
	if eps[0].Flavour != Vertex || eps[1].Flavour != Vertex {
		t.Fatalf("endpoints %+v", eps)
	}
	return eps[0], eps[1]
}

const vertexClaudeRequest = `{"anthropic_version":"vertex-2023-10-16","max_tokens":16,"messages":[{"role":"user","content":"Hello"}]}`

// TestVertexServesBothPublishers: Gemini's generateContent and Claude's
// rawPredict under the project and location, with the bearer token.
func TestVertexServesBothPublishers(t *testing.T) {
	g, c := vertexSim(t, 0)
	resp, body := vertexPost(t, g, "google/models/gemini-2.5-pro:generateContent", vertexToken, geminiRequest("Hello", ""))
	var gr gResponse
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &gr) != nil || len(gr.Candidates) != 1 {
		t.Fatalf("gemini %d: %s", resp.StatusCode, body)
	}
	resp, body = vertexPost(t, g, "google/models/gemini-2.5-pro:streamGenerateContent?alt=sse", vertexToken, geminiRequest("Hello", ""))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || len(geminiChunks(t, []byte(body))) == 0 {
		t.Fatalf("gemini stream %d %v: %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = vertexPost(t, c, "anthropic/models/claude-sonnet-4-5@20250929:rawPredict", vertexToken, vertexClaudeRequest)
	var msg struct{ Type, Role string }
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &msg) != nil || msg.Type != "message" {
		t.Fatalf("claude %d: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Anthropic-Ratelimit-Requests-Limit") != "" || resp.Header.Get("Request-Id") != "" {
		t.Fatalf("Vertex sent Anthropic's own headers: %v", resp.Header)
	}
	resp, body = vertexPost(t, c, "anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", vertexToken,
		strings.Replace(vertexClaudeRequest, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	if resp.StatusCode != 200 || !strings.Contains(body, "event: message_stop") {
		t.Fatalf("claude stream %d: %s", resp.StatusCode, body)
	}
}

// TestVertexRefusals: Vertex's front end answers in Google's shape, the
// model's own checks in its format.
func TestVertexRefusals(t *testing.T) {
	g, c := vertexSim(t, 0)
	for _, tc := range []struct {
		name, path, token, body string
		ep                      Endpoint
		status                  int
		want                    string
	}{
		{"no token", "google/models/gemini-2.5-pro:generateContent", "", geminiRequest("hi", ""), g, 401, `"status":"UNAUTHENTICATED"`},
		{"wrong token", "anthropic/models/claude-sonnet-4-5@20250929:rawPredict", "ya29.other", vertexClaudeRequest, c, 401, `"status":"UNAUTHENTICATED"`},
		{"api key is no token", "google/models/gemini-2.5-pro:generateContent?key=" + vertexToken, "", geminiRequest("hi", ""), g, 401, `"UNAUTHENTICATED"`},
		{"other model", "google/models/gemini-1.0-pro:generateContent", vertexToken, geminiRequest("hi", ""), g, 404, "Publisher Model `projects/my-proj/locations/us-east5/publishers/google/models/gemini-1.0-pro` not found."},
		{"other publisher", "google/models/claude-sonnet-4-5@20250929:generateContent", vertexToken, geminiRequest("hi", ""), c, 404, `"status":"NOT_FOUND"`},
		{"claude with model", "anthropic/models/claude-sonnet-4-5@20250929:rawPredict", vertexToken, `{"model":"claude","anthropic_version":"vertex-2023-10-16","max_tokens":8,"messages":[]}`, c, 400, `Extra inputs are not permitted`},
		{"claude without version", "anthropic/models/claude-sonnet-4-5@20250929:rawPredict", vertexToken, `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, c, 400, `"type":"invalid_request_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := vertexPost(t, tc.ep, tc.path, tc.token, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s; want %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
		})
	}
	// another project's path
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/projects/other/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent", strings.NewReader(geminiRequest("hi", "")))
	req.Header.Set("Authorization", "Bearer "+vertexToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("another project: %d", resp.StatusCode)
	}
}

// TestVertexThrottlesWithResourceExhausted: past its quota, both
// publishers answer Vertex's 429 RESOURCE_EXHAUSTED, without Retry-After
// or rate-limit headers.
func TestVertexThrottlesWithResourceExhausted(t *testing.T) {
	g, c := vertexSim(t, 6) // one request per 10 s slice
	for _, tc := range []struct {
		ep         Endpoint
		path, body string
	}{
		{g, "google/models/gemini-2.5-pro:generateContent", geminiRequest("hi", "")},
		{c, "anthropic/models/claude-sonnet-4-5@20250929:rawPredict", vertexClaudeRequest},
	} {
		if resp, body := vertexPost(t, tc.ep, tc.path, vertexToken, tc.body); resp.StatusCode != 200 {
			t.Fatalf("first call %d: %s", resp.StatusCode, body)
		}
		resp, body := vertexPost(t, tc.ep, tc.path, vertexToken, tc.body)
		if resp.StatusCode != 429 || !strings.Contains(body, `"status":"RESOURCE_EXHAUSTED"`) || !strings.Contains(body, `"code":429`) {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
		for _, h := range []string{"Retry-After", "Anthropic-Ratelimit-Requests-Remaining", "X-Ratelimit-Remaining-Requests"} {
			if v := resp.Header.Get(h); v != "" {
				t.Errorf("%s: %s: %s; Vertex sends none", tc.path, h, v)
			}
		}
	}
}
