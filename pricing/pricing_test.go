package pricing

import (
	"math"
	"testing"
)

func TestLookupIgnoresTheDateOnly(t *testing.T) {
	tests := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"gpt-4o-2024-08-06", table["gpt-4o"].Price, true},
		{"gpt-4o-mini-2024-07-18", table["gpt-4o-mini"].Price, true},
		{"GPT-4.1-mini", table["gpt-4.1-mini"].Price, true},
		{"gpt-5-mini-2025-08-07", table["gpt-5-mini"].Price, true},
		{"gpt-5", table["gpt-5"].Price, true},
		{"claude-sonnet-4-5-20250929", table["claude-sonnet-4-5"].Price, true},
		{"claude-opus-4-5-20251101", table["claude-opus-4-5"].Price, true},
		{"models/gemini-2.5-flash-lite", table["gemini-2.5-flash-lite"].Price, true},
		{"gpt-4o-realtime-preview", Price{}, false},
		{"llama-3.1-70b", Price{}, false},
		{"gpt-40", Price{}, false},
	}
	for _, tc := range tests {
		if got, ok := Lookup(tc.model); ok != tc.ok || got != tc.want {
			t.Errorf("Lookup(%q) = %+v %v, want %+v %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCost(t *testing.T) {
	p := Price{Input: 2.50, CachedInput: 1.25, Output: 10}
	// 1,000 prompt tokens of which 400 cached, 500 completion tokens:
	// 600 × 2.50 + 400 × 1.25 + 500 × 10 per million.
	if got, want := p.Cost(1000, 400, 500), (600*2.50+400*1.25+500*10)/1e6; math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost %v, want %v", got, want)
	}
	// An unpriced cache costs the input price; more cached than prompt
	// is capped.
	if got, want := (Price{Input: 1, Output: 2}).Cost(100, 500, 0), 100/1e6; math.Abs(got-want) > 1e-12 {
		t.Fatalf("cost %v, want %v", got, want)
	}
}

// TestLookupByCanonicalIDAndService: Claude on Bedrock (a cross-region
// profile) and Vertex prices as Claude; an open model prices at the
// service's own list price where it has one, else the maker's; every
// price says when it was taken.
func TestLookupByCanonicalIDAndService(t *testing.T) {
	tests := []struct {
		service, model string
		want           Price
		taken          string
	}{
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", table["claude-sonnet-4-5"].Price, Taken},
		{"vertex", "claude-sonnet-4-5@20250929", table["claude-sonnet-4-5"].Price, Taken},
		{"", "anthropic.claude-haiku-4-5-20251001-v1:0", table["claude-haiku-4-5"].Price, Taken},
		{"bedrock", "us.meta.llama3-3-70b-instruct-v1:0", Price{Input: 0.72, Output: 0.72}, ""},
		{"groq", "llama-3.3-70b-versatile", Price{Input: 0.59, Output: 0.79}, "2026-04"},
		{"foundry", "DeepSeek-R1", Price{Input: 1.35, Output: 5.40}, ""},
		{"deepseek", "deepseek-reasoner", table["deepseek-r1"].Price, "2025-12"},
	}
	for _, tc := range tests {
		l, ok := LookupService(tc.service, tc.model)
		if !ok || l.Price != tc.want || l.Taken != tc.taken {
			t.Errorf("LookupService(%q, %q) = %+v %v, want %+v of %s", tc.service, tc.model, l, ok, tc.want, tc.taken)
		}
	}
	if _, ok := LookupService("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo"); ok {
		t.Error("a model without a price was priced")
	}
}

// TestUnverifiedPricesAreEstimates is the regression test for prices
// shipped with a date although no published list was read for them
// (issue 28): they carry no date and say they are estimates, and the
// Llama 3 8B price copied from Llama 3.1 8B is gone.
func TestUnverifiedPricesAreEstimates(t *testing.T) {
	estimates := []struct{ service, model string }{
		{"bedrock", "meta.llama3-3-70b-instruct-v1:0"},
		{"bedrock", "deepseek.r1-v1:0"},
		{"foundry", "DeepSeek-R1"},
		{"foundry", "Llama-3.3-70B-Instruct"},
		{"bedrock", "meta.llama3-1-8b-instruct-v1:0"},
	}
	for _, tc := range estimates {
		l, ok := LookupService(tc.service, tc.model)
		if !ok || !l.Estimate() || l.Taken != "" {
			t.Errorf("LookupService(%q, %q) = %+v, %v; want an undated estimate", tc.service, tc.model, l, ok)
		}
	}
	checked := []struct{ service, model string }{
		{"bedrock", "amazon.nova-pro-v1:0"},
		{"bedrock", "mistral.mistral-large-2402-v1:0"},
		{"bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"groq", "llama-3.3-70b-versatile"},
		{"deepseek", "deepseek-chat"},
	}
	for _, tc := range checked {
		if l, ok := LookupService(tc.service, tc.model); !ok || l.Estimate() {
			t.Errorf("LookupService(%q, %q) = %+v, %v; want a dated price", tc.service, tc.model, l, ok)
		}
	}
	if l, ok := LookupService("bedrock", "meta.llama3-8b-instruct-v1:0"); ok {
		t.Errorf("Llama 3 8B on Bedrock is priced %+v; want no shipped price", l)
	}
}
