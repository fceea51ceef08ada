package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/route"
)

// ErrNotFound is returned by admin actions naming an unknown pool, backend
// or member.
var ErrNotFound = errors.New("not found")

// admin records an operator action: log, metric, history, and a
// notification, so that no change goes unnoticed. from is the replica the
// action was taken on, "" for this one: only there is it notified and
// added to the fleet's history. who, if not "", is the operator who took
// it (the console's signed-in user).
func (g *Gateway) admin(action, pool, backend, detail, from, who string) {
	if from == "" {
		target := backend
		if target == "" {
			target = pool
		}
		g.audit(who, "admin:"+action, target, detail)
	}
	if who != "" {
		detail += " (by " + who + ")"
	}
	if from != "" {
		detail += " (on replica " + from + ")"
	}
	g.Logger.Warn("admin action", "action", action, "pool", pool, "backend", backend, "detail", detail)
	g.Metrics.Admin(action)
	g.addEvent(Event{At: g.now(), Kind: "admin:" + action, Pool: pool, Backend: backend, Detail: detail}, from == "")
	if g.notes.tracker != nil && from == "" {
		g.notes.tracker.Send(notify.Notification{Kind: "admin", Pool: pool, Reason: "manual: " + detail, At: g.now(),
			Text: fmt.Sprintf("switchover: an operator %s (%s).", detail, g.now().UTC().Format(time.RFC3339))})
	}
}

// ActorHeader is the header a client of the admin API names its operator
// in (switchover status sends $USER, or its -as flag): an action is
// recorded as taken by "admin key (as NAME) from ADDRESS". The name is
// the caller's word, not proved: it tells holders of the one admin key
// apart, as the address does.
const ActorHeader = "X-Switchover-Actor"

// actor is who takes an action through the admin API, r having passed
// its key check: the admin key's holder (or, with admin.allow_no_key, a
// local caller without one), the name it gives in ActorHeader, and the
// address it called from.
func (g *Gateway) actor(r *http.Request) string {
	who := "admin key"
	if a := g.Config().Admin; a == nil || a.Key == "" {
		who = "no key (admin.allow_no_key)"
	}
	if name := actorName(r.Header.Get(ActorHeader)); name != "" {
		who += " (as " + name + ")"
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		who += " from " + host
	}
	return who
}

// actorName is the name a caller gives, made safe to record: letters,
// digits, space and .-_@ only, at most 64 characters.
func actorName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" .-_@", r):
			return r
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.TrimSpace(s)
}

// Drain stops new traffic to a backend in every pool; requests in flight
// finish. It lasts until Restore, across reloads (and, with shared state,
// on every replica and across restarts).
func (g *Gateway) Drain(backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionDrain, Backend: backend})
}

// Restore undoes Drain.
func (g *Gateway) Restore(backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionRestore, Backend: backend})
}

// ForceBreaker opens a backend's breaker for d (0: its trip) or closes it.
func (g *Gateway) ForceBreaker(backend string, open bool, d time.Duration) error {
	return g.act(g.forceAction(backend, open, d))
}

// forceAction is the action of ForceBreaker.
func (g *Gateway) forceAction(backend string, open bool, d time.Duration) fleet.Action {
	a := fleet.Action{Kind: fleet.ActionForceClosed, Backend: backend}
	if open {
		a.Kind = fleet.ActionForceOpen
		if d > 0 {
			a.Until = g.now().Add(d)
		} else if b := g.Backend(backend); b != nil && b.Breaker != nil {
			if br, ok := b.Breaker.(*breaker.Breaker); ok {
				a.Until = g.now().Add(br.Settings().Trip)
			}
		}
	}
	return a
}

// SetMember changes a member's priority and weight (0 keeps the value in
// force) while an incident lasts; the change survives reloads until
// ResetMember.
func (g *Gateway) SetMember(pool, backend string, priority, weight int) error {
	if priority < 0 || weight < 0 {
		return errors.New("priority and weight must be positive")
	}
	return g.act(fleet.Action{Kind: fleet.ActionSetMember, Pool: pool, Backend: backend, Priority: priority, Weight: weight})
}

// ResetMember drops an operator's change to a member: the configured
// priority and weight apply again.
func (g *Gateway) ResetMember(pool, backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionResetMember, Pool: pool, Backend: backend})
}

// act performs an operator action taken on this replica and, with shared
// state, hands it to the fleet.
func (g *Gateway) act(a fleet.Action) error { return g.actAs(a, "") }

// actAs is act, recording who took the action.
func (g *Gateway) actAs(a fleet.Action, who string) error {
	if err := g.applyAs(a, "", who); err != nil {
		return err
	}
	a.By = who
	g.fleet.act(a)
	return nil
}

