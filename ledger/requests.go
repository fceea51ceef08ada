package ledger

import (
	"fmt"
	"time"
)

// RequestQuery selects usage records one by one, for the request logs:
// newest first, in the order of (At, RequestID) descending, which is
// stable under inserts of newer records (a record stored late with an
// old time, as a spool replay stores it, appears where its time puts it).
// Empty fields match everything.
type RequestQuery struct {
	// From and To bound At to [From, To); zero is unbounded.
	From, To time.Time
	Key      string
	Team     string
	// Tag keeps the records whose key had this tag then.
	Tag   string
	Model string
	// EndUser keeps the records made for this end user (Usage.EndUser).
	EndUser string
	// StatusMin and StatusMax bound the HTTP status returned to the
	// client (inclusive); zero is unbounded.
	StatusMin, StatusMax int
	// Pool keeps the requests sent to this pool (the one that answered,
	// after a fallback).
	Pool string
	// Backend keeps the requests that tried this backend: answered by
	// it, or failed over from it (any of their attempts).
	Backend string
	// Failover is "yes" (answered by another backend than the first
	// tried), "no", or "" for both.
	Failover string
	// Cache is "hit" or "coalesced" (answered by the response cache),
	// "any" (either), "none" (a call), or "" for all.
	Cache string
	// Text keeps the requests of which one of these is exactly Text: the
	// request id, key id, team, pool, model, a backend it tried, or
	// (unless TextNoEndUser) the end user. Equality, not a substring:
	// every one of these columns has an index, so a search costs about
	// what its filters cost together.
	Text string
	// TextNoEndUser makes Text not match end users, for callers who may
	// not see them (the console's viewers).
	TextNoEndUser bool
	// Before, when set, keeps the records after it in the order (older
	// than it): the position where the last page ended.
	Before Cursor
	// Limit is the most records returned; 1 to MaxRequestsLimit.
	Limit int
}

// MaxRequestsLimit bounds RequestQuery.Limit (the admin API's pages are
// smaller: it asks one more than a page to know if another follows).
const MaxRequestsLimit = 10_000

// Cursor is a position in the request logs: the time and request id of
// the last record of a page. The zero Cursor is the start.
type Cursor struct {
	At        time.Time
	RequestID string
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.RequestID == "" }

// CursorOf returns the position of u.
func CursorOf(u Usage) Cursor { return Cursor{At: u.At, RequestID: u.RequestID} }

func (q RequestQuery) validate() error {
	if q.Limit < 1 || q.Limit > MaxRequestsLimit {
		return fmt.Errorf("%w: limit %d (want 1 to %d)", ErrInvalid, q.Limit, MaxRequestsLimit)
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return fmt.Errorf("%w: request range [%s, %s) is empty", ErrInvalid, q.From, q.To)
	}
	if len(q.EndUser) > MaxEndUser {
		return fmt.Errorf("%w: end user of %d bytes (a record keeps at most %d)", ErrInvalid, len(q.EndUser), MaxEndUser)
	}
	if q.StatusMax != 0 && q.StatusMax < q.StatusMin {
		return fmt.Errorf("%w: status range %d to %d is empty", ErrInvalid, q.StatusMin, q.StatusMax)
	}
	switch q.Failover {
	case "", "yes", "no":
	default:
		return fmt.Errorf("%w: failover %q (want yes, no or nothing)", ErrInvalid, q.Failover)
	}
	switch q.Cache {
	case "", "hit", "coalesced", "any", "none":
	default:
		return fmt.Errorf("%w: cache %q (want hit, coalesced, any, none or nothing)", ErrInvalid, q.Cache)
	}
	if len(q.Text) > MaxText {
		return fmt.Errorf("%w: text of %d bytes (at most %d)", ErrInvalid, len(q.Text), MaxText)
	}
	if q.Before.At.IsZero() != (q.Before.RequestID == "") {
		return fmt.Errorf("%w: a cursor needs a time and a request id", ErrInvalid)
	}
	return nil
}
