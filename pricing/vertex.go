package pricing

import "github.com/switchover-gw/switchover/models"

// TakenVertex is when the Vertex AI prices were checked: Gemini 2.5 Pro
// and Flash at the list prices third-party guides of 2026 quote for
// Vertex (standard, pay as you go, prompts under 200,000 tokens; Flash-Lite
// was not confirmed for Vertex and is the AI Studio price), and
// Anthropic's Claude, which Vertex sells at Anthropic's own list prices
// at its global endpoint (Anthropic's "Claude on Vertex AI" page).
const TakenVertex = "2026-12"

// vertexRegionalPremium are the Claude models that cost more at a
// regional Vertex endpoint (us-east5, europe-west1…) than at the global
// one: Claude Sonnet 4.5 and the models after it, as Anthropic's "Claude
// on Vertex AI" page says (older models keep one price). The premium's
// size, 10%, is the figure LiteLLM's price table uses; no Google page
// giving it was found.
var vertexRegionalPremium = map[string]bool{
	"claude-sonnet-4-5": true,
	"claude-haiku-4-5":  true,
	"claude-opus-4-5":   true,
}

// Vertex returns the price of model (as Lookup names it, the Vertex
// version suffix "@20250929" included) on Vertex AI at location: the list
// price, Gemini's being Google's and Claude's Anthropic's, with the
// regional endpoint's 10% premium for the Claude models that have one
// when location is a region rather than "global".
func Vertex(model, location string) (Price, bool) {
	p, ok := Lookup(model)
	if !ok || location == "" || location == "global" {
		return p, ok
	}
	if vertexRegionalPremium[models.Canonical(model)] {
		p = Price{Input: p.Input * 1.1, CachedInput: p.CachedInput * 1.1, Output: p.Output * 1.1}
	}
	return p, ok
}