// applyAs performs operator action a, taken on replica from ("" for this
// one) by who ("" when unknown).
func (g *Gateway) applyAs(a fleet.Action, from, who string) error {
	backend := a.Backend
	switch a.Kind {
	case fleet.ActionDrain, fleet.ActionRestore:
		drain := a.Kind == fleet.ActionDrain
		g.mu.Lock()
		b := g.state.Load().Backends[backend]
		if b == nil {
			g.mu.Unlock()
			return fmt.Errorf("backend %q: %w", backend, ErrNotFound)
		}
		if drain == b.Drained() && from != "" {
			g.mu.Unlock()
			return nil // already so: a kept action applied again
		}
		if drain {
			b.Drain()
		} else {
			b.Restore()
		}
		g.Metrics.Drained(backend, drain)
		g.mu.Unlock()
		if drain {
			g.admin("drain", "", backend, "drained backend "+backend, from, who)
			g.updateActive(backend, "manual: "+backend+" drained by an operator")
		} else {
			g.admin("restore", "", backend, "restored backend "+backend, from, who)
			g.updateActive(backend, "manual: "+backend+" restored by an operator")
		}
		return nil
	case fleet.ActionForceOpen, fleet.ActionForceClosed:
		b := g.Backend(backend)
		if b == nil {
			return fmt.Errorf("backend %q: %w", backend, ErrNotFound)
		}
		if b.Breaker == nil {
			return fmt.Errorf("backend %q has its breaker disabled", backend)
		}
		if a.Kind == fleet.ActionForceOpen {
			if !a.Until.IsZero() && !g.now().Before(a.Until) {
				return nil // a kept action that has ended
			}
			if s := b.Breaker.Snapshot(); from != "" && s.State == breaker.Open && s.Until.Equal(a.Until) {
				return nil
			}
			g.admin("breaker_open", "", backend, "forced the breaker of "+backend+" open", from, who)
			g.probes.held.Store(backend, true)
			b.Breaker.Force(breaker.Open, a.Until, breaker.KindManual, "manual: forced open by an operator")
			return nil
		}
		g.probes.held.Delete(backend)
		detail := "forced the breaker of " + backend + " closed"
		if held := forgetQuota(b.Quota, g.now()); !held.IsZero() {
			detail += fmt.Sprintf(" and lifted the hold of its rate-limit headers (until %s)", held.UTC().Format(time.RFC3339))
		}
		g.admin("breaker_close", "", backend, detail, from, who)
		b.Breaker.Force(breaker.Closed, time.Time{}, breaker.KindManual, "manual: forced closed by an operator")
		return nil
	case fleet.ActionSetMember:
		was, now, err := g.changeMember(a.Pool, backend, func(o *override, ok bool) bool {
			if a.Priority > 0 {
				o.priority = a.Priority
			}
			if a.Weight > 0 {
				o.weight = a.Weight
			}
			return true
		})
		if err != nil {
			return err
		}
		g.admin("set_member", a.Pool, backend, fmt.Sprintf("set %s in pool %s: %s", backend, a.Pool, memberChange(was, now, a.Priority > 0, a.Weight > 0)), from, who)
		return nil
	case fleet.ActionResetMember:
		if _, _, err := g.changeMember(a.Pool, backend, func(*override, bool) bool { return false }); err != nil {
			return err
		}
		g.admin("reset_member", a.Pool, backend, fmt.Sprintf("reset %s in pool %s to its configured priority and weight", backend, a.Pool), from, who)
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// forgetQuota drops what a backend's rate-limit headers said of its
// quota (route.LocalQuota.Forget), so that a breaker an operator forces
// closed is sent calls at once, not only once a 429's Retry-After of
// minutes has run out. It returns when the lifted hold would have ended,
// zero when none held; every replica applying the action does the same.
func forgetQuota(q route.Quota, now time.Time) time.Time {
	if f, ok := q.(interface{ Forget(time.Time) time.Time }); ok {
		return f.Forget(now)
	}
	return time.Time{}
}

// changeMember applies f to a member's override (keep reports whether it
// stays) and publishes the rebuilt pool. It returns the member's priority
// and weight in force before and after.
func (g *Gateway) changeMember(pool, backend string, f func(o *override, existed bool) (keep bool)) (was, now tierWeight, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.state.Load()
	var pc *config.Pool
	for i := range old.Config.Pools {
		if old.Config.Pools[i].Name == pool {
			pc = &old.Config.Pools[i]
		}
	}
	if pc == nil {
		return was, now, fmt.Errorf("pool %q: %w", pool, ErrNotFound)
	}
	found := false
	for _, m := range pc.Members {
		found = found || m.Backend == backend
	}
	if !found {
		return was, now, fmt.Errorf("pool %q has no member %q: %w", pool, backend, ErrNotFound)
	}
	k := memberKey{pool, backend}
	o, existed := g.overrides[k]
	if f(&o, existed) {
		g.overrides[k] = o
	} else {
		delete(g.overrides, k)
	}
	was = memberInForce(old.Pools[pool], backend)
	e := old.WithPool(pool, g.deps())
	g.publish(e, "manual: "+backend+" in "+pool+" changed by an operator")
	return was, memberInForce(e.Pools[pool], backend), nil
}

// tierWeight is a member's priority and weight.
type tierWeight struct{ priority, weight int }

// memberInForce is backend's priority and weight in p, as the status
// shows them (1 for an unset value).
func memberInForce(p *route.Pool, backend string) tierWeight {
	if p != nil {
		for _, m := range p.Members {
			if m.Backend.Name == backend {
				return tierWeight{max(m.Priority, 1), max(m.Weight, 1)}
			}
		}
	}
	return tierWeight{}
}

// memberChange says what an operator's change of a member did, for the
// timeline: "weight 1 → 3", "priority 2 → 1, weight 1 → 3", naming only
// what the operator set.
func memberChange(was, now tierWeight, priority, weight bool) string {
	var parts []string
	if priority {
		parts = append(parts, fmt.Sprintf("priority %d → %d", was.priority, now.priority))
	}
	if weight {
		parts = append(parts, fmt.Sprintf("weight %d → %d", was.weight, now.weight))
	}
	return strings.Join(parts, ", ")
}
