package ledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/internal/quantity"
)

// Key is a virtual key: a secret that clients send instead of a provider's
// key, and the limits that go with it. The secret itself is never stored:
// Prefix finds the row and Hash checks the secret (see NewSecret).
//
// Zero values mean "none": no team, every pool and model, no expiry, no
// rate, concurrency or budget limit.
type Key struct {
	// ID is the key's public name, "key_" and random characters. It is
	// what admins, logs and usage records show; it grants nothing.
	ID string `json:"id"`
	// Name is a free label for people ("ci", "alice's laptop").
	Name string `json:"name,omitempty"`
	// Team groups keys; a team's own limits and budget (see Team) apply
	// on top of the key's. A key may name a team that has no Team row:
	// then only the key's limits apply.
	Team string `json:"team,omitempty"`
	// Prefix is the lookup prefix of the secret (see NewSecret); unique
	// among keys. It is not secret: it shows which key a secret is.
	Prefix string `json:"prefix"`
	// Hash is SHA-256 of the whole secret. Never serialised.
	Hash []byte `json:"-"`
	// Tags label the key for people and for spend by tag (at most
	// labels.MaxTags, each a short word of ASCII letters, digits and
	// - _ . : / = @); each usage record keeps the tags its key had then.
	Tags []string `json:"tags,omitempty"`
	// Metadata is free-form text about the key (owner, ticket, cost
	// centre), at most labels.MaxMetadata entries; shown, never used.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Pools and Models the key may use; empty means all.
	Pools  []string `json:"pools,omitempty"`
	Models []string `json:"models,omitempty"`
	// RPM and TPM are requests and tokens per minute; 0 is unlimited.
	RPM int64 `json:"rpm,omitempty"`
	TPM int64 `json:"tpm,omitempty"`
	// MaxConcurrent bounds requests in flight; 0 is unlimited.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// Budget is the most the key may spend per BudgetPeriod, in USD; 0 is
	// unlimited. Stored in nano-USD, so values finer than 1e-9 round.
	Budget float64 `json:"budget,omitempty"`
	// BudgetPeriod is "day", "week", "month", or a number of hours or
	// days such as "1h" or "30d" (quantity.ParsePeriod's canonical form,
	// see PeriodStart), or "" when Budget is 0.
	BudgetPeriod string `json:"budget_period,omitempty"`
	// SoftBudget is an alert threshold below Budget, in USD per
	// BudgetPeriod: when the key's spend reaches it a budget
	// notification goes out (instead of the one at 80%); nothing is
	// refused. 0 is none; it needs a Budget, and is below it.
	SoftBudget float64 `json:"soft_budget,omitempty"`
	// Budgets bound the key's spend on one pool each (a pool is one
	// model, under its name and aliases), on top of its Budget. Nil is
	// none.
	Budgets []ScopedBudget `json:"budgets,omitempty"`
	// Patience is this key's default wait for quota (a request's
	// x-switchover-max-wait wins; capped by the pool's max_wait_limit);
	// zero is the pool's. Shown by the admin API as "30s".
	Patience time.Duration `json:"-"`
	// Cache is the key's own response cache settings, which win over its
	// pools' (see docs/cache.md); nil: it follows its pools'. Never
	// Shared (a key's cache stays scoped to its team). Stored as
	// cachepolicy's JSON, shown by the admin API as the same object.
	Cache *cachepolicy.Policy `json:"cache,omitempty"`
	// RequestLog is the key's own request log settings (whether its
	// calls keep their bodies), which win over its pools'; nil: it
	// follows its pools'. Stored as its JSON.
	RequestLog *KeyRequestLog `json:"request_log,omitempty"`
	// Expires is when the key stops working; zero is never.
	Expires time.Time `json:"expires,omitzero"`
	// Created is set by NewKey.
	Created time.Time `json:"created"`
	// Revoked is when RevokeKey revoked the key; zero while it works.
	Revoked time.Time `json:"revoked,omitzero"`
	// PrevPrefix and PrevHash are the secret that the last rotation with
	// a grace period replaced: it keeps working, with the key's limits,
	// until PrevUntil (exclusive). Empty and zero: none (a rotation
	// without grace clears them).
	PrevPrefix string    `json:"previous_prefix,omitempty"`
	PrevHash   []byte    `json:"-"`
	PrevUntil  time.Time `json:"previous_until,omitzero"`
}

// InGrace reports whether k's previous secret still works at now.
func (k Key) InGrace(now time.Time) bool {
	return k.PrevPrefix != "" && now.Before(k.PrevUntil)
}

// String names the key without its hash.
func (k Key) String() string { return fmt.Sprintf("key %s (%s…)", k.ID, k.Prefix) }

