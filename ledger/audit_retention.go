package ledger

import (
	"context"
	"fmt"
	"time"
)

// AuditPruner deletes old entries of the audit trail; the stores of
// ledger/sqlite and ledger/postgres implement it. See Retention's
// AuditKeep.
type AuditPruner interface {
	// DeleteAuditBefore deletes the oldest entries from before on, at
	// most limit (1 to MaxRequestsLimit) in one statement, and returns
	// how many.
	DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

var _ AuditPruner = (*sqlStore)(nil)

// AuditRound deletes, in batches of Batch and at most MaxBatches of them,
// the audit entries older than now - AuditKeep, and returns how many it
// deleted and that cutoff. It deletes nothing with AuditKeep 0 or a
// store without an audit trail.
func (r *Retention) AuditRound(ctx context.Context) (int, time.Time, error) {
	p, ok := r.s.(AuditPruner)
	if !ok || r.o.AuditKeep <= 0 {
		return 0, time.Time{}, nil
	}
	before := r.o.Clock.Now().Add(-r.o.AuditKeep)
	total := 0
	for range r.o.MaxBatches {
		n, err := p.DeleteAuditBefore(ctx, before, r.o.Batch)
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

func (s *sqlStore) DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 || limit > MaxRequestsLimit {
		return 0, fmt.Errorf("%w: delete limit %d (want 1 to %d)", ErrInvalid, limit, MaxRequestsLimit)
	}
	res, err := s.w.ExecContext(ctx, s.q(`DELETE FROM audit WHERE id IN
		(SELECT id FROM audit WHERE at_us < ? ORDER BY at_us, id LIMIT ?)`), before.UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("ledger: audit retention: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("ledger: audit retention: %w", err)
	}
	return int(n), nil
}
