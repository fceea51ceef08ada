package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// MinRetention is the shortest retention of per-request usage records:
// a budget's period (up to a calendar month) must find the records of
// its whole current period, whatever reads them.
const MinRetention = 32 * 24 * time.Hour

// RetentionOptions are the settings of a Retention. Zero values are the
// documented defaults.
type RetentionOptions struct {
	// Keep is how long per-request records are kept: those older than
	// now - Keep are deleted. At least MinRetention (NewRetention raises
	// a shorter one to it); 0 keeps them forever (a Retention of the
	// audit trail alone).
	Keep time.Duration
	// Hold, if set, returns how far back from now readers still need
	// per-request records (the budgets that sum them: see the gateway's
	// wiring); a round keeps every record younger than that, even when
	// Keep is shorter, so that a long budget period never loses its
	// records. Called at the start of each round. Default nil: Keep
	// alone.
	Hold func() time.Duration
	// Every is the time between two rounds. Default 1h.
	Every time.Duration
	// Batch is the most records deleted in one transaction, so that no
	// delete holds the store's locks long. Default 1000.
	Batch int
	// MaxBatches bounds one round; the next round goes on where it
	// stopped. Default 100.
	MaxBatches int
	// Clock times the rounds and says what now is. Default the wall
	// clock.
	Clock clock.Clock
	// OnRound, if set, is told after each round that deleted records or
	// failed: how many it deleted, the cutoff, and the error that ended
	// it (nil when it ran to the end). Called on the Retention's
	// goroutine.
	OnRound func(deleted int, before time.Time, err error)
	// AuditKeep is how long the audit trail's entries are kept: each
	// round then deletes those older than now - AuditKeep, in batches of
	// Batch and at most MaxBatches (see AuditRound). Independent of Keep
	// and Hold. Default 0: kept forever.
	AuditKeep time.Duration
	// OnAuditRound is OnRound for the audit trail's part of a round.
	OnAuditRound func(deleted int, before time.Time, err error)
}

// Retention deletes per-request usage records (usage_requests and their
// tags) older than its Keep from a Store, in the background, in bounded
// batches, with the traffic charts' daily sums of the days before its
// cutoff, and the audit trail's entries older than its AuditKeep. The
// daily sums that usage reports over whole days and budgets read are
// kept. Start it with Run; it is safe for concurrent use.
type Retention struct {
	s Store
	o RetentionOptions
}

// NewRetention returns the Retention of s; Run starts it.
func NewRetention(s Store, o RetentionOptions) *Retention {
	if o.Keep > 0 {
		o.Keep = max(o.Keep, MinRetention)
	}
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	if o.MaxBatches <= 0 {
		o.MaxBatches = 100
	}
	o.Clock = clock.Or(o.Clock)
	return &Retention{s: s, o: o}
}

// Run runs a round now and then every Every until ctx ends; it returns
// then. Call it once, on its own goroutine.
func (r *Retention) Run(ctx context.Context) {
	tick := make(chan struct{}, 1)
	for {
		n, before, err := r.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		if (n > 0 || err != nil) && r.o.OnRound != nil {
			r.o.OnRound(n, before, err)
		}
		if n, before, err := r.AuditRound(ctx); (n > 0 || err != nil) && r.o.OnAuditRound != nil && ctx.Err() == nil {
			r.o.OnAuditRound(n, before, err)
		}
		t := r.o.Clock.AfterFunc(r.o.Every, func() { tick <- struct{}{} })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
	}
}

// Round deletes, in batches of Batch and at most MaxBatches of them, the
// records older than now - Keep (or now - Hold(), when that is older),
// and returns how many it deleted and that cutoff. With Keep 0 it
// deletes nothing.
func (r *Retention) Round(ctx context.Context) (int, time.Time, error) {
	if r.o.Keep <= 0 {
		return 0, time.Time{}, nil
	}
	keep := r.o.Keep
	if r.o.Hold != nil {
		keep = max(keep, r.o.Hold())
	}
	before := r.o.Clock.Now().Add(-keep)
	total := 0
	for range r.o.MaxBatches {
		n, err := r.s.DeleteRequestsBefore(ctx, before, r.o.Batch)
		total += n
		if err != nil {
			return total, before, err
		}
		if n < r.o.Batch {
			break
		}
	}
	// The daily traffic sums go with the days of the log they sum.
	if p, ok := r.s.(TrafficPruner); ok {
		if _, err := p.DeleteTrafficBefore(ctx, before); err != nil {
			return total, before, err
		}
	}
	return total, before, nil
}

func (s *sqlStore) DeleteRequestsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 || limit > MaxRequestsLimit {
		return 0, fmt.Errorf("%w: delete limit %d (want 1 to %d)", ErrInvalid, limit, MaxRequestsLimit)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ledger: retention: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	rows, err := tx.QueryContext(ctx, s.q(`SELECT request_id FROM usage_requests WHERE at_us < ?
		ORDER BY at_us, request_id LIMIT ?`), before.UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("ledger: retention: %w", err)
	}
	var ids []any
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("ledger: retention: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("ledger: retention: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	for _, table := range []string{"usage_tags", "usage_attempts", "request_bodies", "usage_requests"} {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE request_id IN `+in), ids...); err != nil {
			return 0, fmt.Errorf("ledger: retention: %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ledger: retention: %w", err)
	}
	return len(ids), nil
}