// Team groups keys and carries limits and a budget shared by all of them.
// Zero limits are unlimited, as for Key.
type Team struct {
	Name         string  `json:"name"`
	RPM          int64   `json:"rpm,omitempty"`
	TPM          int64   `json:"tpm,omitempty"`
	Budget       float64 `json:"budget,omitempty"`
	BudgetPeriod string  `json:"budget_period,omitempty"`
	// SoftBudget is an alert threshold below Budget, as Key.SoftBudget.
	SoftBudget float64 `json:"soft_budget,omitempty"`
}

// ScopedBudget is a budget of a key's spend on one pool, in USD per
// Period (as Key.BudgetPeriod).
type ScopedBudget struct {
	Pool   string  `json:"pool"`
	Budget float64 `json:"budget"`
	Period string  `json:"budget_period"`
}

// validBudgets checks a soft budget and scoped budgets as a store keeps
// them.
func validBudgets(budget, soft float64, scoped []ScopedBudget) error {
	if soft < 0 || (soft > 0 && soft >= budget) {
		return fmt.Errorf("%w: soft budget %v is not below the budget %v", ErrInvalid, soft, budget)
	}
	seen := map[string]bool{}
	for _, b := range scoped {
		if b.Pool == "" || b.Budget <= 0 {
			return fmt.Errorf("%w: a budget of a pool needs the pool and an amount above 0: %+v", ErrInvalid, b)
		}
		if _, err := PeriodStart(b.Period, time.Time{}); err != nil {
			return err
		}
		if seen[b.Pool] {
			return fmt.Errorf("%w: two budgets of pool %q", ErrInvalid, b.Pool)
		}
		seen[b.Pool] = true
	}
	return nil
}

// Errors returned by stores and Verify; test them with errors.Is.
var (
	// ErrNotFound: no key (or no key with that prefix) exists, or the
	// secret does not match it, or it is not a secret of ours at all.
	ErrNotFound = errors.New("ledger: key not found")
	// ErrRevoked: the key exists but was revoked.
	ErrRevoked = errors.New("ledger: key revoked")
	// ErrExpired: the key exists but its expiry has passed.
	ErrExpired = errors.New("ledger: key expired")
	// ErrConflict: a key with that ID or prefix already exists. NewKey
	// and Rotate retry with a fresh secret when the prefix collides.
	ErrConflict = errors.New("ledger: key already exists")
	// ErrInvalid: the argument can never be stored (a usage record
	// without a RequestID, an unknown budget period or grouping). The
	// Writer drops such batches rather than retrying them.
	ErrInvalid = errors.New("ledger: invalid argument")
)

// Budget periods.
const (
	PeriodDay   = "day"
	PeriodWeek  = "week"
	PeriodMonth = "month"
)

// periodAnchor is where fixed budget periods are counted from: Monday
// 1970-01-05 00:00 UTC, so that whole days are UTC days and whole weeks
// ISO weeks.
var periodAnchor = time.Unix(4*86400, 0).UTC()

// PeriodStart returns the start of the budget period that contains now,
// in UTC. period is in quantity.ParsePeriod's canonical form: "month" is
// the calendar month (from the first); every other period is a fixed
// block of its length ("day", "week", "1h", "12h", "30d"), laid end to
// end from Monday 1970-01-05 00:00 UTC: "day" starts at midnight, "week"
// on Monday (ISO weeks), "1h" on the hour, "30d" every 30 days. Every
// replica computes the same start from the time alone. It returns the
// zero time and ErrInvalid for any other period.
func PeriodStart(period string, now time.Time) (time.Time, error) {
	now = now.UTC()
	length, ok := quantity.PeriodLength(period)
	switch {
	case !ok:
		return time.Time{}, fmt.Errorf("%w: budget period %q (want day, week, month, or hours or days such as 1h, 30d)", ErrInvalid, period)
	case length == 0:
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC), nil
	}
	n := now.Sub(periodAnchor) / length
	if now.Before(periodAnchor) && now.Sub(periodAnchor)%length != 0 {
		n-- // round down before the anchor too
	}
	return periodAnchor.Add(n * length), nil
}

// PeriodEnd returns the end of the period that starts at start (as
// PeriodStart returned it), which is the next one's start.
func PeriodEnd(period string, start time.Time) time.Time {
	length, ok := quantity.PeriodLength(period)
	if !ok || length == 0 {
		return start.AddDate(0, 1, 0)
	}
	return start.Add(length)
}

func validPeriod(p string) error {
	if p == "" {
		return nil
	}
	_, err := PeriodStart(p, time.Time{})
	return err
}
