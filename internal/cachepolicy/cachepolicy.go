// Package cachepolicy is a key's or a pool's response cache settings as
// people write them, in the three places they can: the configuration
// file's cache: sections (package config), the admin API's "cache" field
// of a stored key (ledger/ledgerapi, kept by the ledger) and the command
// line's --cache. It reads, checks and writes them, so that the three
// accept the same settings and refuse the same mistakes with the same
// words, and it resolves them into the Effective policy a request
// follows (proxy.CachePolicy): a key's own wins over its pool's.
//
// Its functions are pure and safe for concurrent use; a Policy and an
// Effective are values, not shared state.
package cachepolicy

import (
	"time"
)

// Defaults of the settings left at zero.
const (
	// DefaultMaxWait bounds a coalesced call's wait for the first call's
	// answer.
	DefaultMaxWait = 2 * time.Minute
	// DefaultMaxEntry bounds one stored or shared answer, in bytes.
	DefaultMaxEntry = 1 << 20
)

// Policy is a cache section as written. Its zero value stores nothing
// (no TTL) and coalesces identical calls in flight (Coalesce nil is on).
type Policy struct {
	// TTL is how long an answer is replayed after it was stored; zero
	// stores none.
	TTL time.Duration
	// Coalesce makes identical calls in flight share the first one's
	// answer; nil is on.
	Coalesce *bool
	// MaxWait bounds a coalesced call's wait; zero is DefaultMaxWait.
	MaxWait time.Duration
	// MaxEntry bounds a stored or shared answer, in bytes; zero is
	// DefaultMaxEntry.
	MaxEntry int64
	// Shared shares a pool's entries between teams; a key's policy
	// cannot be shared (Check).
	Shared bool
}

// CoalesceOn reports whether p coalesces identical calls in flight.
func (p *Policy) CoalesceOn() bool { return p != nil && (p.Coalesce == nil || *p.Coalesce) }

// On reports whether p stores or coalesces anything.
func (p *Policy) On() bool { return p != nil && (p.TTL > 0 || p.CoalesceOn()) }

// Problem is one thing wrong with a policy: the setting ("ttl", "shared";
// "" for the policy as a whole) and what is wrong with it.
type Problem struct {
	Field, Message string
}

func (p *Problem) Error() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Problem messages, the same wherever a policy is written.
const (
	msgNegative  = "must not be negative"
	msgKeyShared = "a key's cache cannot be shared: share a pool's (pools[].cache.shared)"
	msgPoolOff   = "stores nothing (no ttl) and coalesces nothing (coalesce: false): set a ttl, or remove it"
)

// Check returns what is wrong with p as a key's cache (onKey) or a
// pool's; nil when nothing is. A key's policy may be off (it turns its
// pools' cache off for the key), a pool's may not (it would do nothing),
// and only a pool's may be shared. A nil p is no policy: nothing wrong.
func (p *Policy) Check(onKey bool) []Problem {
	if p == nil {
		return nil
	}
	var ps []Problem
	if p.TTL < 0 {
		ps = append(ps, Problem{"ttl", msgNegative})
	}
	if p.MaxWait < 0 {
		ps = append(ps, Problem{"max_wait", msgNegative})
	}
	if p.MaxEntry < 0 {
		ps = append(ps, Problem{"max_entry", msgNegative})
	}
	if onKey && p.Shared {
		ps = append(ps, Problem{"shared", msgKeyShared})
	}
	if !onKey && !p.On() {
		ps = append(ps, Problem{"", msgPoolOff})
	}
	return ps
}

// Effective is the policy a request follows, its defaults filled in
// (proxy.CachePolicy). Its zero value stores nothing and coalesces
// nothing.
type Effective struct {
	// TTL is how long an answer is replayed; zero stores none.
	TTL time.Duration
	// Coalesce joins identical calls in flight; MaxWait bounds a
	// follower's wait (zero: DefaultMaxWait).
	Coalesce bool
	MaxWait  time.Duration
	// MaxEntry bounds a stored or shared answer, in bytes (zero:
	// DefaultMaxEntry).
	MaxEntry int64
	// Shared shares the pool's entries between tenants (a pool's policy
	// only).
	Shared bool
}

// Effective is the policy p makes requests follow; nil for a nil p.
func (p *Policy) Effective() *Effective {
	if p == nil {
		return nil
	}
	e := &Effective{TTL: p.TTL, Coalesce: p.CoalesceOn(), MaxWait: p.MaxWait, MaxEntry: p.MaxEntry, Shared: p.Shared}
	if e.MaxWait <= 0 {
		e.MaxWait = DefaultMaxWait
	}
	if e.MaxEntry <= 0 {
		e.MaxEntry = DefaultMaxEntry
	}
	return e
}

// On reports whether e stores or coalesces anything.
func (e *Effective) On() bool { return e != nil && (e.TTL > 0 || e.Coalesce) }

// Pick is the policy of a call by a key with policy key on a pool with
// policy pool: the key's, whole, when it has one (its settings are not
// merged with the pool's: an own policy that is off turns the pool's off
// for the key, and a key's is never Shared), else the pool's; nil when
// that neither stores nor coalesces.
func Pick(key, pool *Effective) *Effective {
	pol := pool
	if key != nil {
		pol = key
	}
	if !pol.On() {
		return nil
	}
	return pol
}
