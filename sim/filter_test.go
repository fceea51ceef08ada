package sim

import "testing"

func TestContentFilterCheck(t *testing.T) {
	def := Deployment{}.withDefaults().ContentFilter
	tests := []struct {
		name   string
		filter ContentFilter
		prompt string
		want   filterVerdict
	}{
		{"clean", def, "hello", filterPass},
		{"block, any case", def, "say Trigger-Content-Filter please", filterBlock},
		{"truncate", def, "trigger-filtered-reply", filterTruncate},
		{"block wins", def, "trigger-filtered-reply trigger-content-filter", filterBlock},
		{"disabled", ContentFilter{Block: "x", Truncate: "y", Disabled: true}, "x y", filterPass},
		{"empty prompt", def, "", filterPass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.filter.check(tc.prompt); got != tc.want {
				t.Errorf("check(%q) = %v, want %v", tc.prompt, got, tc.want)
			}
		})
	}
}
