package tenant

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/ledger"
)

// EndUserLimits bound each end user of a key or team (Limits.EndUser):
// every end user its requests name (Ask.EndUser) gets rates and a budget
// of its own, apart from every other end user's. A key's apply to the
// end users of that key; a team's to the end users of all its keys
// together, so the same end user through two keys of a team shares
// them. End users of different keys (or teams) are never the same: the
// id "alice" of one key is not another's. A request that names no end
// user is held only to its key's and team's limits. Zero fields are
// unlimited.
type EndUserLimits struct {
	// RPM and TPM bound each end user's requests and tokens per minute,
	// as a key's do, on each replica (they are not shared through the
	// fleet's exchange: an end user served by N replicas may get up to
	// N times as much).
	RPM, TPM int64
	// Budget is each end user's budget, in US dollars per BudgetPeriod.
	Budget       float64
	BudgetPeriod string
}

// EndUserLoad reads what the end user user of key ID key, or of team
// team (one of them is ""), spent from since on, in US dollars, from the
// usage store.
type EndUserLoad func(ctx context.Context, key, team, user string, since time.Time) (float64, error)

// DefaultMaxEndUsers is how many end users EndUsers keeps by default.
// Each takes about 300 bytes plus its id and its key's or team's name,
// at most about 1 KB: 20,000 take at most about 20 MB.
const DefaultMaxEndUsers = 20_000

// endUserIdle is how long an end user with nothing in flight is kept.
const endUserIdle = 10 * time.Minute

// endUserReload is how old the store's figure of an end user's spend
// may grow while it keeps sending requests: Refresh reads it again after
// that. It bounds how late another replica's spend arrives.
const endUserReload = 30 * time.Second

// maxEndUserLoads bounds the end users one Refresh reads from the store.
const maxEndUserLoads = 256

// EndUsers keeps the state of end users' limits: rate buckets, requests
// in flight, what they reserved and spent. End user ids are chosen by
// callers and unbounded, so the state is too: it holds at most Max end
// users, forgets the least recently used one to make room for a new one,
// and those idle for 10 minutes. A forgotten end user that comes back
// starts with full buckets, and its spend is read from the store again.
//
// Budgets count what the store recorded in the period (read by Refresh
// through Load, again every 30 s while the end user is active) plus what
// this replica spent since, plus what its requests in flight reserved.
// Until the store's figure is first read (or a read failed), an end user
// with a budget may spend a tenth of it on this replica (at least one
// request); past that it is refused with a retry in a second. Without Load (no store), spend is this
// replica's since the end user was last met.
//
// It is safe for concurrent use. Use NewEndUsers; the zero value is not
// usable, and a nil *EndUsers enforces nothing.
type EndUsers struct {
	clock clock.Clock
	// Max is the most end users kept. Set it before use.
	Max int
	// Load, if set, reads an end user's spend from the store. Set it
	// before use.
	Load EndUserLoad

	mu      sync.Mutex
	users   map[endUserKey]*list.Element // of *endUser
	lru     list.List                    // most recently used first
	evicted int64
	kick    chan struct{}
}

// endUserKey names an end user: its key's or team's limiter name and the
// id its requests give.
type endUserKey struct{ scope, user string }

// endUser is one end user's state. Its fields are guarded by the
// EndUsers' lock.
type endUser struct {
	k        endUserKey
	rpm, tpm *bucket
	inflight int
	used     time.Time
	reserved float64 // by its requests in flight
	avgCost  float64
	costs    int

	// The budget's account, in nano-dollars, of the period that began at
	// period: base is the store's figure, read by a load that began at
	// loadedAt (zero: never in this period). cur holds this replica's
	// costs since the last load began, prev those of the epoch before,
	// older those before that while loads fail: a cost the store may not
	// have had when a load began is counted on top of its figure.
	period           time.Time
	base             int64
	cur, prev, older int64
	loaded           bool // a load was tried in this period
	loadedAt         time.Time
	loading          bool
	early            int // requests admitted in this period before a load was tried
	// fleet is its account in the Limiter's SharedBudget as its last
	// admission read it.
	fleet fleetFigures
}

