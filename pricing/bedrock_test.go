package pricing

import "testing"

func TestLookupBedrockIDs(t *testing.T) {
	sonnet, _ := Lookup("claude-sonnet-4-5")
	tests := []struct {
		id   string
		want Price
		ok   bool
	}{
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet, true},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet, true},
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", sonnet, true},
		{"eu.anthropic.claude-3-5-haiku-20241022-v1:0", Price{Input: 0.80, CachedInput: 0.08, Output: 4.00}, true},
		{"amazon.nova-pro-v1:0", Price{Input: 0.80, Output: 3.20}, true},
		{"us.amazon.nova-micro-v1:0", Price{Input: 0.035, Output: 0.14}, true},
		{"meta.llama3-1-8b-instruct-v1:0", Price{Input: 0.22, Output: 0.22}, true},
		{"meta.llama3-1-405b-instruct-v1:0", Price{}, false}, // not in the table: not guessed
		{"anthropic.claude-instant-v1", Price{}, false},
		{"cohere.command-r-v1:0", Price{}, false},
	}
	for _, tc := range tests {
		got, ok := Lookup(tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
