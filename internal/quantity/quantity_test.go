package quantity

import (
	"errors"
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
	for in, want := range map[string]budget{"50/month": {50, "month"}, "$5/day": {5, "day"}, "0.25 / weekly": {0.25, "week"}, "10/mo": {10, "month"},
		"100/30d": {100, "30d"}, "5/1h": {5, "1h"}, "20/12h": {20, "12h"}, "50/7d": {50, "week"}, "1/24h": {1, "day"}, "1/48h": {1, "2d"}, "1/2w": {1, "14d"}, "1/36h": {1, "36h"}} {
		if usd, period, err := ParseBudget(in); err != nil || (budget{usd, period}) != want {
			t.Errorf("ParseBudget(%q) = %v, %q, %v; want %+v", in, usd, period, err, want)
		}
	}
	for _, in := range []string{"50", "50/year", "0/day", "-5/day", "x/day", "1e10/day", "5/0h", "5/90m", "5/1.5h", "5/367d", "5/-1d", "5/h1", "5/d1", "5/1y"} {
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

func TestPeriodLength(t *testing.T) {
	for p, want := range map[string]time.Duration{"day": 24 * time.Hour, "week": 168 * time.Hour, "month": 0, "1h": time.Hour, "36h": 36 * time.Hour, "30d": 720 * time.Hour, "366d": 366 * 24 * time.Hour} {
		if got, ok := PeriodLength(p); !ok || got != want {
			t.Errorf("PeriodLength(%q) = %v, %v; want %v", p, got, ok, want)
		}
	}
	for _, p := range []string{"", "24h", "7d", "1d", "48h", "fortnight", "0h"} {
		if _, ok := PeriodLength(p); ok {
			t.Errorf("PeriodLength(%q) took a period that is not canonical", p)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "1m30s": 90 * time.Second, "250ms": 250 * time.Millisecond, "0": 0} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "30", "soon", "1d", "-1s"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) took it", in)
		}
	}
	if _, err := ParseDuration("-1s"); !errors.Is(err, ErrNegative) {
		t.Errorf("ParseDuration(-1s) = %v, want ErrNegative", err)
	}
}

func TestParseSizeAndFormatSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "512KiB": 512 << 10, "32 MiB": 32 << 20, "1GB": 1e9, "1024GiB": MaxSize, "7B": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
		if back, err := ParseSize(FormatSize(got)); err != nil || back != got {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", got, FormatSize(got), back, err)
		}
	}
	for _, in := range []string{"1099511627777", "9000000000GiB", "99999999999999999999KiB"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrSizeTooLarge) {
			t.Errorf("ParseSize(%q) = %v, want ErrSizeTooLarge", in, err)
		}
	}
	for _, in := range []string{"-1MiB", "+1MiB", "MiB", "lots", "1.5GiB", ""} {
		if _, err := ParseSize(in); err == nil || errors.Is(err, ErrSizeTooLarge) {
			t.Errorf("ParseSize(%q) = %v, want not a size", in, err)
		}
	}
	if got := FormatSize(1536 << 10); got != "1536KiB" {
		t.Errorf("FormatSize(1536KiB) = %q", got)
	}
}
