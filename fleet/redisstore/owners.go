package redisstore

import (
	"context"
	"time"
)

// The owner index of a fleet without a store (see route.OwnerIndex):
// who made the stored objects that have no metadata, one key per object,
// prefix + "owner:" + backend + ":" + the provider's id, holding the
// owner's mark (a MAC, never the key), each expiring OwnerTTL after it
// was recorded.

// OwnerTTL is how long the owner of an object is kept in Redis after it
// was made: past it, the object leaves its owner's lists (it is still
// reached by its id). 90 days: longer than a batch's files live at the
// providers, shorter than a file uploaded and never deleted may.
const OwnerTTL = 90 * 24 * time.Hour

func (s *Store) ownerKey(backend, id string) string { return s.prefix + "owner:" + backend + ":" + id }

// RecordOwner stores mark as the owner of object id on backend, for
// OwnerTTL.
func (s *Store) RecordOwner(ctx context.Context, backend, id, mark string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.fail(ctx, "record owner", s.rdb.Set(ctx, s.ownerKey(backend, id), mark, OwnerTTL).Err())
}

// OwnerMarks returns the marks stored for those of ids on backend that
// have one.
func (s *Store) OwnerMarks(ctx context.Context, backend string, ids []string) (map[string]string, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), listBatch)]
		ids = ids[len(chunk):]
		keys := make([]string, len(chunk))
		for i, id := range chunk {
			keys[i] = s.ownerKey(backend, id)
		}
		vals, err := s.get(ctx, keys)
		if err != nil {
			return nil, s.fail(ctx, "owner marks", err)
		}
		for i, v := range vals {
			if v != nil {
				out[chunk[i]] = string(v)
			}
		}
	}
	return out, nil
}

// ForgetOwner deletes the owner of object id on backend, if any.
func (s *Store) ForgetOwner(ctx context.Context, backend, id string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.fail(ctx, "forget owner", s.rdb.Del(ctx, s.ownerKey(backend, id)).Err())
}
