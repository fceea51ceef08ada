package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/route"
)

// TestPoolFallbackFromConfig: a pool whose only member is down falls back
// to the pool its configuration names, and the answer says so.
func TestPoolFallbackFromConfig(t *testing.T) {
	extra := "  - name: backup\n    members: [{backend: openai, model: gpt-4o-2024-08-06}]\n"
	e := startProvidersWith(t, []string{"aoai-weu"}, nil, extra, func(y string) string {
		return strings.Replace(y, "    retry: {attempts: 5}\n", "    retry: {attempts: 5}\n    fallback: backup\n", 1)
	})
	e.fault(t, "aoai-weu", "down")
	c := e.openai()
	var raw *http.Response
	_, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "openai" || raw.Header.Get(route.HeaderFallback) != "chat-prod" {
		t.Fatalf("headers %v", raw.Header)
	}
}

// TestHedgeFromConfig: a pool with hedge set sends a hedge to the next
// member when the first has no first byte after the delay, passes on the
// hedge's answer, and says so in the headers and the request log.
func TestHedgeFromConfig(t *testing.T) {
	e := startProvidersWith(t, []string{"aoai-weu", "openai"}, nil, "", func(y string) string {
		return strings.Replace(y, "    retry: {attempts: 5}\n", "    retry: {attempts: 5}\n    hedge: {after: 50ms, share: 1}\n", 1)
	})
	e.fault(t, "aoai-weu", "blackhole")
	c := e.openai()
	var raw *http.Response
	_, err := c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "chat-prod",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get(route.HeaderBackend) != "openai" || raw.Header.Get(route.HeaderHedge) != "hedge" {
		t.Fatalf("headers %v", raw.Header)
	}
	if !strings.Contains(e.logs.String(), `"hedge":"hedge"`) || !strings.Contains(e.logs.String(), "aoai-weu=outpaced") {
		t.Fatalf("request log lacks the hedge:\n%s", e.logs.String())
	}
}
