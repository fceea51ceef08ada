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
		{"gpt-4o-2024-08-06", table["gpt-4o"], true},
		{"gpt-4o-mini-2024-07-18", table["gpt-4o-mini"], true},
		{"GPT-4.1-mini", table["gpt-4.1-mini"], true},
		{"gpt-5-mini-2025-08-07", table["gpt-5-mini"], true},
		{"gpt-5", table["gpt-5"], true},
		{"claude-sonnet-4-5-20250929", table["claude-sonnet-4-5"], true},
		{"claude-opus-4-5-20251101", table["claude-opus-4-5"], true},
		{"models/gemini-2.5-flash-lite", table["gemini-2.5-flash-lite"], true},
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
