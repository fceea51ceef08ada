// Package quantity reads the quantities people write for limits: counts
// of requests or tokens ("200k"), budgets ("50/month") and ages ("90d").
// The configuration file (package config), the command line and the
// admin API (ledger/ledgerapi) all read them here, so that they accept
// the same texts and say the same things about the others.
//
// The functions are pure and safe for concurrent use.
package quantity

import (
	"errors"
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

// ParseBudget reads "50/month", "$5/day", "200/week", "100/30d", "5/1h"
// (see ParsePeriod for the periods): an amount in US dollars above 0 and
// at most 1e9, and its period in ParsePeriod's canonical form. On error
// usd is 0 and period "".
func ParseBudget(s string) (usd float64, period string, err error) {
	amount, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, "", fmt.Errorf("%q is not a budget (write an amount in US dollars and a period: 50/month, 5/day, 100/30d, 5/1h)", s)
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(amount), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, "", fmt.Errorf("budget %q: %q is not an amount above 0", s, amount)
	}
	if f > 1e9 {
		return 0, "", fmt.Errorf("budget %q is too large", s)
	}
	p, err := ParsePeriod(period)
	if err != nil {
		return 0, "", fmt.Errorf("budget %q: %w", s, err)
	}
	return f, p, nil
}

// Budget periods.
const (
	MinPeriod = time.Hour
	MaxPeriod = 366 * 24 * time.Hour
)

// ParsePeriod reads a budget period and returns its canonical form:
//   - "day" ("daily", "d", "1d", "24h"), "week" ("weekly", "w", "1w",
//     "7d", "168h") and "month" ("monthly", "mo");
//   - a whole number of hours, days or weeks from 1h to 366d: "1h",
//     "12h", "30d", "2w"; canonically "Nh" below a day or when not whole
//     days, "Nd" otherwise ("48h" is "2d", "2w" is "14d").
//
// "month" is the calendar month. The others are fixed blocks of their
// length laid end to end from Monday 1970-01-05 00:00 UTC (see
// PeriodLength), so that "day" is the UTC day and "week" the ISO week.
func ParsePeriod(s string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "day", "daily", "d":
		return "day", nil
	case "week", "weekly", "w":
		return "week", nil
	case "month", "monthly", "mo":
		return "month", nil
	}
	bad := fmt.Errorf("period %q is not day, week, month or a number of hours, days or weeks such as 1h, 12h, 30d", s)
	if len(t) < 2 {
		return "", bad
	}
	var unit time.Duration
	switch t[len(t)-1] {
	case 'h':
		unit = time.Hour
	case 'd':
		unit = 24 * time.Hour
	case 'w':
		unit = 7 * 24 * time.Hour
	default:
		return "", bad
	}
	n, err := strconv.ParseInt(t[:len(t)-1], 10, 64)
	if err != nil {
		return "", bad
	}
	if n <= 0 || n > int64(MaxPeriod/unit) {
		return "", fmt.Errorf("period %q is outside 1h to 366d", s)
	}
	return canonical(time.Duration(n) * unit), nil
}

func canonical(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "day"
	case d == 7*day:
		return "week"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
}

// PeriodLength returns the length of a period in canonical form (see
// ParsePeriod): 24h for "day", 168h for "week", 0 for "month", whose
// length varies. ok is false for anything that is not canonical.
func PeriodLength(period string) (d time.Duration, ok bool) {
	switch period {
	case "day":
		return 24 * time.Hour, true
	case "week":
		return 7 * 24 * time.Hour, true
	case "month":
		return 0, true
	}
	p, err := ParsePeriod(period)
	if err != nil || p != period {
		return 0, false
	}
	n, _ := strconv.ParseInt(period[:len(period)-1], 10, 64)
	if period[len(period)-1] == 'd' {
		return time.Duration(n) * 24 * time.Hour, true
	}
	return time.Duration(n) * time.Hour, true
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

// ErrNegative is ParseDuration's error for a negative duration.
var ErrNegative = errors.New("negative")

// ParseDuration reads a duration as Go writes it, with a unit ("500ms",
// "30s", "1m30s"; "0" alone needs none); never negative (ErrNegative).
// The configuration's durations and the admin API's read it here.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use a unit: 500ms, 30s, 2m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is %w", s, ErrNegative)
	}
	return d, nil
}

// MaxSize bounds every size: larger values are refused as mistakes
// (ErrSizeTooLarge), never wrapped around or replaced by a default.
const MaxSize = 1 << 40 // 1TiB

// ErrSizeTooLarge is ParseSize's error for a value over MaxSize,
// including one that would overflow int64.
var ErrSizeTooLarge = errors.New("size too large")

// errBadSize is ParseSize's error for what is not a size at all.
var errBadSize = errors.New("not a size (use 1048576, 512KiB, 32MiB)")

// ParseSize reads a byte count written as 1048576, "512KiB", "32MiB" or
// "1GB" (KiB, MiB, GiB: powers of 2; KB, MB, GB: of 10; B: bytes): a
// whole number without sign, at most MaxSize (else ErrSizeTooLarge).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, errBadSize // no sign, no empty number
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, ErrSizeTooLarge
	}
	if err != nil {
		return 0, errBadSize
	}
	if v > MaxSize/mult {
		return 0, ErrSizeTooLarge
	}
	return v * mult, nil
}

// FormatSize writes n as ParseSize reads it, in the largest of GiB, MiB
// and KiB that divides it, else in bytes: "1MiB", "1536KiB", "1000".
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
