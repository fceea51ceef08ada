package engine

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

func compactParams(input string) responses.ResponseCompactParams {
	return responses.ResponseCompactParams{Model: "chat-prod",
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String(input)}}
}

// TestResponsesCompactIsRoutedAsACall: POST responses/compact was taken
// for a stored response's id and answered 405 by the gateway. It is a
// call routed by its model, on /v1/, /openai/v1/ and Azure's
// /openai/responses/compact with an api-version: a member without the
// Responses API (Anthropic) is passed over, never translated for; a
// previous_response_id takes it to the backend that holds that response.
func TestResponsesCompactIsRoutedAsACall(t *testing.T) {
	e := startProviders(t, []string{"claude", "aoai-weu", "openai"}, nil, "")
	clients := map[string]openai.Client{
		"/v1/":        e.openai(),
		"/openai/v1/": openai.NewClient(option.WithBaseURL(e.url+"/openai/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)),
		"azure":       openai.NewClient(azure.WithEndpoint(e.url, "2025-04-01-preview"), azure.WithAPIKey("unused"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0)),
	}
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			var raw *http.Response
			got, err := c.Responses.Compact(t.Context(), compactParams("remember the blue door"), option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			if b := raw.Header.Get(route.HeaderBackend); b != "aoai-weu" {
				t.Errorf("served by %q, want aoai-weu (claude has no Responses API)", b)
			}
			if got.Object != "response.compaction" || len(got.Output) == 0 || got.Output[len(got.Output)-1].Type != "compaction" {
				t.Fatalf("answer %+v", got)
			}
		})
	}

	// A compaction of a response another member holds goes to it, though
	// the pool would pick aoai-weu.
	c := e.openai()
	for _, b := range []string{"claude", "aoai-weu"} {
		e.engine.Backends[b].Breaker.Force(breaker.Open, time.Now().Add(time.Hour), breaker.KindManual, "test")
	}
	var raw *http.Response
	prev, err := c.Responses.New(t.Context(), responseParams("first turn"), option.WithResponseInto(&raw))
	if err != nil || raw.Header.Get(route.HeaderBackend) != "openai" {
		t.Fatalf("first turn: %v, served by %q", err, raw.Header.Get(route.HeaderBackend))
	}
	for _, b := range []string{"claude", "aoai-weu"} {
		e.engine.Backends[b].Breaker.Force(breaker.Closed, time.Time{}, breaker.KindManual, "test")
	}
	p := responses.ResponseCompactParams{Model: "chat-prod", PreviousResponseID: openai.String(prev.ID)}
	got, err := c.Responses.Compact(t.Context(), p, option.WithResponseInto(&raw))
	if err != nil || raw.Header.Get(route.HeaderBackend) != "openai" || got.Object != "response.compaction" {
		t.Fatalf("compact of a response held by openai: %v, served by %q", err, raw.Header.Get(route.HeaderBackend))
	}
}

// TestResponsesCompactWithoutAResponsesMember: a pool none of whose
// members has the Responses API answers unsupported_by_backends, not a
// translated call; with 404, as a provider without the endpoint answers
// (other operations its members lack are 400).
func TestResponsesCompactWithoutAResponsesMember(t *testing.T) {
	e := startProviders(t, []string{"claude", "gemini"}, nil, "")
	c := e.openai()
	_, err := c.Responses.Compact(t.Context(), compactParams("hello"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "unsupported_by_backends" {
		t.Fatalf("compact with no Responses member: %v %s", err, apiErr.RawJSON())
	}
}
