package ledger

import (
	"context"
	"fmt"
	"time"
)

// TrafficRow is what the traffic charts need of one request of the log:
// a few columns, without its attempts, tags or tokens.
type TrafficRow struct {
	At            time.Time
	Pool, Backend string
	Status        int
	Failover      bool
	Unanswered    bool
	// Cache is "hit" or "coalesced" for an answer of the response cache,
	// "" for a call.
	Cache      string
	DurationMs int64
}

// TrafficReader reads the request log's rows for charts. The stores of
// ledger/sqlite and ledger/postgres implement it.
type TrafficReader interface {
	// Traffic returns the newest limit (1 to MaxRequestsLimit) requests
	// of [from, to), newest first, through the index on (at_us,
	// request_id): a bounded read whatever the range holds. ErrInvalid
	// for a limit out of range or an empty range.
	Traffic(ctx context.Context, from, to time.Time, limit int) ([]TrafficRow, error)
}

var _ TrafficReader = (*sqlStore)(nil)

func (s *sqlStore) Traffic(ctx context.Context, from, to time.Time, limit int) ([]TrafficRow, error) {
	if limit < 1 || limit > MaxRequestsLimit {
		return nil, fmt.Errorf("%w: limit %d (want 1 to %d)", ErrInvalid, limit, MaxRequestsLimit)
	}
	if !to.After(from) {
		return nil, fmt.Errorf("%w: traffic range [%s, %s) is empty", ErrInvalid, from, to)
	}
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT at_us, pool, backend, status, failover, unanswered, cache, duration_ms
		FROM usage_requests WHERE at_us >= ? AND at_us < ? ORDER BY at_us DESC, request_id DESC LIMIT ?`),
		from.UnixMicro(), to.UnixMicro(), limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: traffic: %w", err)
	}
	defer rows.Close()
	var out []TrafficRow
	for rows.Next() {
		var r TrafficRow
		var at, failover, unanswered int64
		if err := rows.Scan(&at, &r.Pool, &r.Backend, &r.Status, &failover, &unanswered, &r.Cache, &r.DurationMs); err != nil {
			return nil, fmt.Errorf("ledger: traffic: %w", err)
		}
		r.At, r.Failover, r.Unanswered = fromMicros(at), failover != 0, unanswered != 0
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: traffic: %w", err)
	}
	return out, nil
}
