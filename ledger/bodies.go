package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxBodyBytes is the most bytes of one body (a request's or a
// response's) a store keeps: a longer one is cut there and marked
// truncated, whatever the capture's own bound.
const MaxBodyBytes = 1 << 20

// Bodies are a request's request and response bodies as the request log
// keeps them, for the pools and keys that keep them (request_log.bodies
// in the configuration). Capture bounds them (Truncated marks a body cut
// there); RecordUsage redacts the secrets they hold (RedactBody) before
// anything is written, and never stores headers.
type Bodies struct {
	Request  []byte `json:"request"`
	Response []byte `json:"response"`
	// RequestSize and ResponseSize are the bodies' whole sizes in
	// bytes, as they passed; -1 when unknown.
	RequestSize  int64 `json:"request_size"`
	ResponseSize int64 `json:"response_size"`
	// RequestTruncated and ResponseTruncated mark a body of which only
	// the first part is kept.
	RequestTruncated  bool `json:"request_truncated"`
	ResponseTruncated bool `json:"response_truncated"`
	// Note says why a body was not kept, or not whole ("the response is
	// compressed (gzip)"); "" when both were.
	Note string `json:"note,omitempty"`
}

// size is what b holds in memory, roughly.
func (b *Bodies) size() int {
	if b == nil {
		return 0
	}
	return len(b.Request) + len(b.Response) + len(b.Note)
}

// stored is b as a store keeps it: each body at most MaxBodyBytes, its
// secrets redacted.
func (b *Bodies) stored() Bodies {
	out := *b
	out.Request, out.RequestTruncated = storedBody(b.Request, b.RequestTruncated)
	out.Response, out.ResponseTruncated = storedBody(b.Response, b.ResponseTruncated)
	out.Note = bounded(out.Note, maxReason*4)
	return out
}

func storedBody(b []byte, cut bool) ([]byte, bool) {
	if len(b) > MaxBodyBytes {
		b, cut = b[:MaxBodyBytes], true
	}
	return RedactBody(b, cut), cut
}

// bodyInserter inserts the bodies of a batch's records in its
// transaction, preparing its statement for the first record that has
// some: a batch without bodies costs nothing more (a prepare is a round
// trip on PostgreSQL).
type bodyInserter struct {
	tx    *sql.Tx
	query string
	ins   *sql.Stmt
}

// insert stores u's bodies, if it has some; their secrets are redacted
// here, on the writer's goroutine, never on the request's.
func (bi *bodyInserter) insert(ctx context.Context, u Usage) error {
	if u.Bodies == nil {
		return nil
	}
	if bi.ins == nil {
		ins, err := bi.tx.PrepareContext(ctx, bi.query)
		if err != nil {
			return fmt.Errorf("ledger: record usage: bodies: %w", err)
		}
		bi.ins = ins
	}
	b := u.Bodies.stored()
	if _, err := bi.ins.ExecContext(ctx, u.RequestID, u.At.UnixMicro(), b.Request, b.Response, b.RequestSize, b.ResponseSize,
		boolInt(b.RequestTruncated), boolInt(b.ResponseTruncated), b.Note); err != nil {
		return fmt.Errorf("ledger: record usage %s: bodies: %w", u.RequestID, err)
	}
	return nil
}

func (bi *bodyInserter) close() {
	if bi.ins != nil {
		bi.ins.Close()
	}
}

const bodiesInsert = `INSERT INTO request_bodies (request_id, at_us, request, response, request_size, response_size,
	request_truncated, response_truncated, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (request_id) DO NOTHING`

func (s *sqlStore) RequestBodies(ctx context.Context, id string) (Bodies, error) {
	if id == "" || len(id) > MaxText {
		return Bodies{}, fmt.Errorf("%w: bodies of %q", ErrNotFound, bounded(id, 64))
	}
	var b Bodies
	var rt, st int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT request, response, request_size, response_size, request_truncated,
		response_truncated, note FROM request_bodies WHERE request_id = ?`), id).
		Scan(&b.Request, &b.Response, &b.RequestSize, &b.ResponseSize, &rt, &st, &b.Note)
	if errors.Is(err, sql.ErrNoRows) {
		return Bodies{}, fmt.Errorf("%w: bodies of %q", ErrNotFound, id)
	}
	if err != nil {
		return Bodies{}, fmt.Errorf("ledger: bodies of %s: %w", id, err)
	}
	if b.Request == nil {
		b.Request = []byte{}
	}
	if b.Response == nil {
		b.Response = []byte{}
	}
	b.RequestTruncated, b.ResponseTruncated = rt != 0, st != 0
	return b, nil
}

func (s *sqlStore) DeleteBodiesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 || limit > MaxRequestsLimit {
		return 0, fmt.Errorf("%w: delete limit %d (want 1 to %d)", ErrInvalid, limit, MaxRequestsLimit)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ledger: body retention: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	rows, err := tx.QueryContext(ctx, s.q(`SELECT request_id FROM request_bodies WHERE at_us < ?
		ORDER BY at_us, request_id LIMIT ?`), before.UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("ledger: body retention: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("ledger: body retention: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("ledger: body retention: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM request_bodies WHERE request_id IN `+in), ids...); err != nil {
		return 0, fmt.Errorf("ledger: body retention: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ledger: body retention: %w", err)
	}
	return len(ids), nil
}

// DefaultBodyRetention is how long kept bodies live by default
// (store.body_retention).
const DefaultBodyRetention = 7 * 24 * time.Hour

// BodiesRound deletes, in batches of Batch and at most MaxBatches of
// them, the bodies older than now - keep, and returns how many it
// deleted and that cutoff. keep 0 does nothing: bodies then go with
// their requests' rows.
func (r *Retention) BodiesRound(ctx context.Context, keep time.Duration) (int, time.Time, error) {
	if keep <= 0 {
		return 0, time.Time{}, nil
	}
	before := r.o.Clock.Now().Add(-keep)
	total := 0
	for range r.o.MaxBatches {
		n, err := r.s.DeleteBodiesBefore(ctx, before, r.o.Batch)
		total += n
		if err != nil {
			return total, before, err
		}
		if n < r.o.Batch {
			break
		}
	}
	return total, before, nil
}

// RunBodies runs BodiesRound with keep now and then every Every until
// ctx ends; it returns then. Call it once, on its own goroutine, beside
// Run (or without it, when the rows are kept forever). onRound, if not
// nil, is told of each round that deleted bodies or failed.
func (r *Retention) RunBodies(ctx context.Context, keep time.Duration, onRound func(deleted int, before time.Time, err error)) {
	tick := make(chan struct{}, 1)
	for {
		n, before, err := r.BodiesRound(ctx, keep)
		if ctx.Err() != nil {
			return
		}
		if (n > 0 || err != nil) && onRound != nil {
			onRound(n, before, err)
		}
		t := r.o.Clock.AfterFunc(r.o.Every, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
	}
}
