package ledger

import (
	"context"
	"time"
)

// Store keeps keys, teams and usage. sqlite.Open and postgres.Open (in
// ledger/sqlite and ledger/postgres) return the two implementations,
// which share one schema and behave the same (the conformance suite in
// ledgertest runs against both). A Store is safe for concurrent use.
type Store interface {
	KeyLookup

	// CreateKey stores a new key as given (see NewKey, which fills in the
	// ID, secret and creation time). ErrConflict if the ID or prefix is
	// taken.
	CreateKey(ctx context.Context, k Key) error
	// KeyByPrefix returns the key whose secret, or previous secret (see
	// Key.PrevPrefix, whatever its PrevUntil), has that lookup prefix,
	// revoked or not, or ErrNotFound.
	KeyByPrefix(ctx context.Context, prefix string) (Key, error)
	// Keys lists all keys, revoked ones too, ordered by creation.
	Keys(ctx context.Context) ([]Key, error)
	// UpdateKey replaces the name, team, pools, models, limits, budget
	// and expiry of key k.ID; its secret, creation and revocation are
	// left alone. ErrNotFound if there is no such key.
	UpdateKey(ctx context.Context, k Key) error
	// RotateKey replaces the secret of key id (see Rotate). With a
	// non-zero prevUntil the old secret becomes the key's previous one
	// (PrevPrefix, PrevHash, PrevUntil), which KeyByPrefix still finds;
	// with zero, the old one stops working and any previous one is
	// forgotten. ErrNotFound, or ErrConflict if the prefix is taken.
	RotateKey(ctx context.Context, id, prefix string, hash []byte, prevUntil time.Time) error
	// RevokeKey marks key id revoked at time at; revoking a revoked key
	// keeps the first time. ErrNotFound if there is no such key.
	RevokeKey(ctx context.Context, id string, at time.Time) error

	// PutTeam creates or replaces a team.
	PutTeam(ctx context.Context, t Team) error
	// Teams lists the teams by name.
	Teams(ctx context.Context) ([]Team, error)

	// RecordUsage stores a batch of usage records in one transaction: all
	// or none. A record whose RequestID is already stored (or repeated
	// within the batch) is skipped, so retrying a batch is safe.
	// ErrInvalid, before anything is written, if a record has no
	// RequestID or no time. A record's Bodies go to a table of their
	// own, their secrets redacted (RedactBody).
	RecordUsage(ctx context.Context, batch []Usage) error
	// Spend sums usage as q asks, ordered by the grouping fields.
	Spend(ctx context.Context, q SpendQuery) ([]SpendRow, error)
	// Requests returns the usage records q selects, newest first (see
	// RequestQuery), for the request logs. ErrInvalid for a limit out of
	// range or an empty range.
	Requests(ctx context.Context, q RequestQuery) ([]Usage, error)
	// Request returns the usage record of one request, with its attempts;
	// ErrNotFound when none has that id (never recorded, or deleted by
	// the retention).
	Request(ctx context.Context, id string) (Usage, error)
	// DeleteRequestsBefore deletes the oldest per-request usage records
	// (and their tags) from before on, at most limit (1 to
	// MaxRequestsLimit) in one transaction, and returns how many; the
	// daily sums stay. See Retention.
	DeleteRequestsBefore(ctx context.Context, before time.Time, limit int) (int, error)
	// RequestBodies returns the bodies kept of request id (see Bodies),
	// or ErrNotFound when none were (not kept for its pool or key, or
	// past store.body_retention).
	RequestBodies(ctx context.Context, id string) (Bodies, error)
	// DeleteBodiesBefore deletes the oldest kept bodies from before on,
	// at most limit (1 to MaxRequestsLimit) in one transaction, and
	// returns how many; their requests' rows stay. See
	// Retention.BodiesRound.
	DeleteBodiesBefore(ctx context.Context, before time.Time, limit int) (int, error)
	// SpentSince returns the cost (USD) and tokens (prompt + completion)
	// of the usage matching f from since on, for budget checks; since is
	// usually PeriodStart of the budget's period.
	SpentSince(ctx context.Context, f Filter, since time.Time) (cost float64, tokens int64, err error)

	// Close closes the database.
	Close() error
}
