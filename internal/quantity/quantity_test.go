package quantity

import (
	"testing"
	"time"
)

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int64{"600": 600, "200k": 200000, "1.5m": 1500000, "1_000": 1000, " 2K ": 2000, "0": 0} {
		if got, err := ParseCount(in); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "1.5", "1e20", "NaN", "5g"} {
		if _, err := ParseCount(in); err == nil {
			t.Errorf("ParseCount(%q) took it", in)
		}
	}
}

func TestParseBudget(t *testing.T) {
	type budget struct {
		usd    float64
		period string
	}
	for in, want := range map[string]budget{"50/month": {50, "month"}, "$5/day": {5, "day"}, "0.25 / weekly": {0.25, "week"}, "10/mo": {10, "month"}} {
		if usd, period, err := ParseBudget(in); err != nil || (budget{usd, period}) != want {
			t.Errorf("ParseBudget(%q) = %v, %q, %v; want %+v", in, usd, period, err, want)
		}
	}
	for _, in := range []string{"50", "50/year", "0/day", "-5/day", "x/day", "1e10/day"} {
		if _, _, err := ParseBudget(in); err == nil {
			t.Errorf("ParseBudget(%q) took it", in)
		}
	}
}

func TestParseAge(t *testing.T) {
	if d, err := ParseAge("90d"); err != nil || d != 90*24*time.Hour {
		t.Errorf("90d: %v %v", d, err)
	}
	if d, err := ParseAge("36h"); err != nil || d != 36*time.Hour {
		t.Errorf("36h: %v %v", d, err)
	}
	for _, in := range []string{"", "0d", "-1h", "forever"} {
		if _, err := ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q) took it", in)
		}
	}
}
