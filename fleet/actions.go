package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// Action is an operator's change to the fleet.
type Action struct {
	Kind     string    `json:"kind"` // ActionDrain and the other Action* constants
	Backend  string    `json:"backend,omitempty"`
	Pool     string    `json:"pool,omitempty"`
	Until    time.Time `json:"until,omitzero"` // ActionForceOpen: when it ends (zero: the trip)
	Priority int       `json:"priority,omitempty"`
	Weight   int       `json:"weight,omitempty"`
	// Replica is where it was taken; By who took it ("admin", a console
	// viewer's name), when known.
	Replica string `json:"replica,omitempty"`
	By      string `json:"by,omitempty"`
}

// Action kinds.
const (
	ActionDrain       = "drain"
	ActionRestore     = "restore"
	ActionForceOpen   = "breaker_open"
	ActionForceClosed = "breaker_close"
	ActionSetMember   = "set_member"
	ActionResetMember = "reset_member"
)

// Act publishes an operator action taken on this replica, and keeps it
// (or removes what it undoes) so that a replica that starts later, or
// comes back, applies it too.
func (r *Replica) Act(a Action) {
	a.Replica = r.id
	m := Message{Kind: kindAction, Replica: r.id, At: r.clk.Now(), Action: &a}
	raw, _ := json.Marshal(m)
	key, keep, ttl := actionKey(a, m.At)
	r.enqueue(func(c context.Context) error {
		var err error
		if keep {
			err = r.store.Put(c, key, raw, ttl)
		} else {
			err = r.store.Delete(c, key)
		}
		if err != nil {
			return err
		}
		return r.store.Publish(c, raw)
	})
}

// actionKey is where an action is kept, whether it is kept (an undoing
// action removes its counterpart) and for how long.
func actionKey(a Action, now time.Time) (key string, keep bool, ttl time.Duration) {
	switch a.Kind {
	case ActionDrain, ActionRestore:
		return keyAction + "drain/" + a.Backend, a.Kind == ActionDrain, 0
	case ActionForceOpen, ActionForceClosed:
		if a.Kind == ActionForceOpen && !a.Until.IsZero() {
			ttl = max(a.Until.Sub(now), time.Millisecond)
		}
		return keyAction + "breaker/" + a.Backend, a.Kind == ActionForceOpen, ttl
	default:
		return keyAction + "member/" + a.Pool + "/" + a.Backend, a.Kind == ActionSetMember, 0
	}
}
