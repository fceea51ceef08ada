package fleet

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
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

// undoneTTL is how long the store keeps an undoing action (a restore, a
// forced close, a member reset): long enough for a replica that took an
// action on the same thing while it could not reach the store to learn,
// when it can, that its own is older.
const undoneTTL = 24 * time.Hour

// Act hands an operator action taken on this replica to the fleet: it is
// kept in the store (or removes what it undoes) so that a replica that
// starts later, or comes back, applies it too, and published.
//
// The newest action on one thing (a backend's drain, its breaker, a pool
// member), by the time it was taken on its replica's clock, wins on every
// replica. While the store is out the action waits
// here (the newest per thing) and goes to the fleet once the store
// answers again, unless an action on the same thing taken elsewhere
// meanwhile is newer: this replica then applies that one instead. An
// action waiting here is lost if the replica stops first.
func (r *Replica) Act(a Action) {
	a.Replica = r.id
	m := Message{Kind: kindAction, Replica: r.id, At: r.clk.Now(), Action: &a}
	subject := actionSubject(a)
	r.mu.Lock()
	r.pending[subject] = m
	r.acted[subject] = m.At
	r.mu.Unlock()
	if !r.up.Load() {
		r.log.Warn("fleet store unreachable: an operator action holds on this replica only until the store returns",
			"replica", r.id, "action", a.Kind, "backend", a.Backend, "pool", a.Pool)
		return
	}
	r.enqueue(r.flushActions)
}

// PendingActions is how many operator actions taken here wait for the
// store to reach the fleet.
func (r *Replica) PendingActions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// flushActions sends the actions waiting here to the fleet, each unless
// the store keeps a newer action on the same thing (which is applied here
// instead).
func (r *Replica) flushActions(c context.Context) error {
	r.mu.Lock()
	pending := maps.Clone(r.pending)
	r.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	all := map[string][]byte{}
	for _, prefix := range []string{keyAction, keyUndone} {
		kv, err := r.store.List(c, prefix)
		if err != nil {
			return err
		}
		maps.Copy(all, kv)
	}
	kept := actionsIn(all)
	for subject, m := range pending {
		if k, ok := kept[subject]; ok && k.At.After(m.At) {
			// Taken elsewhere after this one: it stands, here too.
			r.settle(subject, m)
			r.log.Warn("fleet: an operator action taken here is older than one taken on the same thing on another replica: that one stands",
				"replica", r.id, "action", m.Action.Kind, "newer", k.Action.Kind, "on", k.Replica)
			r.applyKept(subject, k)
			continue
		}
		if a := *m.Action; a.Kind == ActionForceOpen && !a.Until.IsZero() && !r.clk.Now().Before(a.Until) {
			r.settle(subject, m) // over by now
			continue
		}
		if err := r.publishAction(c, subject, m); err != nil {
			return err
		}
		r.settle(subject, m)
	}
	return nil
}

// settle drops m from the actions waiting, unless a newer one on the same
// subject has replaced it.
func (r *Replica) settle(subject string, m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[subject]; ok && p.At.Equal(m.At) {
		delete(r.pending, subject)
	}
}

// publishAction keeps action m in the store under subject (an undoing
// action is kept apart, for a while, to order it against actions that
// were waiting elsewhere) and publishes it.
func (r *Replica) publishAction(c context.Context, subject string, m Message) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	keep, undone := keyAction+subject, keyUndone+subject
	if undoes(m.Action.Kind) {
		keep, undone = undone, keep
	}
	if err := r.store.Delete(c, undone); err != nil {
		return err
	}
	if err := r.store.Put(c, keep, raw, actionTTL(*m.Action, r.clk.Now())); err != nil {
		return err
	}
	return r.store.Publish(c, raw)
}

// actionsIn is the newest action kept on each subject among the store's
// keys and values kv.
func actionsIn(kv map[string][]byte) map[string]Message {
	out := map[string]Message{}
	for k, v := range kv {
		var subject string
		switch {
		case strings.HasPrefix(k, keyAction):
			subject = strings.TrimPrefix(k, keyAction)
		case strings.HasPrefix(k, keyUndone):
			subject = strings.TrimPrefix(k, keyUndone)
		default:
			continue
		}
		var m Message
		if json.Unmarshal(v, &m) != nil || m.Kind != kindAction || m.Action == nil {
			continue
		}
		if old, ok := out[subject]; !ok || m.At.After(old.At) {
			out[subject] = m
		}
	}
	return out
}

// applyKept applies the action the store keeps on subject, unless the
// action in force here is as new or newer (this replica's own, one it
// heard, or one it took while away and is about to publish). An undoing
// action is applied only where something was in force to undo: a replica
// that never heard of the thing has its own state, not the one undone.
func (r *Replica) applyKept(subject string, m Message) {
	r.mu.Lock()
	known, seen := r.acted[subject]
	skip := seen && !m.At.After(known) || !seen && undoes(m.Action.Kind)
	if !skip {
		r.acted[subject] = m.At
	}
	r.mu.Unlock()
	if !skip {
		r.applyAction(m)
	}
}

// receiveAction applies an action another replica published, unless the
// action in force here on the same subject was taken later: the newest
// wins, whatever order two replicas that were away publish theirs in.
func (r *Replica) receiveAction(m Message) {
	subject := actionSubject(*m.Action)
	r.mu.Lock()
	known, seen := r.acted[subject]
	skip := seen && m.At.Before(known)
	if !skip {
		r.acted[subject] = m.At
	}
	r.mu.Unlock()
	if skip {
		r.log.Info("fleet: an operator action from another replica is older than the one in force here: not applied",
			"replica", m.Replica, "action", m.Action.Kind, "backend", m.Action.Backend, "pool", m.Action.Pool)
		return
	}
	r.applyAction(m)
}

func (r *Replica) applyAction(m Message) {
	if err := r.host.Apply(*m.Action); err != nil {
		r.log.Warn("fleet: an operator action from another replica could not be applied", "replica", m.Replica, "action", m.Action.Kind, "error", err)
	}
}

// actionSubject is what an action acts on: a later action on the same
// subject replaces it.
func actionSubject(a Action) string {
	switch a.Kind {
	case ActionDrain, ActionRestore:
		return "drain/" + a.Backend
	case ActionForceOpen, ActionForceClosed:
		return "breaker/" + a.Backend
	default:
		return "member/" + a.Pool + "/" + a.Backend
	}
}

// undoes reports whether an action of kind undoes its subject's other
// kind (restore, a forced close, a member reset): it is not kept under
// the subject's key but apart, for undoneTTL.
func undoes(kind string) bool {
	return kind == ActionRestore || kind == ActionForceClosed || kind == ActionResetMember
}

// actionTTL is how long the store keeps action a, taken at now: an
// undoing action undoneTTL, a breaker forced open until its end, any
// other until it is undone.
func actionTTL(a Action, now time.Time) time.Duration {
	switch {
	case undoes(a.Kind):
		return undoneTTL
	case a.Kind == ActionForceOpen && !a.Until.IsZero():
		return max(a.Until.Sub(now), time.Millisecond)
	}
	return 0
}
