package pricing

import "github.com/switchover-gw/switchover/models"

// TakenVertex is when the Vertex AI prices were read: Google's Vertex AI
// list prices for Gemini (standard, pay as you go, prompts under 200,000
// tokens) and for Anthropic's Claude, which Vertex sells at Anthropic's
// own list prices at its global endpoint.
const TakenVertex = "2026-12"

// vertexRegionalPremium are the Claude models that cost 10% more at a
// regional Vertex endpoint (us-east5, europe-west1…) than at the global
// one: Claude Sonnet 4.5 and the models after it.
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
