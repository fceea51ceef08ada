package ledger

import (
	"errors"
	"fmt"
	"time"
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
	// BudgetPeriod is "day", "week" or "month" (calendar periods in UTC,
	// see PeriodStart), or "" when Budget is 0.
	BudgetPeriod string `json:"budget_period,omitempty"`
	// Patience is this key's default wait for quota (a request's
	// x-switchover-max-wait wins; capped by the pool's max_wait_limit);
	// zero is the pool's. Shown by the admin API as "30s".
	Patience time.Duration `json:"-"`
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

// PeriodStart returns the start of the calendar period that contains now,
// in UTC: midnight for "day", Monday midnight for "week" (ISO weeks), the
// first of the month for "month". It returns the zero time and ErrInvalid
// for any other period.
func PeriodStart(period string, now time.Time) (time.Time, error) {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch period {
	case PeriodDay:
		return day, nil
	case PeriodWeek:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back), nil
	case PeriodMonth:
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC), nil
	}
	return time.Time{}, fmt.Errorf("%w: budget period %q (want day, week or month)", ErrInvalid, period)
}

func validPeriod(p string) error {
	if p == "" {
		return nil
	}
	_, err := PeriodStart(p, time.Time{})
	return err
}