// NewEndUsers returns an EndUsers keeping at most max end users (0:
// DefaultMaxEndUsers).
func NewEndUsers(c clock.Clock, max int) *EndUsers {
	if max <= 0 {
		max = DefaultMaxEndUsers
	}
	return &EndUsers{clock: clock.Or(c), Max: max, users: map[endUserKey]*list.Element{}, kick: make(chan struct{}, 1)}
}

// Len returns the end users kept.
func (e *EndUsers) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lru.Len()
}

// Evicted returns how many end users were forgotten to make room.
func (e *EndUsers) Evicted() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.evicted
}

// Kick is signalled when an end user's spend should be read from the
// store soon (one met anew, or whose figure is old): call Refresh. A nil
// EndUsers's is nil, which never fires.
func (e *EndUsers) Kick() <-chan struct{} {
	if e == nil {
		return nil
	}
	return e.kick
}

// endUserTicket is what an admitted request took from its end users.
type endUserTicket struct {
	e        *EndUsers
	users    [2]*endUser // of the key, of the team; nil for none
	reserved [2]float64
	estimate float64
}

// endUserScope is one of a request's end users to check.
type endUserScope struct {
	name  string     // "key:ID" or "team:NAME"
	p     *Principal // the request's key
	team  bool       // the scope is p's team's
	lim   EndUserLimits
	price float64
}

// who names the scope's key or team in messages: "key ID (NAME)" or
// "team NAME".
func (s endUserScope) who() string {
	if s.team {
		return "team " + s.p.Team
	}
	return "key " + s.p.display()
}

// scopes returns the scopes of p's key and team (team limits tl, when p
// has a team) whose end-user limits apply, and how many there are.
func endUserScopes(p *Principal, tl Limits, hasTeam bool) (scopes [2]endUserScope, n int) {
	keyName, teamName := p.names()
	if p.Limits.EndUser != (EndUserLimits{}) {
		scopes[0] = endUserScope{name: keyName, p: p, lim: p.Limits.EndUser}
		n++
	}
	if hasTeam && tl.EndUser != (EndUserLimits{}) {
		scopes[1] = endUserScope{name: teamName, p: p, team: true, lim: tl.EndUser}
		n++
	}
	return scopes, n
}

// addShared appends to h the lines of end user user's budgets in the
// scopes of p's key and team (team limits tl, when p has a team), each
// with the amount the request c reserves against it and this replica's
// figure of what the end user spent (see seed). It does not make the end
// user's state: admit does.
func (e *EndUsers) addShared(h *sharedHold, p *Principal, tl Limits, hasTeam bool, user string, c cost, now time.Time) {
	if e == nil {
		return
	}
	scopes, n := endUserScopes(p, tl, hasTeam)
	if n == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range scopes {
		if s.name == "" || s.lim.Budget <= 0 {
			continue
		}
		start, end, ok := BudgetPeriod(Limits{Budget: s.lim.Budget, BudgetPeriod: s.lim.BudgetPeriod}, now)
		if !ok {
			continue
		}
		k := endUserKey{s.name, user}
		amount, seed := c.usd, int64(0)
		if el, ok := e.users[k]; ok {
			u := el.Value.(*endUser)
			if !c.priced {
				amount = u.avgCost
			}
			seed = u.seedIn(start)
		}
		h.users = append(h.users, sharedUser{line: len(h.lines), k: k})
		h.lines = append(h.lines, fleet.BudgetLine{Subject: userSubject(s.name, user), Start: start, End: end, Keep: EndUserKeep,
			Budget: nanos(s.lim.Budget), Amount: nanos(amount), Seed: seed})
	}
}

// seed returns this replica's figure of what end user k spent in the
// period that starts at start, in nano-dollars, as the floor of its
// account in the SharedBudget (see seedIn).
func (e *EndUsers) seed(k endUserKey, start time.Time) int64 {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if el, ok := e.users[k]; ok {
		return el.Value.(*endUser).seedIn(start)
	}
	return 0
}

// seedIn is what u surely spent in the period that starts at start: the
// store's figure, or what this replica spent since the load before last,
// whichever is more. Not their sum: the costs of the epoch before the
// last load may be in the store's figure too, and a floor given to the
// SharedBudget is never taken back. Called with e.mu held.
func (u *endUser) seedIn(start time.Time) int64 {
	if !u.period.Equal(start) {
		return 0
	}
	return max(u.base, u.older+u.prev+u.cur)
}

