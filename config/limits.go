package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchover-gw/switchover/internal/quantity"
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
	// Budget is the most that may be spent (US dollars) per period:
	// "50/month", "5/day", "200/week", or any whole number of hours or
	// days from 1h to 366d: "5/1h", "20/12h", "100/30d". "month" is the
	// calendar month; the others are fixed blocks laid end to end from
	// Monday 1970-01-05 00:00 UTC (every replica agrees on a period's
	// start from the time alone): "1h" is each clock hour, "day" (1d)
	// each UTC day, "week" (7d) each ISO week, "30d" consecutive 30-day
	// blocks. Past it requests get 429 budget_exceeded until the period
	// ends (Retry-After says when); notifications go out at 80% and 100%.
	// Default none.
	Budget Budget `yaml:"budget"`
	// EndUserLimits bound each end user of the key (of a team: of all
	// its keys together), apart from every other: see EndUserLimits.
	// Default none.
	EndUserLimits EndUserLimits `yaml:"end_user_limits"`
	// SoftBudget is an alert threshold below Budget, in US dollars per
	// the budget's period ("40" or "$40"): when spend reaches it, one
	// budget notification goes out per period (in place of the one at
	// 80%); nothing is refused. Requires Budget and must be below it.
	// Default none (the alert at 80%).
	SoftBudget Dollars `yaml:"soft_budget"`
}

// PoolBudget is a budget of a key's spend on one pool: {pool: gpt4o,
// budget: 10/day}. A pool serves one model under its name and aliases,
// so {model: NAME} names the pool NAME is the name or an alias of (for
// readers who think in models). Enforced as the key's own budget is: a
// request to the pool is priced and reserved against it, and refused
// with 429 budget_exceeded when it does not fit.
type PoolBudget struct {
	Pool   string `yaml:"pool"`
	Model  string `yaml:"model"`
	Budget Budget `yaml:"budget"`
}

// PoolIn returns the pool b bounds in c: its pool, or the pool its model
// names (by name or alias); "" when there is none.
func (b PoolBudget) PoolIn(c *Config) string {
	if b.Pool != "" {
		return b.Pool
	}
	for _, p := range c.Pools {
		if p.Name == b.Model || slices.Contains(p.Aliases, b.Model) {
			return p.Name
		}
	}
	return ""
}

// Dollars is an amount in US dollars: 40, "$40", "0.5".
type Dollars float64

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Dollars) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "expected an amount in US dollars such as 40")
	}
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(n.Value), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e9 {
		return typeErr(n.Line, "%q is not an amount in US dollars from 0 to 1e9", n.Value)
	}
	*d = Dollars(f)
	return nil
}

// Team groups keys under shared limits and a shared budget, which apply on
// top of each key's own.
type Team struct {
	Name   string `yaml:"name"`
	Limits `yaml:",inline"`
	// Org names the organisation (one of orgs) whose limits and budget
	// apply on top of the team's. Default none.
	Org string `yaml:"org"`
	// ShareObjects makes the stored objects (responses, files, batches
	// …) the team's keys make belong to the team: every key of the team
	// reaches them. Default false: each key reaches only its own. Turned
	// off again, the objects made while it was on are reached by no key
	// until it is turned back on.
	ShareObjects bool `yaml:"share_objects"`
}

// Org groups teams under shared limits (rpm, tpm) and a shared budget
// (budget, soft_budget), which apply on top of each team's and each
// key's: a request of a key of a team of the org is admitted only when
// the key, its team and the org all have room. Its spend is its teams'.
// Orgs are kept in this file only.
type Org struct {
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
	// requests are never held for the store (only for the spool's fsync,
	// see Spool). Default 10000.
	Buffer int `yaml:"buffer"`
	// Refresh is how often keys and spend are read back from the store,
	// which is how a key or spend of another replica arrives. Default 5s.
	Refresh Duration `yaml:"refresh"`
	// Spool is a local file where each usage record is written and
	// fsynced before its request's log line, so that a crash or a store
	// that stays down through the shutdown loses no answered request: the
	// next start stores what it holds (once: records carry their request
	// id). Default: the SQLite file's path with ".spool" added; with
	// PostgreSQL none (set one on a local disk of each replica). "off"
	// turns it off. Cost: one fsync shared by the requests that end
	// together, about 0.1–10 ms added to each request's end depending on
	// the disk, and about 300 bytes a record until it is stored. The
	// audit trail's entries have a spool of their own beside it, the same
	// path with ".audit" added.
	Spool string `yaml:"spool"`
	// Retention is how long per-request usage records (the request logs
	// of GET /admin/usage/requests, and usage over parts of days) are
	// kept: "90d", "2160h". Older ones are deleted in the background,
	// 1000 a transaction, once an hour. At least 32d, so that every
	// budget period finds its records; records a budget reads (an end
	// user's budget over its period, a budget of hours over its period
	// and a day) are kept even when older; the daily sums (usage over
	// whole days, budgets) are kept regardless. Default "" or "0":
	// forever.
	Retention string `yaml:"retention"`
	// AuditRetention is how long the audit trail's entries (operator
	// actions, key and team changes, console sign-ins: GET /admin/audit)
	// are kept: "400d", "9600h". Older ones are deleted by the job that
	// applies Retention, whatever Retention says. Default "400d": an
	// audit trail answers questions asked long after the spend they
	// concern (a yearly access review, an incident found months later;
	// PCI DSS, for one, asks for 12 months), and costs little (a few
	// hundred bytes an entry, a few KB at most). At least 1d; "0" keeps
	// them forever.
	AuditRetention string `yaml:"audit_retention"`
	// BodyRetention is how long the bodies the request log keeps (for
	// the pools and keys with request_log.bodies) are kept: "7d",
	// "48h". Older ones are deleted in the background, once an hour;
	// their requests' rows stay for Retention. At most Retention.
	// Default "" : 7d; "0": as long as their rows.
	BodyRetention string `yaml:"body_retention"`
}

