package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// TestThinkingSkipReasonNamesAzureAndTheModel: a thinking request to an
// Azure member on a model that does not reason was skipped with
// "openai cannot honour reasoning_effort": the backend is Azure, and the
// cause is its model, not its API. The reason says both.
func TestThinkingSkipReasonNamesAzureAndTheModel(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu"}, nil, "")
	ac := e.anthropic()
	_, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{
		Model: "claude-sonnet-4-5", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(2048),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Think, then say hello"))},
	})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("thinking to a model that cannot reason: %v", err)
	}
	const want = `aoai-weu: azure cannot honour reasoning_effort: its model \"gpt-4o\" is not a reasoning model`
	if raw := apiErr.RawJSON(); !strings.Contains(raw, want) {
		t.Fatalf("reason %s, want it to contain %s", raw, want)
	}
}