// admit checks and takes the request a of p from its end user's state in
// the scopes of p's key and team (team limits tl, when p has a team):
// nil without an end user or end-user limits. sh is the request's hold in
// the Limiter's SharedBudget (nil: none): the end user's budgets count
// the fleet's figures it read.
func (e *EndUsers) admit(p *Principal, tl Limits, hasTeam bool, a Ask, c cost, now time.Time, sh *sharedHold) (*endUserTicket, *Refusal) {
	if e == nil || a.EndUser == "" {
		return nil, nil
	}
	scopes, n := endUserScopes(p, tl, hasTeam)
	if n == 0 {
		return nil, nil
	}
	est := float64(max(a.Tokens, 0))
	e.mu.Lock()
	defer e.mu.Unlock()
	var users [2]*endUser
	for i := range scopes {
		s := &scopes[i]
		if s.name == "" {
			continue
		}
		u := e.user(endUserKey{s.name, a.EndUser}, s.lim, now)
		users[i] = u
		s.price = c.usd
		if !c.priced {
			s.price = u.avgCost
		}
		u.fleet.held = 0
		if sh != nil && s.lim.Budget > 0 {
			if f, amount, ok := sh.userFigures(endUserKey{s.name, a.EndUser}); ok {
				u.fleet, s.price = f, amount
			}
		}
		if r := e.check(u, *s, a.EndUser, est, now); r != nil {
			return nil, r
		}
	}
	t := &endUserTicket{e: e, users: users, estimate: est}
	for i, u := range users {
		if u == nil {
			continue
		}
		if u.rpm != nil {
			u.rpm.take(1, now)
		}
		if u.tpm != nil {
			u.tpm.take(est, now)
		}
		u.inflight++
		u.used = now
		if !u.period.IsZero() && !u.loaded {
			u.early++
		}
		t.reserved[i] = scopes[i].price
		u.reserved += scopes[i].price
	}
	return t, nil
}

// user returns the state of k, made (and the least recently used end
// user forgotten to make room) when new, with its buckets sized to lim.
// Called with e.mu held.
func (e *EndUsers) user(k endUserKey, lim EndUserLimits, now time.Time) *endUser {
	var u *endUser
	if el, ok := e.users[k]; ok {
		e.lru.MoveToFront(el)
		u = el.Value.(*endUser)
	} else {
		e.makeRoom(now)
		u = &endUser{k: k, used: now}
		e.users[k] = e.lru.PushFront(u)
	}
	u.rpm = sizedBucket(u.rpm, lim.RPM, now)
	u.tpm = sizedBucket(u.tpm, lim.TPM, now)
	if lim.Budget > 0 {
		start, err := ledger.PeriodStart(lim.BudgetPeriod, now)
		if err == nil && !start.Equal(u.period) {
			// A new period: nothing spent in it yet that this replica
			// knows, and the store's figure is to be read.
			u.period, u.base, u.cur, u.prev, u.older = start, 0, 0, 0, 0
			u.loaded, u.loadedAt, u.early = false, time.Time{}, 0
		}
	}
	return u
}

// makeRoom forgets end users idle for endUserIdle, from the least
// recently used, and while e is full the least recently used one (one
// with nothing in flight, among the last few, when there is one).
// Called with e.mu held.
func (e *EndUsers) makeRoom(now time.Time) {
	for el := e.lru.Back(); el != nil; {
		u := el.Value.(*endUser)
		if u.inflight > 0 || now.Sub(u.used) <= endUserIdle {
			break
		}
		prev := el.Prev()
		e.forget(el)
		el = prev
	}
	for e.lru.Len() >= max(e.Max, 1) {
		victim := e.lru.Back()
		for el, i := victim, 0; el != nil && i < 8; el, i = el.Prev(), i+1 {
			if el.Value.(*endUser).inflight == 0 {
				victim = el
				break
			}
		}
		e.forget(victim)
		e.evicted++
	}
}

func (e *EndUsers) forget(el *list.Element) {
	delete(e.users, el.Value.(*endUser).k)
	e.lru.Remove(el)
}

// sizedBucket is b sized to limit per minute; nil for no limit.
func sizedBucket(b *bucket, limit int64, now time.Time) *bucket {
	if limit <= 0 {
		return nil
	}
	if b == nil {
		return newBucket(float64(limit), now)
	}
	b.resize(float64(limit), now)
	return b
}

