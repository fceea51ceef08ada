package tenant

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// KV is what StoreExchange needs of a shared store (a fleet.Store has
// it).
type KV interface {
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	List(ctx context.Context, prefix string) (map[string][]byte, error)
}

// StoreExchange is an Exchange through a shared store: each replica puts
// its totals under Prefix+ID for TTL, and lists the others'. It is safe
// for concurrent use if Store is.
type StoreExchange struct {
	Store  KV
	ID     string        // this replica's name in the fleet
	Prefix string        // of the keys; empty means "limits/"
	TTL    time.Duration // of this replica's entry; zero keeps it until deleted
}

var _ Exchange = (*StoreExchange)(nil)

// Swap publishes mine and returns the other replicas' totals. An entry
// that does not decode is left out, as if that replica were not listed.
func (e *StoreExchange) Swap(ctx context.Context, mine map[string]Taken) (map[string]map[string]Taken, error) {
	prefix := e.Prefix
	if prefix == "" {
		prefix = "limits/"
	}
	b, err := json.Marshal(mine)
	if err != nil {
		return nil, err
	}
	if err := e.Store.Put(ctx, prefix+e.ID, b, e.TTL); err != nil {
		return nil, err
	}
	all, err := e.Store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	others := make(map[string]map[string]Taken, len(all))
	for k, v := range all {
		rep := strings.TrimPrefix(k, prefix)
		if rep == e.ID {
			continue
		}
		var t map[string]Taken
		if json.Unmarshal(v, &t) == nil {
			others[rep] = t
		}
	}
	return others, nil
}
