package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// Event is an entry of the fleet's history.
type Event struct {
	At      time.Time `json:"at"`
	Replica string    `json:"replica"`
	Kind    string    `json:"kind"`
	Pool    string    `json:"pool,omitempty"`
	Backend string    `json:"backend,omitempty"`
	Detail  string    `json:"detail"`
}

// Record appends an event that happened on this replica to the fleet's
// history.
func (r *Replica) Record(e Event) {
	e.Replica = r.id
	raw, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.enqueue(func(c context.Context) error { return r.store.Append(c, logEvents, raw, eventLogSize) })
}

// Events returns up to n of the fleet's newest events, oldest first, or
// an error when the store does not answer in time.
func (r *Replica) Events(ctx context.Context, n int) ([]Event, error) {
	var raw [][]byte
	if err := r.call(ctx, func(c context.Context) error {
		var err error
		raw, err = r.store.Tail(c, logEvents, n)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(raw))
	for _, b := range raw {
		var e Event
		if json.Unmarshal(b, &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}
