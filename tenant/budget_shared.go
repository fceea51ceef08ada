package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/fleet"
)

// SharedBudget holds budgets for the whole fleet (Limiter.Shared): what
// each request in flight reserved and what was spent, per subject and
// period, in a store every replica reaches (fleet/redisstore's Store has
// it, on Redis). Every budget that applies to a request is held there in
// one call, all or none: its key's, its team's, its organisation's, its
// key's budget of its pool, and its end user's of its key and of its team
// (at most six). With it, a request is admitted against what every
// replica spent and reserved, atomically, so that N replicas overshoot a
// budget no more than one does; without it each replica reserves only
// its own requests, and sees the others' spend when the store is read
// again (Spend.Refresh).
type SharedBudget = fleet.Budgets

// DefaultSharedHoldTTL is how long a request's reservation in a
// SharedBudget lasts when Limiter.SharedHoldTTL is zero.
const DefaultSharedHoldTTL = 10 * time.Minute

// sharedTimeout bounds one call to the SharedBudget, whatever the
// store's own timeouts.
const sharedTimeout = time.Second

// sharedState is the Limiter's side of a SharedBudget. Safe for
// concurrent use.
type sharedState struct {
	prefix string       // of this limiter's hold ids, random
	seq    atomic.Int64 // of its holds
	down   atomic.Bool  // the last call to the SharedBudget failed
}

// sharedHold is a request's budgets in the SharedBudget.
type sharedHold struct {
	id string
	// lines' Subject is the subject's name in l.subjects, or for an end
	// user's budget its userSubject (users names those lines).
	lines []fleet.BudgetLine
	users []sharedUser
	held  bool // the SharedBudget holds the lines' amounts under id
	// ok says the SharedBudget answered: figs are its figures before
	// this hold, line by line. Not ok, the request is held on this
	// replica alone.
	ok   bool
	figs []fleet.BudgetFigures
}

// sharedUser is a line of an end user's budget in a sharedHold.
type sharedUser struct {
	line int
	k    endUserKey
}

// EndUserKeep is how long an end user's account in a SharedBudget is
// kept after its period ends (a key's, team's or organisation's is kept a
// day): end users are many, and one that comes back in a later period
// starts a new account anyway. It covers replicas' clocks that disagree.
const EndUserKeep = time.Hour

// userSubject names the account of end user user in scope (its key's or
// team's limiter name) in a SharedBudget: "user:key:ID/HASH" or
// "user:team:NAME/HASH". The id is hashed: it is the caller's choice, of
// any length and any characters, and names nothing in Redis.
func userSubject(scope, user string) string {
	sum := sha256.Sum256([]byte(user))
	return "user:" + scope + "/" + hex.EncodeToString(sum[:12])
}

// fleetFigures are a subject's spent and held amounts in the
// SharedBudget as its last admission here read them, in the period that
// starts at start.
type fleetFigures struct {
	start       time.Time
	spent, held float64
}

