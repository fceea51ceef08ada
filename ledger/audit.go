package ledger

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// AuditEntry is one row of the audit trail: who did what, when.
type AuditEntry struct {
	// ID is filled in by RecordAudit when empty.
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Actor is who: the console's user, or the admin key's holder as the
	// gateway names it. Never a secret.
	Actor string `json:"actor"`
	// Action is the event's kind: "admin:drain", "admin:key:create",
	// "signin", "signin_refused".
	Action string `json:"action"`
	// Target is what the action was on (a backend, a pool), or "".
	Target string `json:"target,omitempty"`
	// Detail is a JSON object, at most MaxAuditDetail bytes; a longer or
	// invalid one is stored as {"text": its first bytes}.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Limits of the audit trail's fields: longer ones are cut.
const (
	MaxAuditDetail = 4096
	MaxAuditField  = 256
	MaxAuditLimit  = 1000
)

// AuditQuery selects entries of the trail: [From, To), an exact Actor and
// Action when not "", at most Limit (1 to MaxAuditLimit), newest first.
type AuditQuery struct {
	From, To      time.Time
	Actor, Action string
	Limit         int
}

// AuditWriter records entries of the audit trail.
type AuditWriter interface {
	// RecordAudit stores e. ErrInvalid without a time or an action. An
	// entry whose ID is stored already is skipped, so that storing it
	// again (a retry, a replay of the spool) is safe.
	RecordAudit(ctx context.Context, e AuditEntry) error
	// RecordAudits stores a batch of entries in one transaction, all or
	// none, skipping those whose ID is stored. ErrInvalid, before
	// anything is written, if an entry has no ID, time or action.
	RecordAudits(ctx context.Context, batch []AuditEntry) error
}

// AuditLog writes the audit trail off the request path, as Writer does
// usage: Add buffers an entry (with a spool, once it is on disk), a
// goroutine stores batches, keeps them and retries with backoff while the
// store fails, and Close leaves what it could not store in the spool for
// the next start (see OpenAuditSpool), so that an outage of the store
// loses no entry. An entry without ID gets a random one when added, one
// without a time the clock's; one without an action makes its batch
// refused (dropped and counted): give every entry one. Safe for
// concurrent use.
type AuditLog = BatchWriter[AuditEntry]

// NewAuditLog starts an AuditLog into w. Close it to stop it.
func NewAuditLog(w AuditWriter, o BatchOptions[AuditEntry]) *AuditLog {
	return newBatchWriter(w.RecordAudits, func(e *AuditEntry, now time.Time) {
		if e.ID == "" {
			e.ID = newAuditID()
		}
		if e.At.IsZero() {
			e.At = now
		}
	}, "audit entries", o, nil)
}

// newAuditID is a random id of an audit entry.
func newAuditID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AuditReader reads the audit trail.
type AuditReader interface {
	// Audit returns the entries q selects, newest first. ErrInvalid for a
	// limit out of range or an empty range.
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
}

var (
	_ AuditWriter = (*sqlStore)(nil)
	_ AuditReader = (*sqlStore)(nil)
)

// auditDetail is d as stored: a JSON object of at most MaxAuditDetail
// bytes, "{}" when empty.
func auditDetail(d json.RawMessage) string {
	if len(d) == 0 {
		return "{}"
	}
	var obj map[string]any
	if len(d) <= MaxAuditDetail && json.Unmarshal(d, &obj) == nil && obj != nil {
		return string(d)
	}
	text := string(d)
	for len(text) > 0 {
		b, _ := json.Marshal(map[string]string{"text": text})
		if len(b) <= MaxAuditDetail {
			return string(b)
		}
		text = strings.ToValidUTF8(text[:len(text)*3/4], "")
	}
	return "{}"
}

func (s *sqlStore) RecordAudit(ctx context.Context, e AuditEntry) error {
	if e.At.IsZero() || e.Action == "" {
		return fmt.Errorf("%w: an audit entry needs a time and an action", ErrInvalid)
	}
	if e.ID == "" {
		e.ID = newAuditID()
	}
	return s.RecordAudits(ctx, []AuditEntry{e})
}

func (s *sqlStore) RecordAudits(ctx context.Context, batch []AuditEntry) error {
	for i, e := range batch {
		if e.ID == "" || e.At.IsZero() || e.Action == "" {
			return fmt.Errorf("%w: audit entry %d of the batch needs an id, a time and an action", ErrInvalid, i)
		}
	}
	if len(batch) == 0 {
		return nil
	}
	// In id order, so that concurrent batches lock rows in one order.
	es := slices.SortedStableFunc(slices.Values(batch), func(a, b AuditEntry) int { return cmp.Compare(a.ID, b.ID) })
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: recording audit: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	ins, err := tx.PrepareContext(ctx, s.q(`INSERT INTO audit (id, at_us, actor, action, target, detail) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`))
	if err != nil {
		return fmt.Errorf("ledger: recording audit: %w", err)
	}
	defer ins.Close()
	for _, e := range es {
		if _, err := ins.ExecContext(ctx, bounded(e.ID, 64), e.At.UnixMicro(), strings.ToValidUTF8(bounded(e.Actor, MaxAuditField), ""),
			strings.ToValidUTF8(bounded(e.Action, MaxAuditField), ""), strings.ToValidUTF8(bounded(e.Target, MaxAuditField), ""),
			auditDetail(e.Detail)); err != nil {
			return fmt.Errorf("ledger: recording audit: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: recording audit: %w", err)
	}
	return nil
}

func (s *sqlStore) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit < 1 || q.Limit > MaxAuditLimit {
		return nil, fmt.Errorf("%w: limit %d (want 1 to %d)", ErrInvalid, q.Limit, MaxAuditLimit)
	}
	if !q.To.After(q.From) {
		return nil, fmt.Errorf("%w: audit range [%s, %s) is empty", ErrInvalid, q.From, q.To)
	}
	where, args := "at_us >= ? AND at_us < ?", []any{q.From.UnixMicro(), q.To.UnixMicro()}
	if q.Actor != "" {
		where += " AND actor = ?"
		args = append(args, q.Actor)
	}
	if q.Action != "" {
		where += " AND action = ?"
		args = append(args, q.Action)
	}
	args = append(args, q.Limit)
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT id, at_us, actor, action, target, detail FROM audit WHERE `+where+
		` ORDER BY at_us DESC, id DESC LIMIT ?`), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		var detail string
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Target, &detail); err != nil {
			return nil, fmt.Errorf("ledger: audit: %w", err)
		}
		e.At, e.Detail = fromMicros(at), json.RawMessage(detail)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: audit: %w", err)
	}
	return out, nil
}