// DefaultAuditRetention is store.audit_retention's default: a year and a
// margin for a yearly review held late.
const DefaultAuditRetention = 400 * 24 * time.Hour

// AuditRetentionAge returns AuditRetention as a duration: its default
// when unset, 0 (forever) for "0", and for a value validation refuses.
// Without a store block, 0.
func (s *Store) AuditRetentionAge() time.Duration {
	switch {
	case s == nil || s.AuditRetention == "0":
		return 0
	case s.AuditRetention == "":
		return DefaultAuditRetention
	}
	d, err := parseRetention(s.AuditRetention)
	if err != nil {
		return 0
	}
	return d
}

// AuditSpoolPath returns the audit trail's spool file: the usage spool's
// path with ".audit" added, or "" when there is no usage spool.
func (s *Store) AuditSpoolPath() string {
	if p := s.SpoolPath(); p != "" {
		return p + ".audit"
	}
	return ""
}

// MinRetention is the shortest store.retention (ledger.MinRetention).
const MinRetention = 32 * 24 * time.Hour

// RetentionAge returns Retention as a duration; 0 is forever (and for a
// value validation refuses).
func (s *Store) RetentionAge() time.Duration {
	if s == nil || s.Retention == "" || s.Retention == "0" {
		return 0
	}
	d, err := parseRetention(s.Retention)
	if err != nil {
		return 0
	}
	return d
}

// parseRetention reads a retention: days ("90d") or a Go duration.
func parseRetention(v string) (time.Duration, error) {
	if d, err := quantity.ParseAge(v); err == nil {
		return d, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a time such as 90d or 2160h", v)
	}
	return d, nil
}

// SpoolPath returns the usage spool's file, or "" when there is none.
func (s *Store) SpoolPath() string {
	switch {
	case s == nil || s.Spool == "off":
		return ""
	case s.Spool != "":
		return s.Spool
	case s.SQLite != "":
		return s.SQLite + ".spool"
	}
	return ""
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
// (million) suffix, "200k", "1.5m"; never negative. It is
// quantity.ParseCount, which the admin API shares.
func ParseCount(s string) (int64, error) { return quantity.ParseCount(s) }

// Budget is an amount in US dollars per period.
type Budget struct {
	USD float64
	// Period is "day", "week" (ISO, from Monday), "month", or a number of
	// hours or days ("1h", "12h", "30d"), in UTC: quantity.ParsePeriod's
	// canonical form, which ledger.PeriodStart takes.
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
		return typeErr(n.Line, "expected a budget such as 50/month or 100/30d")
	}
	v, err := ParseBudget(n.Value)
	if err != nil {
		return typeErr(n.Line, "%v", err)
	}
	*b = v
	return nil
}

// ParseBudget reads "50/month", "$5/day", "200/week" (also "monthly",
// "daily", "weekly" and "mo", "d", "w"), "5/1h", "100/30d", with
// quantity.ParseBudget, which the admin API shares.
func ParseBudget(s string) (Budget, error) {
	usd, period, err := quantity.ParseBudget(s)
	if err != nil {
		return Budget{}, err
	}
	return Budget{USD: usd, Period: period}, nil
}

// ParseAge reads a time from now: a Go duration ("36h") or days ("90d").
// It is quantity.ParseAge, which the admin API shares.
func ParseAge(s string) (time.Duration, error) { return quantity.ParseAge(s) }

// warnTenancy finds budgets that cannot outlive a restart, and an
// embedded store shared state suggests several replicas would each keep.
func (c *Config) warnTenancy() Problems {
	if c.Store.Enabled() {
		ws := c.warnKeyTeams()
		if c.Store.SQLite != "" && c.State.Redis != nil {
			ws = append(ws, Problem{Path: "store.sqlite",
				Msg: "state.redis says several replicas share this gateway, but an SQLite store is one replica's: each would keep its own keys and spend (a key made on one unknown to the others, budgets per replica); use store.postgres"})
		}
		return ws
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
	for i, o := range c.Orgs {
		if !o.Budget.IsZero() {
			ws = append(ws, Problem{Path: fmt.Sprintf("orgs[%d].budget", i),
				Msg: "without a store, spend is counted from the gateway's start: a restart forgets it; add store: {sqlite: FILE}"})
		}
	}
	return ws
}
