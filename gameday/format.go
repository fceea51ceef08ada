package gameday

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// formatDuration formats d for people: "850 µs", "3.4 ms", "340 ms",
// "1.2 s", "125 s"; a negative d (the report's "did not happen") is
// "never".
func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "never"
	case d == 0:
		return "0 ms"
	}
	if r := d.Round(time.Microsecond); r < time.Millisecond {
		return fmt.Sprintf("%d µs", r/time.Microsecond)
	}
	if r := d.Round(100 * time.Microsecond); r < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(r)/float64(time.Millisecond))
	}
	if r := d.Round(time.Millisecond); r < time.Second {
		return fmt.Sprintf("%d ms", r/time.Millisecond)
	}
	if r := d.Round(100 * time.Millisecond); r < 100*time.Second {
		return fmt.Sprintf("%.1f s", r.Seconds())
	}
	return fmt.Sprintf("%d s", d.Round(time.Second)/time.Second)
}

// formatPercent formats a rate in 0..1 as a percentage with one decimal,
// never rounding a partial success up to "100.0%" or a partial failure
// down to "0.0%".
func formatPercent(rate float64) string {
	switch {
	case math.IsNaN(rate):
		return "–"
	case rate >= 1:
		return "100%"
	case rate <= 0:
		return "0%"
	}
	p := rate * 100
	for _, dec := range []int{1, 2} {
		s := strconv.FormatFloat(p, 'f', dec, 64)
		if !strings.HasPrefix(s, "100.") && strings.Trim(s, "0.") != "" {
			return s + "%"
		}
	}
	if p > 50 {
		return ">99.99%"
	}
	return "<0.01%"
}

// formatCount formats n with thousands separators: 12,345.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatLimit formats a quota, where 0 means no limit.
func formatLimit(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return formatCount(n)
}
