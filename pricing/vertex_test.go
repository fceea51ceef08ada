package pricing

import (
	"math"
	"testing"
)

func TestVertexPrices(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range []struct {
		model, location string
		want            Price
		ok              bool
	}{
		{"claude-sonnet-4-5@20250929", "global", Price{Input: 3, CachedInput: 0.30, Output: 15}, true},
		{"claude-sonnet-4-5@20250929", "us-east5", Price{Input: 3.3, CachedInput: 0.33, Output: 16.5}, true},
		{"claude-sonnet-4-5-20250929", "europe-west1", Price{Input: 3.3, CachedInput: 0.33, Output: 16.5}, true},
		{"claude-opus-4-1@20250805", "us-east5", Price{Input: 15, CachedInput: 1.5, Output: 75}, true}, // no premium before 4.5
		{"gemini-2.5-pro", "us-central1", Price{Input: 1.25, Output: 10}, true},
		{"gemini-2.5-flash", "global", Price{Input: 0.30, Output: 2.50}, true},
		{"claude-unknown@20250101", "us-east5", Price{}, false},
	} {
		got, ok := Vertex(tc.model, tc.location)
		if ok != tc.ok || !near(got.Input, tc.want.Input) || !near(got.CachedInput, tc.want.CachedInput) || !near(got.Output, tc.want.Output) {
			t.Errorf("Vertex(%q, %q) = %+v, %v; want %+v, %v", tc.model, tc.location, got, ok, tc.want, tc.ok)
		}
	}
}