// check returns the refusal of a request of end user u (id user) in
// scope s, estimated at est tokens, or nil. Called with e.mu held.
func (e *EndUsers) check(u *endUser, s endUserScope, user string, est float64, now time.Time) *Refusal {
	if r := e.overBudget(u, s, user, now); r != nil {
		return r
	}
	for _, c := range []struct {
		b     *bucket
		n     float64
		limit string
	}{{u.rpm, 1, "requests per minute"}, {u.tpm, est, "tokens per minute"}} {
		if c.b == nil {
			continue
		}
		if w := c.b.wait(c.n, now); w > 0 {
			w = max(w.Round(time.Millisecond), time.Millisecond)
			used := math.Ceil(c.b.used(now))
			return &Refusal{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Subject: "end_user", Name: user,
				Limit: c.limit, Max: c.b.limit, Used: used, Remaining: math.Floor(max(c.b.level, 0)), Reset: now.Add(w), RetryAfter: w,
				Message: fmt.Sprintf("switchover: this request's end user is over the limit of %s %s that %s sets for each of its end users (at most %s in any 10 s; %s used); retry in %s",
					formatCount(c.b.limit), c.limit, s.who(), formatCount(c.b.cap), formatCount(used), w)}
		}
	}
	return nil
}

// overBudget returns the refusal of a request of u that may cost
// s.price when u's budget has no room for it, or nil. Called with e.mu
// held.
func (e *EndUsers) overBudget(u *endUser, s endUserScope, user string, now time.Time) *Refusal {
	lim := s.lim
	if lim.Budget <= 0 || u.period.IsZero() {
		return nil
	}
	reset := ledger.PeriodEnd(lim.BudgetPeriod, u.period)
	refusal := func() *Refusal { // only when refused: admitting allocates nothing here
		return &Refusal{Status: http.StatusTooManyRequests, Code: "budget_exceeded", Subject: "end_user", Name: user, Limit: "budget",
			Max: lim.Budget, Reset: reset, RetryAfter: reset.Sub(now)}
	}
	if early := u.older + u.prev + u.cur + nanos(u.reserved) + nanos(s.price); e.Load != nil && !u.loaded && u.early > 0 &&
		(early > nanos(lim.Budget)*earlyShare/100 || s.price == 0 && u.inflight > 0) { // unpriced and no history: one at a time
		e.signal()
		r := refusal()
		// Not spent: to retry in a moment.
		r.Code, r.Reset, r.RetryAfter = "rate_limit_exceeded", now.Add(time.Second), time.Second
		r.Message = fmt.Sprintf("switchover: what this request's end user spent is being read from the store, and it has used meanwhile what it may before that is known; retry in a second (%s sets a budget for each of its end users)", s.who())
		return r
	}
	if e.Load != nil && (!u.loaded || now.Sub(u.loadedAt) > endUserReload) {
		e.signal()
	}
	// With a SharedBudget, the fleet's figures as this admission read
	// them, when more.
	spent := max(u.base+u.older+u.prev+u.cur, nanos(u.fleet.spentIn(u.period)))
	budget, held := nanos(lim.Budget), spent+max(nanos(u.reserved), nanos(u.fleet.heldIn(u.period)))
	if held < budget && held+nanos(s.price) <= budget {
		return nil
	}
	r := refusal()
	r.Used = float64(spent) / 1e9
	switch {
	case spent >= budget:
		r.Message = fmt.Sprintf("switchover: this request's end user has spent $%.4f of the budget of $%s per %s that %s sets for each of its end users; it resets at %s",
			r.Used, formatMoney(lim.Budget), lim.BudgetPeriod, s.who(), reset.UTC().Format(time.RFC3339))
	case spent+nanos(s.price) > budget:
		r.Message = fmt.Sprintf("switchover: this request's end user has spent $%.4f of the budget of $%s per %s that %s sets for each of its end users, and this request may cost up to $%.4f (its prompt and max_tokens at its backend's price, or unpriced the end user's recent average), more than is left; lower max_tokens, or wait until it resets at %s",
			r.Used, formatMoney(lim.Budget), lim.BudgetPeriod, s.who(), s.price, reset.UTC().Format(time.RFC3339))
	default:
		r.Message = fmt.Sprintf("switchover: this request's end user has spent $%.4f of the budget of $%s per %s that %s sets for each of its end users, and its requests in flight have reserved the rest; retry when they end",
			r.Used, formatMoney(lim.Budget), lim.BudgetPeriod, s.who())
		r.Reset, r.RetryAfter = now.Add(time.Second), time.Second
	}
	return r
}

