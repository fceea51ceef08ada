package engine

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/gcptest"
	"github.com/switchover-gw/switchover/sim"
)

const vertexSimToken = "ya29.vertex-sim-token-0123456789"

// startVertex starts a simulated Anthropic and Vertex AI serving Gemini
// and Claude (its access token minted by a local token endpoint through a
// service-account file), edit applied to the simulated side, and serves
// pools: gemini (vertex-gemini), claude (anthropic priority 1, then
// vertex-claude; or, alone, only vertex-claude, whose 429s are not
// retried but passed on).
func startVertex(t *testing.T, alone bool, edit func(*sim.Deployment)) (*served, *gcptest.Account) {
	t.Helper()
	acct := gcptest.NewAccount(t, vertexSimToken)
	deps := []sim.Deployment{
		{Name: "anthropic", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-000000000000"},
		{Name: "vertex-claude", Flavour: sim.Vertex, Deployment: "claude-sonnet-4-5@20250929", Key: vertexSimToken, Project: "sim-project", Location: "us-east5"},
		{Name: "vertex-gemini", Flavour: sim.Vertex, Deployment: "gemini-2.5-pro", Key: vertexSimToken, Project: "sim-project", Location: "us-east5"},
	}
	for i := range deps {
		if edit != nil {
			edit(&deps[i])
		}
	}
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eps := s.Deployments()
	claude := "      - {backend: anthropic, priority: 1, model: claude-sonnet-4-5}\n      - {backend: vertex-claude, priority: 2, model: \"claude-sonnet-4-5@20250929\"}\n"
	retry := "{attempts: 3}"
	if alone {
		claude = "      - {backend: vertex-claude, model: \"claude-sonnet-4-5@20250929\"}\n"
		retry = `{attempts: 3, on: ["500-599"]}` // a 429 is passed on as the backend sent it
	}
	y := fmt.Sprintf(`log: {format: json, level: debug}
server: {drain_delay: 0s}
backend_defaults: {quota_aware: false}
backends:
  - {name: anthropic, type: anthropic, url: %q, api_key: sk-ant-000000000000}
  - {name: vertex-claude, type: vertex, url: %q, project: sim-project, location: us-east5, credentials_file: %q}
  - {name: vertex-gemini, type: vertex, url: %q, project: sim-project, location: us-east5, credentials_file: %q}
pools:
  - name: gemini
    members:
      - {backend: vertex-gemini, model: gemini-2.5-pro}
  - name: claude
    retry: %s
    members:
%s`, eps[0].URL, eps[1].URL, acct.File, eps[2].URL, acct.File, retry, claude)
	sv := serveConfig(t, y, nil)
	sv.sim = s
	t.Cleanup(func() {
		if strings.Contains(sv.logs.String(), vertexSimToken) {
			t.Error("the access token is in the log")
		}
	})
	return sv, acct
}

// TestVertexBothPublishersThroughEngine: OpenAI and Anthropic clients
// reach Gemini and Claude on Vertex, plain and streamed, with one token for
// both backends (one credentials file), publishers inferred from the
// members' models.
func TestVertexBothPublishersThroughEngine(t *testing.T) {
	e, acct := startVertex(t, true, nil)
	oc := e.openai()
	ac := e.anthropic()
	ctx := t.Context()
	for _, pool := range []string{"gemini", "claude"} {
		p := openai.ChatCompletionNewParams{Model: pool, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(8)}
		var raw *http.Response
		got, err := oc.Chat.Completions.New(ctx, p, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("%s: %v", pool, err)
		}
		if len(got.Choices) == 0 || got.Choices[0].Message.Content == "" || got.Usage.CompletionTokens == 0 {
			t.Fatalf("%s: %+v", pool, got)
		}
		if b := raw.Header.Get("X-Switchover-Backend"); b != "vertex-"+pool {
			t.Fatalf("%s served by %q", pool, b)
		}
		st := oc.Chat.Completions.NewStreaming(ctx, p)
		var text strings.Builder
		for st.Next() {
			if c := st.Current(); len(c.Choices) > 0 {
				text.WriteString(c.Choices[0].Delta.Content)
			}
		}
		if err := st.Err(); err != nil || text.Len() == 0 {
			t.Fatalf("%s stream: %q, %v", pool, text.String(), err)
		}

		params := anthropic.MessageNewParams{Model: pool, MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
		msg, err := ac.Messages.New(ctx, params)
		if err != nil {
			t.Fatalf("%s anthropic: %v", pool, err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.StopReason == "" {
			t.Fatalf("%s anthropic: %+v", pool, msg)
		}
		as := ac.Messages.NewStreaming(ctx, params)
		var acc anthropic.Message
		for as.Next() {
			if err := acc.Accumulate(as.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := as.Err(); err != nil || len(acc.Content) == 0 || acc.Content[0].Text == "" {
			t.Fatalf("%s anthropic stream: %+v, %v", pool, acc, err)
		}
	}
	if n := acct.Requests(); n != 1 {
		t.Fatalf("%d token requests for 8 calls over 2 backends with one file; want 1", n)
	}
	if s := e.sim.Stats(); s["vertex-gemini"].Calls != 4 || s["vertex-claude"].Calls != 4 {
		t.Fatalf("sim stats %+v", s)
	}
}

// TestVertexClaudeFailover: the same Claude model on Anthropic (priority
// 1) and Vertex (priority 2). Anthropic down: Vertex serves. Vertex's
// quota spent (429 RESOURCE_EXHAUSTED, in Google's shape): its breaker
// hears a rate limit, and Anthropic serves.
func TestVertexClaudeFailover(t *testing.T) {
	t.Run("anthropic down", func(t *testing.T) {
		e, _ := startVertex(t, false, nil)
		e.fault(t, "anthropic", "down")
		ac := e.anthropic()
		msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: "claude", MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
		if err != nil || len(msg.Content) == 0 {
			t.Fatalf("%+v, %v", msg, err)
		}
		if s := e.sim.Stats(); s["vertex-claude"].Calls != 1 || s["anthropic"].Calls != 1 {
			t.Fatalf("stats %+v", s)
		}
		if !strings.Contains(e.logs.String(), "anthropic=529") {
			t.Fatalf("log lacks the failover from anthropic:\n%s", e.logs.String())
		}
	})
	t.Run("vertex resource exhausted", func(t *testing.T) {
		e, _ := startVertex(t, false, func(d *sim.Deployment) {
			if d.Name == "vertex-claude" {
				d.Quota = sim.Quota{RPM: 6} // one request per 10 s slice
			}
		})
		e.fault(t, "anthropic", "down")
		c := e.openai()
		p := openai.ChatCompletionNewParams{Model: "claude", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(8)}
		if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
			t.Fatal(err) // vertex serves its one call of the slice
		}
		_, err := c.Chat.Completions.New(t.Context(), p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 {
			t.Fatalf("both down or spent: %v; want 429", err)
		}
		if !strings.Contains(e.logs.String(), "vertex-claude=429 rate_limited") {
			t.Fatalf("log lacks vertex's 429:\n%s", e.logs.String())
		}
		if b := e.engine.Backends["vertex-claude"].Breaker.Snapshot(); b.Failures == 0 && b.State == breaker.Closed {
			t.Fatalf("vertex breaker heard nothing: %+v", b)
		}
	})
}

// TestVertexClaudeGoogleErrorReachesAnthropicCallerInItsShape: Vertex's
// Google-shaped errors (403, 404, 429 RESOURCE_EXHAUSTED) reach an
// Anthropic caller of Claude on Vertex in Anthropic's error shape, not in
// Google's (the backend's format being Anthropic's, the 429 was passed on
// as it came).
func TestVertexClaudeGoogleErrorReachesAnthropicCallerInItsShape(t *testing.T) {
	for _, tc := range []struct{ name, fault string }{
		{"forbidden", "forbidden"},
		{"not found", "not_found"},
		{"resource exhausted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := startVertex(t, true, func(d *sim.Deployment) {
				if tc.fault == "" && d.Name == "vertex-claude" {
					d.Quota = sim.Quota{RPM: 6}
				}
			})
			if tc.fault != "" {
				e.fault(t, "vertex-claude", tc.fault)
			}
			var status int
			var body []byte
			for range 2 {
				req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/messages", strings.NewReader(`{"model":"claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Anthropic-Version", "2023-06-01")
				resp, err := testClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			if status < 400 || !strings.Contains(string(body), `"type":"error"`) || strings.Contains(string(body), `"status":"`) {
				t.Fatalf("%d %s: not Anthropic's error shape", status, body)
			}
			t.Logf("%d %s", status, body)
		})
	}
}
