package gameday

import (
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-1, "never"},
		{0, "0 ms"},
		{850 * time.Microsecond, "850 µs"},
		{999_600 * time.Nanosecond, "1.0 ms"},
		{3400 * time.Microsecond, "3.4 ms"},
		{9960 * time.Microsecond, "10 ms"},
		{340 * time.Millisecond, "340 ms"},
		{999_600 * time.Microsecond, "1.0 s"},
		{1234 * time.Millisecond, "1.2 s"},
		{12345 * time.Millisecond, "12.3 s"},
		{125 * time.Second, "125 s"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestFormatPercent(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want string
	}{
		{1, "100%"},
		{0, "0%"},
		{0.95, "95.0%"},
		{0.7, "70.0%"},
		{0.12345, "12.3%"},
		{0.9996, "99.96%"},
		{0.99999, ">99.99%"},
		{0.0004, "0.04%"},
		{0.000001, "<0.01%"},
	} {
		if got := formatPercent(tc.rate); got != tc.want {
			t.Errorf("formatPercent(%v) = %q, want %q", tc.rate, got, tc.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 600000: "600,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
}
