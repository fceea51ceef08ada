package engine

import (
	"encoding/base64"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tokens"
)

// TestCountTokensEstimateIsThePromptEstimate: a count_tokens the gateway
// answers itself (no Anthropic member) is the shared prompt estimate
// (route.Request.PromptTokens), not text at four bytes a token: a long
// English prompt is within the estimator's documented 10% of the count
// for the named model (o200k_base's tokenizer for gpt-4o, Anthropic's 3.5
// characters a token for Claude), which four bytes a token is not for
// Claude; an image counts its flat cost, never its base64 bytes.
func TestCountTokensEstimateIsThePromptEstimate(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "  - name: gpt-4o\n    members: [{backend: openai, model: gpt-4o-2024-08-06}]\n")
	ac := e.anthropic()
	prose, err := os.ReadFile("../docs/providers.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(prose)
	var counter tokens.Counter
	count := func(model string, blocks ...anthropic.ContentBlockParamUnion) int64 {
		t.Helper()
		var raw *http.Response
		n, err := ac.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{
			Model:    anthropic.Model(model),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)},
		}, aoption.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if raw.Header.Get(proxy.HeaderEstimate) != "true" {
			t.Fatalf("%s: not the gateway's estimate", model)
		}
		return n.InputTokens
	}
	within := func(got, want int64, tol float64) bool {
		return math.Abs(float64(got-want)) <= tol*float64(want)
	}
	const tol = 0.10 // route.EstimateText's documented error for English prose
	for _, model := range []string{"gpt-4o", "claude-sonnet-4-5"} {
		want := int64(counter.Count(model, text) + route.ItemTokens)
		got := count(model, anthropic.NewTextBlock(text))
		t.Logf("%s: estimate %d, expected %d, four bytes a token %d", model, got, want, len(text)/4)
		if !within(got, want, tol) {
			t.Errorf("%s: a long English prompt counts %d, want %d within %.0f%%", model, got, want, 100*tol)
		}
	}
	// The old count, four bytes a token, is not within the bound for
	// Claude: the check above tells the two apart.
	if claude := int64(counter.Count("claude-sonnet-4-5", text) + route.ItemTokens); within(int64(len(text)/4+route.ItemTokens), claude, tol) {
		t.Fatalf("four bytes a token (%d) is within %.0f%% of %d: the test cannot tell the counts apart", len(text)/4, 100*tol, claude)
	}

	image := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\x89PNG image bytes ", 20000)))
	question := "What is in this image?"
	want := int64(route.ClaudeImageTokens + counter.Count("claude-sonnet-4-5", question) + route.ItemTokens)
	got := count("claude-sonnet-4-5", anthropic.NewImageBlockBase64("image/png", image), anthropic.NewTextBlock(question))
	if !within(got, want, tol) {
		t.Errorf("an image and a question count %d, want %d (the image at its flat %d); its base64 is %d bytes",
			got, want, route.ClaudeImageTokens, len(image))
	}
}