// holdShared reserves a request's price against every budget that
// applies to it in the SharedBudget, all or none: p's key's, its team's
// (teamLimits, if hasTeam), its organisation's (o), the key's budget of
// pool, and the budgets of end user user ("" for none) of the key and of
// the team. It returns nil when there is nothing to hold there: no
// SharedBudget, or no budget. A SharedBudget that fails is reported
// (OnShared) and the request is held on this replica alone, as without
// one.
func (l *Limiter) holdShared(p *Principal, teamLimits Limits, hasTeam bool, o org, pool, user string, c cost, now time.Time) *sharedHold {
	if l.Shared == nil || l.spend == nil {
		return nil
	}
	keyName, teamName := p.names()
	h := &sharedHold{}
	h.add(l, keyName, p.Limits, c, now)
	if hasTeam {
		h.add(l, teamName, teamLimits, c, now)
	}
	if o.ok {
		h.add(l, "org:"+o.name, o.lim, c, now)
	}
	if pb, ok := p.PoolBudget(pool); ok {
		h.add(l, poolSubject(keyName, pool), pb, c, now)
	}
	if user != "" {
		l.EndUsers.addShared(h, p, teamLimits, hasTeam, user, c, now)
	}
	if len(h.lines) == 0 {
		return nil
	}
	h.id = l.holdID()
	ttl := l.SharedHoldTTL
	if ttl <= 0 {
		ttl = DefaultSharedHoldTTL
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	held, figs, err := l.Shared.HoldBudget(ctx, h.id, h.lines, now, now.Add(ttl))
	l.sharedResult(err)
	if err == nil && len(figs) == len(h.lines) {
		h.held, h.ok, h.figs = held, true, figs
	}
	return h
}

// add appends the line of subject subj's budget lim, if it has one, with
// the amount the request reserves against it: its price, or unpriced,
// the subject's recent average.
func (h *sharedHold) add(l *Limiter, subj string, lim Limits, c cost, now time.Time) {
	if lim.Budget <= 0 {
		return
	}
	start, end, ok := BudgetPeriod(lim, now)
	if !ok {
		return
	}
	amount := c.usd
	if !c.priced {
		l.mu.Lock()
		if s := l.subjects[subj]; s != nil {
			amount = s.avgCost
		}
		l.mu.Unlock()
	}
	h.lines = append(h.lines, fleet.BudgetLine{Subject: subj, Start: start, End: end,
		Budget: nanos(lim.Budget), Amount: nanos(amount), Seed: nanos(l.spend.Spent(subj, start))})
}

// figures returns the SharedBudget's figures of subject subj in h, and
// the amount h reserved against it; false when h has none (no hold, the
// SharedBudget is out, or it does not hold subj's budget).
func (h *sharedHold) figures(subj string) (fleetFigures, float64, bool) {
	if h == nil || !h.ok {
		return fleetFigures{}, 0, false
	}
	for i, ln := range h.lines {
		if ln.Subject == subj {
			f := h.figs[i]
			return fleetFigures{start: ln.Start, spent: float64(f.Spent) / 1e9, held: float64(f.Held) / 1e9}, float64(ln.Amount) / 1e9, true
		}
	}
	return fleetFigures{}, 0, false
}

// userFigures is figures of end user k's line in h: found by its key,
// without hashing its id again.
func (h *sharedHold) userFigures(k endUserKey) (fleetFigures, float64, bool) {
	if h == nil || !h.ok {
		return fleetFigures{}, 0, false
	}
	for _, u := range h.users {
		if u.k == k {
			ln, f := h.lines[u.line], h.figs[u.line]
			return fleetFigures{start: ln.Start, spent: float64(f.Spent) / 1e9, held: float64(f.Held) / 1e9}, float64(ln.Amount) / 1e9, true
		}
	}
	return fleetFigures{}, 0, false
}

// apply gives s (subject name subj) the SharedBudget's figures of h, and
// returns what the request reserves against s's budget: price, or the
// amount h reserved in the SharedBudget. A subject without figures of
// this admission keeps none of the held amount (the SharedBudget is out,
// or does not hold its budget), and what was spent as last read. Called
// with l.mu held.
func (h *sharedHold) apply(s *subject, subj string, price float64) float64 {
	if s == nil {
		return price
	}
	s.fleet.held = 0
	f, amount, ok := h.figures(subj)
	if !ok {
		return price
	}
	s.fleet = f
	return amount
}

// spentIn returns what the SharedBudget said s spent in the period that
// starts at start, or 0 when it has no figure of it.
func (f fleetFigures) spentIn(start time.Time) float64 {
	if !f.start.Equal(start) {
		return 0
	}
	return f.spent
}

// heldIn is spentIn for the amount held.
func (f fleetFigures) heldIn(start time.Time) float64 {
	if !f.start.Equal(start) {
		return 0
	}
	return f.held
}

// settleShared ends a request's hold in the SharedBudget: it adds cost
// to its budgets' spent there (what this replica spent, with cost, is
// the floor), and releases what it reserved. A request that was not held
// there (the SharedBudget was out) still adds its cost, so the fleet's
// figure stays whole once it is back. Call it before cost is added to
// l.spend and to its end users' figures: a hold that reads them
// meanwhile would otherwise take a figure with cost as spent's floor,
// and the settle add cost again.
func (l *Limiter) settleShared(h *sharedHold, cost float64) {
	if h == nil || (!h.held && cost == 0) {
		return
	}
	lines := make([]fleet.BudgetLine, len(h.lines))
	for i, ln := range h.lines {
		ln.Seed = nanos(l.spend.Spent(ln.Subject, ln.Start)) + nanos(cost)
		lines[i] = ln
	}
	for _, u := range h.users {
		lines[u.line].Seed = l.EndUsers.seed(u.k, lines[u.line].Start) + nanos(cost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	l.sharedResult(l.Shared.SettleBudget(ctx, h.id, lines, nanos(cost), l.clock.Now()))
}

// releaseShared gives back what h holds in the SharedBudget: the request
// was refused here after all.
func (l *Limiter) releaseShared(h *sharedHold) {
	if h == nil || !h.held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	l.sharedResult(l.Shared.SettleBudget(ctx, h.id, h.lines, 0, l.clock.Now()))
}

// sharedResult reports a call to the SharedBudget to OnShared: every
// failure, and the first success after one.
func (l *Limiter) sharedResult(err error) {
	wasDown := l.shared.down.Swap(err != nil)
	if l.OnShared != nil && (err != nil || wasDown) {
		l.OnShared(err, wasDown != (err != nil))
	}
}

// holdID returns a new hold id, unique across the fleet.
func (l *Limiter) holdID() string {
	return l.shared.prefix + strconv.FormatInt(l.shared.seq.Add(1), 36)
}

// newHoldPrefix returns a random prefix for a limiter's hold ids.
func newHoldPrefix() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b) + "-"
}
