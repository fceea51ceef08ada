package engine

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// TestCountTokensThroughGateway: count_tokens is the Anthropic member's
// own count when the pool has one, else the gateway's estimate, labelled
// as such.
func TestCountTokensThroughGateway(t *testing.T) {
	params := anthropic.MessageCountTokensParams{
		Model:    "claude-sonnet-4-5",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many tokens is this sentence, roughly?"))},
	}
	for _, tt := range []struct {
		name     string
		order    []string
		estimate bool
	}{
		{"anthropic member counts", []string{"openai", "claude"}, false},
		{"no anthropic member: estimated", []string{"openai"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := startProviders(t, tt.order, nil, "")
			var raw *http.Response
			ac := e.anthropic()
			n, err := ac.Messages.CountTokens(t.Context(), params, aoption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if n.InputTokens <= 0 {
				t.Fatalf("input_tokens %d", n.InputTokens)
			}
			if got := raw.Header.Get(proxy.HeaderEstimate) == "true"; got != tt.estimate {
				t.Fatalf("estimate header %q, want estimate=%v", raw.Header.Get(proxy.HeaderEstimate), tt.estimate)
			}
			if !tt.estimate && raw.Header.Get(route.HeaderBackend) != "claude" {
				t.Fatalf("counted by %q", raw.Header.Get(route.HeaderBackend))
			}
		})
	}
}

// TestExtendedThinkingThroughGateway: an Anthropic client asking for
// extended thinking skips a member whose model cannot reason (saying so),
// and is answered by one that can; alone, that member gives a clear 400.
func TestExtendedThinkingThroughGateway(t *testing.T) {
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(2048),
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Think, then say hello"))},
	}
	e := startProviders(t, []string{"openai", "claude"}, nil, "")
	var raw *http.Response
	ac := e.anthropic()
	msg, err := ac.Messages.New(t.Context(), params, aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "claude" || len(msg.Content) == 0 {
		t.Fatalf("served by %q: %+v", raw.Header.Get(route.HeaderBackend), msg.Content)
	}
	if raw.Header.Get("Request-Id") == "" {
		t.Error("no request-id header")
	}

	alone := startProviders(t, []string{"openai"}, nil, "")
	ac2 := alone.anthropic()
	_, err = ac2.Messages.New(t.Context(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Error(), "reasoning_effort") {
		t.Fatalf("thinking to a model that cannot reason: %v", err)
	}
}

// TestTranslatedAnthropicAnswerHasRequestID: an Anthropic client served
// by an OpenAI backend still gets the request-id header its SDK reads.
func TestTranslatedAnthropicAnswerHasRequestID(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "")
	var raw *http.Response
	ac := e.anthropic()
	_, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}, aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if id := raw.Header.Get("Request-Id"); id == "" || id != raw.Header.Get("X-Request-Id") {
		t.Fatalf("request-id %q, x-request-id %q", id, raw.Header.Get("X-Request-Id"))
	}
}

// TestMessageBatchesPinnedToAnthropic: Anthropic's message batches,
// pinned to the Anthropic backend, are made and read there, the batch id
// naming it.
func TestMessageBatchesPinnedToAnthropic(t *testing.T) {
	e := startProviders(t, []string{"openai", "claude"}, nil, "pinned:\n  - {paths: [messages/batches], backend: claude}\n")
	ac := e.anthropic()
	ctx := t.Context()
	var raw *http.Response
	b, err := ac.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{{
		CustomID: "r1",
		Params: anthropic.MessageBatchNewParamsRequestParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}},
	}}}, aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if owner, _, ok := route.UntagID(b.ID); !ok || owner != "claude" || raw.Header.Get(route.HeaderBackend) != "claude" {
		t.Fatalf("batch %q from %q", b.ID, raw.Header.Get(route.HeaderBackend))
	}
	got, err := ac.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{})
	if err != nil || got.ID != b.ID {
		t.Fatalf("get: %v %+v", err, got)
	}
}

// TestExtendedThinkingToAReasoningModel: thinking from an Anthropic client
// reaches an OpenAI member whose model reasons as reasoning_effort.
func TestExtendedThinkingToAReasoningModel(t *testing.T) {
	e := startProviders(t, []string{"openai"}, func(d *sim.Deployment) {
		if d.Name == "openai" {
			d.Deployment, d.Model = "o3-mini", "o3-mini"
		}
	}, "")
	ac := e.anthropic()
	var raw *http.Response
	msg, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(8192),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Think, then say hello"))},
	}, aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "openai" || len(msg.Content) == 0 {
		t.Fatalf("from %q: %+v", raw.Header.Get(route.HeaderBackend), msg.Content)
	}
}

// TestAnthropicErrorFromEngineHasRequestID: an Anthropic error body the
// engine makes (a backend's error in another format, converted; the
// answer when every member failed) carries the gateway's request id, the
// one in X-Request-Id, as its request_id, not null.
func TestAnthropicErrorFromEngineHasRequestID(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fault  string // the openai member's fault mode, "" for none
		body   string
		status int
	}{
		{"backend error converted", "", `{"model":"claude-sonnet-4-5","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":2048},"messages":[{"role":"user","content":"hi"}]}`, http.StatusBadRequest},
		{"every member failed", "down", `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := startProviders(t, []string{"openai"}, nil, "")
			if tt.fault != "" {
				e.fault(t, "openai", tt.fault)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/messages", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b struct {
				Type      string  `json:"type"`
				RequestID *string `json:"request_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode < 400 || (tt.status != 0 && resp.StatusCode != tt.status) || b.Type != "error" {
				t.Fatalf("status %d, type %q", resp.StatusCode, b.Type)
			}
			id := resp.Header.Get("X-Request-Id")
			if id == "" || b.RequestID == nil || *b.RequestID != id {
				t.Fatalf("request_id %v, X-Request-Id %q", b.RequestID, id)
			}
		})
	}
}
