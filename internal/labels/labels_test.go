package labels

import (
	"slices"
	"strings"
	"testing"
)

func TestTags(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
		bad  bool
	}{
		{"none", nil, nil, false},
		{"kept in order, repeats once", []string{"prod", "team-a", "prod", "cost:center/42"}, []string{"prod", "team-a", "cost:center/42"}, false},
		{"empty", []string{""}, nil, true},
		{"space", []string{"my tag"}, nil, true},
		{"quote", []string{"a'b"}, nil, true},
		{"sql", []string{"x;DROP"}, nil, true},
		{"non-ASCII", []string{"équipe"}, nil, true},
		{"formula", []string{"=SUM(A1)"}, nil, true},
		{"leading dash", []string{"-x"}, nil, true},
		{"longest", []string{strings.Repeat("a", MaxTagLen)}, []string{strings.Repeat("a", MaxTagLen)}, false},
		{"too long", []string{strings.Repeat("a", MaxTagLen+1)}, nil, true},
		{"too many", func() []string {
			var ts []string
			for i := range MaxTags + 1 {
				ts = append(ts, "t"+string(rune('a'+i)))
			}
			return ts
		}(), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Tags(tc.in)
			if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
				t.Fatalf("Tags(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.bad)
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	many := map[string]string{}
	for i := range MaxMetadata + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	tests := []struct {
		name string
		in   map[string]string
		bad  bool
	}{
		{"none", nil, false},
		{"text", map[string]string{"owner": "Ana Pérez", "ticket": "OPS-1; DROP TABLE x"}, false},
		{"bad name", map[string]string{"cost center": "x"}, true},
		{"empty name", map[string]string{"": "x"}, true},
		{"control character", map[string]string{"owner": "ana\nroot"}, true},
		{"invalid UTF-8", map[string]string{"owner": "\xff"}, true},
		{"longest value", map[string]string{"owner": strings.Repeat("a", MaxValueLen)}, false},
		{"too long", map[string]string{"owner": strings.Repeat("a", MaxValueLen+1)}, true},
		{"too many", many, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Metadata(tc.in); (err != nil) != tc.bad {
				t.Fatalf("Metadata(%q) = %v, want error %v", tc.in, err, tc.bad)
			}
		})
	}
}