// earlyShare is the percentage of an end user's budget it may spend
// (and reserve) on a replica before its spend is first read from the
// store, beyond its first request: a spent budget is overshot by at most
// that, or that one request, per replica that meets the end user anew.
const earlyShare = 10

// signal asks for a Refresh soon, without waiting.
func (e *EndUsers) signal() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// cancel gives back what admit took, for a request its key or team then
// refused.
func (t *endUserTicket) cancel(now time.Time) {
	if t == nil {
		return
	}
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	for i, u := range t.users {
		if u == nil {
			continue
		}
		if u.rpm != nil {
			u.rpm.take(-1, now)
		}
		if u.tpm != nil {
			u.tpm.take(-t.estimate, now)
		}
		u.inflight--
		u.reserved = max(u.reserved-t.reserved[i], 0)
	}
}

// done settles the request: tokens it used (when known), its cost.
func (t *endUserTicket) done(tokens int64, known bool, cost float64, now time.Time) {
	if t == nil {
		return
	}
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	for i, u := range t.users {
		if u == nil {
			continue
		}
		if known && u.tpm != nil {
			u.tpm.take(float64(tokens)-t.estimate, now)
		}
		u.inflight--
		u.used = now
		u.reserved = max(u.reserved-t.reserved[i], 0)
		if !u.period.IsZero() && !now.Before(u.period) {
			u.cur += nanos(cost)
		}
		if u.costs == 0 {
			u.avgCost = cost
		} else {
			u.avgCost += costWeight * (cost - u.avgCost)
		}
		u.costs++
	}
}

// endUserLoadJob is one end user whose spend Refresh reads.
type endUserLoadJob struct {
	u     *endUser
	since time.Time
}

// Refresh reads from the store (Load) the spend of the end users with a
// budget that need it: those met anew, and those active since their
// figure is 30 s old, at most 256 at a time, the most recently used
// first. It forgets end users idle for 10 minutes. Without Load it only
// forgets. Call it after Kick, and with the store's refresh.
func (e *EndUsers) Refresh(ctx context.Context) error {
	if e == nil {
		return nil
	}
	began := e.clock.Now()
	var jobs []endUserLoadJob
	e.mu.Lock()
	e.sweep(began)
	if e.Load != nil {
		for el := e.lru.Front(); el != nil && len(jobs) < maxEndUserLoads; el = el.Next() {
			u := el.Value.(*endUser)
			if u.period.IsZero() || u.loading || (u.loaded && (began.Sub(u.loadedAt) <= endUserReload || !u.used.After(u.loadedAt))) {
				continue
			}
			// A new epoch: what this replica spends from now on is
			// surely not in the figure about to be read.
			u.older += u.prev
			u.prev, u.cur = u.cur, 0
			u.loading = true
			jobs = append(jobs, endUserLoadJob{u, u.period})
		}
	}
	e.mu.Unlock()
	var firstErr error
	for _, j := range jobs {
		key, team := "", ""
		if id, ok := strings.CutPrefix(j.u.k.scope, "key:"); ok {
			key = id
		} else {
			team = strings.TrimPrefix(j.u.k.scope, "team:")
		}
		usd, err := e.Load(ctx, key, team, j.u.k.user, j.since)
		e.mu.Lock()
		u := j.u
		u.loading = false
		if u.period.Equal(j.since) {
			u.loaded, u.loadedAt = true, began
			if err == nil {
				// Costs from before the last epoch were written before
				// this load began (the writer is far quicker than 30 s):
				// the figure has them.
				u.base, u.older = nanos(usd), 0
			}
		}
		e.mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("reading end users' spend: %w", err)
		}
	}
	return firstErr
}

// sweep forgets the end users idle for endUserIdle. Called with e.mu
// held.
func (e *EndUsers) sweep(now time.Time) {
	for el := e.lru.Back(); el != nil; {
		prev := el.Prev()
		if u := el.Value.(*endUser); u.inflight == 0 && now.Sub(u.used) > endUserIdle {
			e.forget(el)
		}
		el = prev
	}
}
