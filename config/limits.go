package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits are what one key or team may use. Zero fields are unlimited.
type Limits struct {
	// RPM bounds requests per minute: a token bucket refilled at that
	// rate that holds ten seconds' worth, as providers count their
	// quotas over short windows. Default unlimited.
	RPM Count `yaml:"rpm"`
	// TPM bounds tokens (prompt and completion) per minute. A request
	// takes its estimate (a token per 4 bytes of body, plus max_tokens)
	// when it starts, and the difference to what the answer reports when
	// it ends. Default unlimited.
	TPM Count `yaml:"tpm"`
	// MaxConcurrent bounds this key's requests in flight on each replica,
	// so one tenant cannot take every slot. Keys only. Default unlimited.
	MaxConcurrent int `yaml:"max_concurrent"`
	// Budget is the most that may be spent per calendar period (UTC), as
	// "50/month", "5/day" or "200/week" (US dollars). Past it requests
	// get 429 budget_exceeded until the period ends; notifications go out
	// at 80% and 100%. Default none.
	Budget Budget `yaml:"budget"`
}

// Team groups keys under shared limits and a shared budget, which apply on
// top of each key's own.
type Team struct {
	Name   string `yaml:"name"`
	Limits `yaml:",inline"`
}

// Store is where virtual keys, teams and usage are kept.
type Store struct {
	// SQLite is the database file of the embedded store, created if
	// missing (its directory too). One replica only.
	SQLite string `yaml:"sqlite"`
	// Postgres is a PostgreSQL connection string
	// (postgres://user:password@host/db), for several replicas. A secret
	// when it holds a password: write ${DATABASE_URL}.
	Postgres Secret `yaml:"postgres"`
	// Buffer bounds the usage records waiting to be written; past it new
	// records are dropped and counted (switchover_usage_dropped_total),
	// requests are never held. Default 10000.
	Buffer int `yaml:"buffer"`
	// Refresh is how often keys and spend are read back from the store,
	// which is how a key or spend of another replica arrives. Default 5s.
	Refresh Duration `yaml:"refresh"`
}

// Enabled reports whether a store is configured.
func (s *Store) Enabled() bool { return s != nil && (s.SQLite != "" || s.Postgres != "") }

// Count is a number of requests or tokens: 600, "200k", "1.5m".
type Count int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "expected a count such as 600 or 200k")
	}
	v, err := ParseCount(n.Value)
	if err != nil {
		return typeErr(n.Line, "%v", err)
	}
	*c = Count(v)
	return nil
}

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

// Budget is an amount in US dollars per calendar period.
type Budget struct {
	USD float64
	// Period is "day", "week" (ISO, from Monday) or "month", in UTC.
	Period string
}

// IsZero reports whether no budget is set.
func (b Budget) IsZero() bool { return b.USD == 0 }

func (b Budget) String() string {
	if b.IsZero() {
		return ""
	}
	return strconv.FormatFloat(b.USD, 'f', -1, 64) + "/" + b.Period
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *Budget) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "expected a budget such as 50/month")
	}
	v, err := ParseBudget(n.Value)
	if err != nil {
		return typeErr(n.Line, "%v", err)
	}
	*b = v
	return nil
}

// ParseBudget reads "50/month", "$5/day", "200/week" (also "monthly",
// "daily", "weekly" and "mo", "d", "w").
func ParseBudget(s string) (Budget, error) {
	amount, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Budget{}, fmt.Errorf("%q is not a budget (write an amount in US dollars and a period: 50/month, 5/day, 200/week)", s)
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(amount), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return Budget{}, fmt.Errorf("budget %q: %q is not an amount above 0", s, amount)
	}
	if f > 1e9 {
		return Budget{}, fmt.Errorf("budget %q is too large", s)
	}
	switch strings.ToLower(strings.TrimSpace(period)) {
	case "day", "daily", "d":
		period = "day"
	case "week", "weekly", "w":
		period = "week"
	case "month", "monthly", "mo":
		period = "month"
	default:
		return Budget{}, fmt.Errorf("budget %q: period %q is not day, week or month", s, period)
	}
	return Budget{USD: f, Period: period}, nil
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

// warnTenancy finds budgets that cannot outlive a restart, and an
// embedded store shared state suggests several replicas would each keep.
func (c *Config) warnTenancy() Problems {
	if c.Store.Enabled() {
		if c.Store.SQLite != "" && c.State.Redis != nil {
			return Problems{{Path: "store.sqlite",
				Msg: "state.redis says several replicas share this gateway, but an SQLite store is one replica's: each would keep its own keys and spend (a key made on one unknown to the others, budgets per replica); use store.postgres"}}
		}
		return nil
	}
	var ws Problems
	for i, k := range c.Keys {
		if !k.Budget.IsZero() {
			ws = append(ws, Problem{Path: fmt.Sprintf("keys[%d].budget", i),
				Msg: "without a store, spend is counted from the gateway's start: a restart forgets it; add store: {sqlite: FILE}"})
		}
	}
	for i, t := range c.Teams {
		if !t.Budget.IsZero() {
			ws = append(ws, Problem{Path: fmt.Sprintf("teams[%d].budget", i),
				Msg: "without a store, spend is counted from the gateway's start: a restart forgets it; add store: {sqlite: FILE}"})
		}
	}
	return ws
}
