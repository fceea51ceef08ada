package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ObjectOwners keeps who made the stored objects that have no metadata
// (files, uploads, containers, message batches): the owner mark of the
// key or team (a MAC the gateway computes, never the key), by the backend
// that holds the object and the provider's id. The stores of sqlite.Open
// and postgres.Open implement it; the gateway uses it as its owner
// index (route.OwnerIndex). Safe for concurrent use.
type ObjectOwners interface {
	// RecordOwner stores (or replaces) the mark of object id on backend.
	RecordOwner(ctx context.Context, backend, id, mark string, at time.Time) error
	// OwnerMarks returns the marks stored for those of ids on backend
	// that have one.
	OwnerMarks(ctx context.Context, backend string, ids []string) (map[string]string, error)
	// ForgetOwner deletes the mark of object id on backend, if any.
	ForgetOwner(ctx context.Context, backend, id string) error
}

var _ ObjectOwners = (*sqlStore)(nil)

// maxOwnerLookup bounds the ids of one OwnerMarks query; a list page
// holds at most 10,000 (OpenAI's files), looked up in chunks.
const maxOwnerLookup = 500

func (s *sqlStore) RecordOwner(ctx context.Context, backend, id, mark string, at time.Time) error {
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO object_owners (backend, object_id, owner_mark, created_us)
		VALUES (?, ?, ?, ?) ON CONFLICT (backend, object_id) DO UPDATE SET owner_mark = excluded.owner_mark`),
		backend, id, mark, micros(at))
	if err != nil {
		return fmt.Errorf("ledger: record owner: %w", err)
	}
	return nil
}

func (s *sqlStore) OwnerMarks(ctx context.Context, backend string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxOwnerLookup)]
		ids = ids[len(chunk):]
		args := []any{backend}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.r.QueryContext(ctx, s.q(`SELECT object_id, owner_mark FROM object_owners
			WHERE backend = ? AND object_id IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`), args...)
		if err != nil {
			return nil, fmt.Errorf("ledger: owner marks: %w", err)
		}
		for rows.Next() {
			var id, mark string
			if err := rows.Scan(&id, &mark); err != nil {
				rows.Close()
				return nil, fmt.Errorf("ledger: owner marks: %w", err)
			}
			out[id] = mark
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("ledger: owner marks: %w", err)
		}
	}
	return out, nil
}

func (s *sqlStore) ForgetOwner(ctx context.Context, backend, id string) error {
	if _, err := s.w.ExecContext(ctx, s.q(`DELETE FROM object_owners WHERE backend = ? AND object_id = ?`), backend, id); err != nil {
		return fmt.Errorf("ledger: forget owner: %w", err)
	}
	return nil
}
