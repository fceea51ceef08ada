// Package quantity reads the quantities people write for limits: counts
// of requests or tokens ("200k"), budgets ("50/month") and ages ("90d").
// The configuration file (package config), the command line and the
// admin API (ledger/ledgerapi) all read them here, so that they accept
// the same texts and say the same things about the others.
//
// The functions are pure and safe for concurrent use.
package quantity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseCount reads a count: digits with an optional k (thousand) or m
// (million) suffix, "200k", "1.5m"; never negative.
func ParseCount(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a count (write 600, 200k or 1.5m)", s)
	}
	f *= mult
	if f < 0 {
		return 0, fmt.Errorf("count %q is negative", s)
	}
	if f > 1e15 {
		return 0, fmt.Errorf("count %q is too large", s)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("count %q is not a whole number", s)
	}
	return int64(f), nil
}

// ParseBudget reads "50/month", "$5/day", "200/week" (also "monthly",
// "daily", "weekly" and "mo", "d", "w"): an amount in US dollars above 0
// and at most 1e9, and its period, "day", "week" or "month". On error
// usd is 0 and period "".
func ParseBudget(s string) (usd float64, period string, err error) {
	amount, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, "", fmt.Errorf("%q is not a budget (write an amount in US dollars and a period: 50/month, 5/day, 200/week)", s)
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(amount), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, "", fmt.Errorf("budget %q: %q is not an amount above 0", s, amount)
	}
	if f > 1e9 {
		return 0, "", fmt.Errorf("budget %q is too large", s)
	}
	switch strings.ToLower(strings.TrimSpace(period)) {
	case "day", "daily", "d":
		period = "day"
	case "week", "weekly", "w":
		period = "week"
	case "month", "monthly", "mo":
		period = "month"
	default:
		return 0, "", fmt.Errorf("budget %q: period %q is not day, week or month", s, period)
	}
	return f, period, nil
}

// ParseAge reads a time from now: a Go duration ("36h") or days ("90d").
func ParseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a number of days such as 90d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a time such as 90d or 36h", s)
	}
	return d, nil
}
