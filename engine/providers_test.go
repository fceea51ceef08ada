package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/sim"
)

// simProviders are the simulated deployments: an Azure region, OpenAI,
// Anthropic, Gemini and a local OpenAI-compatible server.
var simProviders = []sim.Deployment{
	{Name: "aoai-weu", Flavour: sim.Azure, Deployment: "gpt-4o", Key: "azure-key-000000000"},
	{Name: "openai", Flavour: sim.OpenAI, Deployment: "gpt-4o-2024-08-06", Model: "gpt-4o-2024-08-06", Key: "sk-openai-00000000"},
	{Name: "claude", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-000000000000"},
	{Name: "gemini", Flavour: sim.Gemini, Deployment: "gemini-2.5-flash", Key: "goog-key-000000000"},
	{Name: "local", Flavour: sim.OpenAI, Deployment: "llama3.1"},
}

// backendYAML is the backend for a simulated deployment.
func backendYAML(d sim.Deployment, e sim.Endpoint) string {
	switch d.Flavour {
	case sim.Azure:
		return fmt.Sprintf("  - {name: %s, type: azure, url: %q, api_key: %q, region: westeurope}\n", d.Name, e.URL, d.Key)
	case sim.OpenAI:
		if d.Key == "" {
			return fmt.Sprintf("  - {name: %s, type: openai_compatible, url: %q}\n", d.Name, e.URL)
		}
		return fmt.Sprintf("  - {name: %s, type: openai, url: %q, api_key: %q}\n", d.Name, e.URL, d.Key)
	case sim.Anthropic:
		return fmt.Sprintf("  - {name: %s, type: anthropic, url: %q, api_key: %q}\n", d.Name, e.URL, d.Key)
	case sim.Gemini:
		return fmt.Sprintf("  - {name: %s, type: gemini, url: %q, api_key: %q}\n", d.Name, e.URL, d.Key)
	}
	panic(d.Flavour)
}

// startProviders starts the simulated deployments (edit changes the
// simulated side only: the engine is configured with simProviders as they
// are) and serves an engine with pool chat-prod over the named members in
// priority order. The test fails if a backend's key reaches the log.
func startProviders(t *testing.T, order []string, edit func(*sim.Deployment), extra string) *served {
	t.Helper()
	return startProvidersWith(t, order, edit, extra, nil)
}

// startProvidersWith is startProviders with the YAML passed through mod
// before it is parsed.
func startProvidersWith(t *testing.T, order []string, edit func(*sim.Deployment), extra string, mod func(string) string) *served {
	t.Helper()
	deps := append([]sim.Deployment(nil), simProviders...)
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
	eps := map[string]sim.Endpoint{}
	for _, e := range s.Deployments() {
		eps[e.Name] = e
	}
	var y strings.Builder
	y.WriteString("log: {format: json, level: info}\nserver: {drain_delay: 0s}\nbackends:\n")
	for _, d := range simProviders {
		y.WriteString(backendYAML(d, eps[d.Name]))
	}
	y.WriteString("pools:\n  - name: chat-prod\n    aliases: [claude-sonnet-4-5]\n    retry: {attempts: 5}\n    members:\n")
	for i, name := range order {
		for _, d := range deps {
			if d.Name == name {
				fmt.Fprintf(&y, "      - {backend: %s, priority: %d, model: %s}\n", name, i+1, d.Deployment)
			}
		}
	}
	y.WriteString(extra)
	yml := y.String()
	if mod != nil {
		yml = mod(yml)
	}
	sv := serveConfig(t, yml, nil)
	sv.sim = s
	t.Cleanup(func() {
		for _, d := range deps {
			if d.Key != "" && strings.Contains(sv.logs.String(), d.Key) {
				t.Errorf("backend key of %s in the log", d.Name)
			}
		}
	})
	return sv
}

func (s *served) openai() openai.Client {
	return openai.NewClient(option.WithBaseURL(s.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func (s *served) anthropic() anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(s.url), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Current weather in a city"),
	Parameters: openai.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
})

// TestFailoverAcrossProviders fails over from a broken Azure region to
// Anthropic and to Gemini, for plain, streamed and tool-calling requests,
// checked with the official OpenAI client.
func TestFailoverAcrossProviders(t *testing.T) {
	for _, target := range []string{"claude", "gemini"} {
		t.Run(target, func(t *testing.T) {
			e := startProviders(t, []string{"aoai-weu", target}, nil, "")
			e.fault(t, "aoai-weu", "down")
			c := e.openai()
			ctx := t.Context()

			var raw *http.Response
			resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:     "chat-prod",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Hello")},
				MaxTokens: openai.Int(12),
			}, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if raw.Header.Get("X-Switchover-Backend") != target || raw.Header.Get("X-Switchover-Failover") != "true" {
				t.Fatalf("headers %v", raw.Header)
			}
			if resp.Object != "chat.completion" || resp.Choices[0].Message.Content == "" || resp.Choices[0].FinishReason == "" || resp.Usage.TotalTokens == 0 {
				t.Fatalf("translated answer %+v", resp)
			}

			// Streaming, through the translation of the provider's events.
			stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:         "chat-prod",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream please")},
				MaxTokens:     openai.Int(12),
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			}, option.WithResponseInto(&raw))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if acc.Choices[0].Message.Content == "" || acc.Usage.TotalTokens == 0 || raw.Header.Get("X-Switchover-Backend") != target {
				t.Fatalf("stream: %q usage %+v from %s", acc.Choices[0].Message.Content, acc.Usage, raw.Header.Get("X-Switchover-Backend"))
			}

			// Tool calling, plain and streamed: the provider's tool call
			// arrives as an OpenAI tool call with parseable arguments.
			params := openai.ChatCompletionNewParams{
				Model:    "chat-prod",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
				Tools:    []openai.ChatCompletionToolUnionParam{weatherTool},
			}
			resp, err = c.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			checkToolCall(t, resp.Choices[0].Message, resp.Choices[0].FinishReason)
			stream = c.Chat.Completions.NewStreaming(ctx, params)
			acc = openai.ChatCompletionAccumulator{}
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			checkToolCall(t, acc.Choices[0].Message, acc.Choices[0].FinishReason)

			// The tool result goes back and a text answer comes out.
			call := resp.Choices[0].Message.ToolCalls[0]
			params.Messages = append(params.Messages, resp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"temp_c":21}`, call.ID))
			resp, err = c.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Choices[0].Message.Content == "" || len(resp.Choices[0].Message.ToolCalls) != 0 {
				t.Fatalf("after the tool result: %+v", resp.Choices[0].Message)
			}
		})
	}
}

func checkToolCall(t *testing.T, m openai.ChatCompletionMessage, finish string) {
	t.Helper()
	if len(m.ToolCalls) != 1 || finish != "tool_calls" {
		t.Fatalf("tool calls %+v, finish %q", m.ToolCalls, finish)
	}
	tc := m.ToolCalls[0]
	var args map[string]any
	if tc.Function.Name != "get_weather" || tc.ID == "" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil || args["city"] == nil {
		t.Fatalf("tool call %+v", tc)
	}
}

// TestFailoverOnProvidersOwnErrors moves on from each provider's own
// throttling and overload errors, and benches it as its error says.
func TestFailoverOnProvidersOwnErrors(t *testing.T) {
	tests := []struct {
		name    string
		order   []string
		fault   string
		quota   bool // the first member's quota allows one request per slice
		wantWhy string
	}{
		{"anthropic overloaded 529", []string{"claude", "gemini"}, "overloaded", false, "claude=529 server_error"},
		{"anthropic rate limit 429", []string{"claude", "gemini"}, "", true, "claude=429 rate_limited"},
		{"gemini RESOURCE_EXHAUSTED", []string{"gemini", "claude"}, "", true, "gemini=429 rate_limited"},
		{"gemini unavailable 503", []string{"gemini", "local"}, "down", false, "gemini=503 server_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := tc.order[0]
			// The provider's own 429 is what is tested: the gateway must
			// send the call its rate-limit headers say would be refused
			// (TestQuotaAwareSpendsNoRefusedCall is the default's case).
			e := startProvidersWith(t, tc.order, func(d *sim.Deployment) {
				if tc.quota && d.Name == first {
					d.Quota = sim.Quota{RPM: 6} // one request per 10 s slice
				}
			}, "", noQuotaAwareness)
			if tc.fault != "" {
				e.fault(t, first, tc.fault)
			}
			c := e.openai()
			p := openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(8)}
			if tc.quota {
				if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
					t.Fatal(err)
				}
			}
			var raw *http.Response
			if _, err := c.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&raw)); err != nil {
				t.Fatal(err)
			}
			if raw.Header.Get("X-Switchover-Backend") != tc.order[1] || raw.Header.Get("X-Switchover-Attempts") != "2" {
				t.Fatalf("headers %v", raw.Header)
			}
			if !strings.Contains(e.logs.String(), tc.wantWhy) {
				t.Fatalf("log lacks %q:\n%s", tc.wantWhy, e.logs.String())
			}
		})
	}
}

// noQuotaAwareness turns quota awareness off for every backend.
func noQuotaAwareness(y string) string {
	return strings.Replace(y, "backends:\n", "backend_defaults: {quota_aware: false}\nbackends:\n", 1)
}

// TestQuotaAwareSpendsNoRefusedCall: with the defaults, a region whose
// rate-limit headers said it had nothing left in its window is not sent
// the next call: it goes to the next member at once, in one attempt.
func TestQuotaAwareSpendsNoRefusedCall(t *testing.T) {
	for _, first := range []string{"claude", "aoai-weu", "openai"} {
		t.Run(first, func(t *testing.T) {
			e := startProviders(t, []string{first, "gemini"}, func(d *sim.Deployment) {
				if d.Name == first {
					d.Quota = sim.Quota{RPM: 6} // one request per 10 s slice
				}
			}, "")
			c := e.openai()
			p := openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(8)}
			if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			var raw *http.Response
			if _, err := c.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&raw)); err != nil {
				t.Fatal(err)
			}
			if raw.Header.Get("X-Switchover-Backend") != "gemini" || raw.Header.Get("X-Switchover-Attempts") != "1" {
				t.Fatalf("headers %v", raw.Header)
			}
			if s := e.sim.Stats()[first]; s.Refused != 0 || s.Calls != 1 {
				t.Fatalf("%s: %d calls, %d refused; want the one that fit, and no refusal", first, s.Calls, s.Refused)
			}
		})
	}
}

// TestGeminiRetryDelayInBodyBenchesForThatLong checks that the wait Gemini
// puts only in its body is read as the Retry-After the breaker follows.
func TestGeminiRetryDelayInBodyBenchesForThatLong(t *testing.T) {
	e := startProviders(t, []string{"gemini", "claude"}, func(d *sim.Deployment) {
		if d.Name == "gemini" {
			d.Quota = sim.Quota{RPM: 6}
		}
	}, "")
	c := e.openai()
	p := openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(8)}
	for i := 0; i < 6; i++ { // 1 answered, then 5 refusals open the breaker
		if _, err := c.Chat.Completions.New(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	s := e.engine.Backends["gemini"].Breaker.Snapshot()
	if s.State != breaker.Open {
		t.Fatalf("gemini breaker %v after 5 refusals", s.State)
	}
	if left := time.Until(s.Until); left <= 0 || left > 10*time.Second {
		t.Fatalf("benched for %v, want the body's retryDelay (under one 10 s slice)", left)
	}
}

// TestAnthropicClientThroughGateway serves POST /v1/messages to the
// official Anthropic client: passed through to Anthropic, translated for
// an Azure region and for Gemini, plain, streamed and with tool use.
func TestAnthropicClientThroughGateway(t *testing.T) {
	for _, target := range []string{"claude", "aoai-weu", "gemini"} {
		t.Run(target, func(t *testing.T) {
			e := startProviders(t, []string{target}, nil, "")
			c := anthropic.NewClient(aoption.WithBaseURL(e.url), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
			ctx := t.Context()
			params := anthropic.MessageNewParams{
				Model:     "claude-sonnet-4-5",
				MaxTokens: 16,
				System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
			}
			msg, err := c.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.StopReason == "" || msg.Usage.OutputTokens == 0 {
				t.Fatalf("message %+v", msg)
			}

			stream := c.Messages.NewStreaming(ctx, params)
			var acc anthropic.Message
			for stream.Next() {
				if err := acc.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Content) == 0 || acc.Content[0].Text == "" || acc.StopReason == "" {
				t.Fatalf("streamed message %+v", acc)
			}

			params.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}
			params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
				Name:        "get_weather",
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
			}}}
			msg, err = c.Messages.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			var use *anthropic.ToolUseBlock
			for _, b := range msg.Content {
				if tu, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
					use = &tu
				}
			}
			if use == nil || use.Name != "get_weather" || msg.StopReason != anthropic.StopReasonToolUse {
				t.Fatalf("tool use %+v (stop %q)", msg.Content, msg.StopReason)
			}
			var input map[string]any
			if json.Unmarshal(use.Input, &input) != nil || input["city"] == nil {
				t.Fatalf("tool input %s", use.Input)
			}
		})
	}
}

// TestUnsupportedFeatureSkipsBackend: a request a provider cannot honour
// skips it (never dropping the feature silently); if none can, 400.
func TestUnsupportedFeatureSkipsBackend(t *testing.T) {
	e := startProviders(t, []string{"claude", "aoai-weu"}, nil, "")
	c := e.openai()
	p := openai.ChatCompletionNewParams{Model: "chat-prod", N: openai.Int(2), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	var raw *http.Response
	if _, err := c.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-Switchover-Backend") != "aoai-weu" || raw.Header.Get("X-Switchover-Attempts") != "1" {
		t.Fatalf("n=2 served by %s after %s attempts", raw.Header.Get("X-Switchover-Backend"), raw.Header.Get("X-Switchover-Attempts"))
	}
	if st := e.sim.Stats()["claude"]; st.Calls != 0 {
		t.Fatal("the skipped backend was called")
	}

	only := startProviders(t, []string{"claude"}, nil, "")
	c = only.openai()
	_, err := c.Chat.Completions.New(t.Context(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_by_backends" || !strings.Contains(apiErr.Message, "claude") {
		t.Fatalf("err = %v", err)
	}
}

// TestProviderErrorsReachClientInItsFormat: a provider's own error
// arrives in OpenAI's format with its message kept. A 401 from the
// backend is the gateway's misconfiguration, not the caller's: 502
// backends_misconfigured, with the provider's message in the attempt.
func TestProviderErrorsReachClientInItsFormat(t *testing.T) {
	e := startProviders(t, []string{"claude"}, func(d *sim.Deployment) {
		if d.Name == "claude" {
			d.Key = "another-key-000000" // the gateway's key is now wrong: 401
		}
	}, "")
	c := e.openai()
	_, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "backends_misconfigured" || apiErr.Message == "" {
		t.Fatalf("err = %v", err)
	}
	if raw := apiErr.RawJSON(); !strings.Contains(strings.ToLower(raw), "key") || !strings.Contains(raw, `"status":401`) {
		t.Fatalf("provider's message lost: %s", raw)
	}
}

// TestInsufficientQuotaHoldsBreakerOpen: OpenAI's insufficient_quota is
// not going to clear in a minute: the breaker opens at once, for its cap.
func TestInsufficientQuotaHoldsBreakerOpen(t *testing.T) {
	broke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	}))
	defer broke.Close()
	e := startProviders(t, []string{"local"}, nil, "")
	cfgYAML := fmt.Sprintf(`log: {level: error}
backends:
  - {name: broke, type: openai, url: %q, api_key: k, breaker: {failures: 5, max_retry_after: 10m}}
  - {name: ok, type: openai_compatible, url: %q}
pools:
  - name: chat-prod
    members: [{backend: broke, priority: 1}, {backend: ok, priority: 2, model: llama3.1}]
`, broke.URL+"/v1", e.sim.Deployments()[4].URL)
	g := build(t, cfgYAML, nil, Deps{})
	client := &http.Client{Transport: g.Pools["chat-prod"]}
	resp, err := client.Post("http://x/v1/chat/completions", "application/json", strings.NewReader(`{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchover-Backend") != "ok" {
		t.Fatalf("status %d from %s", resp.StatusCode, resp.Header.Get("X-Switchover-Backend"))
	}
	s := g.Backends["broke"].Breaker.Snapshot()
	if left := time.Until(s.Until); s.State != breaker.Open || left < 9*time.Minute {
		t.Fatalf("after one insufficient_quota: %v for %v, want open for the 10m cap", s.State, left)
	}
}

// TestEntraTokenForAzure authenticates an Azure backend with a managed
// identity token from a local token endpoint; the simulated region
// accepts only that token.
func TestEntraTokenForAzure(t *testing.T) {
	var tokens atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(1)
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": "entra-token-abcdef0123", "expires_on": fmt.Sprint(time.Now().Add(time.Hour).Unix()),
			"resource": "https://cognitiveservices.azure.com", "token_type": "Bearer",
		})
	}))
	defer idp.Close()
	t.Setenv("IDENTITY_ENDPOINT", idp.URL)
	t.Setenv("IDENTITY_HEADER", "h")
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Deployments: []sim.Deployment{
		{Name: "weu", Flavour: sim.Azure, Deployment: "chat", Key: "entra-token-abcdef0123"},
		{Name: "sec", Flavour: sim.Azure, Deployment: "chat", Key: "entra-token-abcdef0123"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eps := s.Deployments()
	// The Azure SDK keeps managed identity tokens in a process-wide cache
	// keyed by client id: a fresh one per run makes every run (-count=N)
	// ask the endpoint (it used to fail when run with -count=2).
	clientID := fmt.Sprintf("switchover-test-%d", time.Now().UnixNano())
	y := fmt.Sprintf(`backends:
  - {name: weu, type: azure, url: %q, entra: {managed_identity: true, client_id: %s}}
  - {name: sec, type: azure, url: %q, entra: {managed_identity: true, client_id: %s}}
pools:
  - name: chat
    members: [{backend: weu}, {backend: sec}]
`, eps[0].URL, clientID, eps[1].URL, clientID)
	sv := serveConfig(t, y, nil)
	for i := 0; i < 6; i++ {
		resp, err := testClient.Post(sv.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if n := tokens.Load(); n != 1 {
		t.Fatalf("%d token requests for 6 calls over 2 backends, want 1 shared token", n)
	}
	if strings.Contains(sv.logs.String(), "entra-token-abcdef0123") {
		t.Fatal("token in the log")
	}
}

// TestTranslatedStreamBreakingMidWay: an Anthropic stream cut off after
// its first words reaches an OpenAI client as an error, not as a short
// answer that looks whole, and counts against the backend. (Cut after
// message_start, content_block_start and ping only, it has answered
// nothing and is failed over: see TestFilterResultsAloneDoNotCommitAStream.)
func TestTranslatedStreamBreakingMidWay(t *testing.T) {
	e := startProviders(t, []string{"claude"}, nil, "")
	// message_start, content_block_start, ping, then two words.
	if err := e.sim.SetFault("claude", sim.Fault{Mode: sim.FaultDropStream, After: 5}); err != nil {
		t.Fatal(err)
	}
	c := e.openai()
	stream := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(40),
	})
	n := 0
	for stream.Next() {
		n++
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "failed mid-way") {
		t.Fatalf("after %d chunks, err = %v", n, err)
	}
	if v := metric(t, e.metrics, "switchover_upstream_stream_errors_total", "backend", "claude"); v != 1 {
		t.Fatalf("stream errors %v", v)
	}
}

// TestOnePoolOfEveryProvider is the whole chain: Azure, OpenAI, Anthropic,
// Gemini and a local OpenAI-compatible server in one pool; each of the
// first four fails with its own kind of error, and the request is answered
// by the last, plain, streamed and with a tool call.
func TestOnePoolOfEveryProvider(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai", "claude", "gemini", "local"}, nil, "")
	e.fault(t, "aoai-weu", "down")
	e.fault(t, "openai", "error500")
	e.fault(t, "claude", "overloaded")
	e.fault(t, "gemini", "down")
	c := e.openai()
	var raw *http.Response
	p := openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool}}
	resp, err := c.Chat.Completions.New(t.Context(), p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-Switchover-Backend") != "local" || raw.Header.Get("X-Switchover-Attempts") != "5" {
		t.Fatalf("headers %v", raw.Header)
	}
	checkToolCall(t, resp.Choices[0].Message, resp.Choices[0].FinishReason)
	for _, want := range []string{"aoai-weu=503 server_error", "openai=500 server_error", "claude=529 server_error", "gemini=503 server_error", "local=200"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// Now Gemini recovers: the stream comes from it, translated.
	e.fault(t, "gemini", "none")
	stream := c.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-Switchover-Backend") != "gemini" || acc.Choices[0].Message.Content == "" {
		t.Fatalf("stream from %s: %q", raw.Header.Get("X-Switchover-Backend"), acc.Choices[0].Message.Content)
	}
}
