package tenant

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/ledger"
)

// Limiter enforces limits and budgets. The zero value is not usable; make
// one with NewLimiter. It is safe for concurrent use.
type Limiter struct {
	clock clock.Clock
	spend *Spend
	teams func(name string) (Limits, bool)
	// OnBudget, if set, is told once per subject, period and threshold
	// when spend reaches 80% (or the soft budget, when one is set) and
	// 100% of a budget. It is called without
	// the limiter's lock held, on the request's goroutine: keep it quick.
	OnBudget func(BudgetAlert)
	// EndUsers keeps the end users' limits (Limits.EndUser): NewLimiter
	// makes one of DefaultMaxEndUsers, without a store. Nil enforces
	// none. Set its Load before use to count the store's spend.
	EndUsers *EndUsers
	// Orgs, if set, returns the organisation of a team and its limits,
	// which apply on top of the team's (rates, budget, reservations):
	// Directory.Org. Nil: no organisations. Set it before use.
	Orgs func(team string) (org string, lim Limits, ok bool)
	// Price, if set, prices a request against budgets (AdmitAsk): the
	// price of the tokens of the backend most likely to answer. Nil, or
	// no price for the request's backend and model: it is expected to
	// cost its key's (and team's) recent average. Set it before use.
	Price PriceFunc
	// Shared, if set, holds budgets for the whole fleet (see
	// SharedBudget): a request of a key or team with a budget is held
	// there too, one round trip before it starts and one when it ends.
	// Nil means each replica reserves its own requests only. When a call
	// to it fails, the request is held on this replica alone. Set it
	// before use.
	Shared SharedBudget
	// SharedHoldTTL is how long a request's reservation in Shared lasts
	// if its replica never settles it (it died): a request that runs
	// longer keeps its cost, and loses its reservation. Zero means
	// DefaultSharedHoldTTL.
	SharedHoldTTL time.Duration
	// OnShared, if set, is told of each call to Shared that failed (err
	// not nil: the request was held on this replica alone), and of the
	// first that worked after one; changed says it is the first of its
	// kind (log those). Called without the limiter's lock held.
	OnShared func(err error, changed bool)
	shared   sharedState

	mu       sync.Mutex
	subjects map[string]*subject
	share    float64               // of each limit this replica enforces: 1, or 1/N while the exchange is down
	replicas int                   // in the fleet when the exchange last answered
	seen     map[string]*peerState // by replica
	synced   bool                  // the last exchange worked: this replica's account of the fleet is current
	alerted  map[alertKey]bool
	syncs    int64 // exchanges that worked
}

// Syncs returns how many exchanges have worked.
func (l *Limiter) Syncs() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncs
}

// subject is the state of one key ("key:ID") or team ("team:NAME").
type subject struct {
	rpm, tpm *bucket
	rpmLimit int64 // the limits as last applied, before the replica's share
	tpmLimit int64
	inflight int
	taken    Taken // since this replica started, for the exchange
	aligned  bool  // its buckets started from the fleet's use, at an exchange
	used     time.Time
	// reserved is what the requests in flight may cost: each sets aside
	// its price (Ask), or unpriced avgCost, the moving average of the
	// subject's costs.
	reserved float64
	avgCost  float64
	costs    int
	fleet    fleetFigures // in Shared, as the last admission read them
}

// Taken is what a subject took of its rate limits (requests and tokens),
// and the limits the replica applies, so that a replica that has not met
// the subject yet keeps its account from the start.
type Taken struct {
	Requests float64 `json:"r"`
	Tokens   float64 `json:"t"`
	RPM      int64   `json:"rpm,omitempty"`
	TPM      int64   `json:"tpm,omitempty"`
	// RPMUsed and TPMUsed are what the replica's buckets hold taken and
	// not refilled: a replica that meets the subject anew starts its
	// buckets there, not full, so a new replica brings no extra burst.
	RPMUsed float64 `json:"ru,omitempty"`
	TPMUsed float64 `json:"tu,omitempty"`
}

// BudgetAlert says a budget reached a threshold.
type BudgetAlert struct {
	Subject string // "key" or "team"
	Name    string // the key's ID or the team's name
	Label   string // the key's name, if it has one
	// Scope is "" for the subject's own budget, or "pool NAME" for a
	// key's budget of one pool.
	Scope     string
	Threshold float64 // 0.8, the soft budget's share of the budget, or 1
	// Soft says the threshold is the subject's soft budget (SoftBudget
	// dollars), which refuses nothing.
	Soft        bool
	SoftBudget  float64
	Spent       float64
	Budget      float64
	Period      string
	PeriodStart time.Time
}

type alertKey struct {
	subject string
	start   time.Time
	thr     float64
}

// thresholds returns the shares of lim's budget whose reaching sends a
// BudgetAlert: 80% or the soft budget's share, and 100%.
func thresholds(lim Limits) [2]float64 {
	if lim.SoftBudget > 0 && lim.SoftBudget < lim.Budget {
		return [2]float64{lim.SoftBudget / lim.Budget, 1}
	}
	return [2]float64{0.8, 1}
}

// NewLimiter returns a limiter whose budgets are read from spend, and
// whose teams' limits come from teams (nil: only keys' limits apply).
func NewLimiter(c clock.Clock, spend *Spend, teams func(string) (Limits, bool)) *Limiter {
	if teams == nil {
		teams = func(string) (Limits, bool) { return Limits{}, false }
	}
	return &Limiter{clock: clock.Or(c), spend: spend, teams: teams, subjects: map[string]*subject{},
		share: 1, replicas: 1, seen: map[string]*peerState{}, alerted: map[alertKey]bool{},
		shared: sharedState{prefix: newHoldPrefix()}, EndUsers: NewEndUsers(c, 0)}
}

// Ticket is an admitted request. Done must be called once when it ends.
type Ticket struct {
	l        *Limiter
	p        *Principal
	key      *subject
	team     *subject
	teamName string
	estimate float64
	// org is the state of the team's organisation (nil: none), named
	// orgName.
	org     *subject
	orgName string
	// reservedKey, reservedTeam and reservedOrg are what Admit set aside.
	reservedKey, reservedTeam, reservedOrg float64
	// pool is the request's pool; poolSub the state of the key's budget
	// of that pool (nil: none), poolLimits that budget, and reservedPool
	// what Admit set aside against it.
	pool         string
	poolSub      *subject
	poolLimits   Limits
	reservedPool float64
	shared       *sharedHold // nil: not held in Limiter.Shared
	done         bool
	eu           *endUserTicket // what its end user took; nil for none
}

// Admit is AdmitAsk of a request that is not priced: one to pool by the
// model name model, estimated to use tokens.
func (l *Limiter) Admit(p *Principal, pool, model string, tokens int64) (*Ticket, *Refusal) {
	return l.AdmitAsk(p, Ask{Pool: pool, Model: model, Tokens: tokens})
}

// AdmitAsk decides whether p may start the request a: its pools and
// models, rates and budgets (its max_concurrent is OverConcurrency's,
// checked before the body is read). It takes the request and its token
// estimate from the buckets, counts it in flight, and reserves its price
// against the key's and the team's budgets; the Ticket settles all three
// with what the request really used. A refusal takes nothing.
//
// A request's price is its prompt estimate and its completion allowance
// (Ask.Completion, or DefaultCompletion) at the price of the backend
// most likely to answer (Limiter.Price); one that cannot be priced is
// expected to cost its subject's recent average. A budget admits a
// request while what was spent, plus what the requests in flight
// reserved, plus its price, is within it: concurrent callers cannot all
// slip in on the last dollar, and a request whose price alone exceeds
// what is left is refused.
//
// A request that names its end user (Ask.EndUser) is first held to the
// end-user limits of its key and team (Limits.EndUser, kept by
// EndUsers), refused with Subject "end_user"; what it took there is
// given back if its key or team then refuses it.
func (l *Limiter) AdmitAsk(p *Principal, a Ask) (*Ticket, *Refusal) {
	now := l.clock.Now()
	pool, model := a.Pool, a.Model
	if !p.allows(pool, model) {
		what, name := "pool", pool
		if len(p.Models) > 0 && !slices.Contains(p.Models, model) {
			what, name = "model", model
		}
		return nil, NotAllowed(p, what, name)
	}
	teamLimits, hasTeam := Limits{}, false
	if p.Team != "" {
		teamLimits, hasTeam = l.teams(p.Team)
	}
	var o org
	if hasTeam && l.Orgs != nil {
		o.name, o.lim, o.ok = l.Orgs(p.Team)
	}
	if p.Limits == (Limits{}) && (!hasTeam || teamLimits == (Limits{})) && len(p.PoolBudgets) == 0 && (!o.ok || o.lim == (Limits{})) {
		return nil, nil // nothing to count: a nil Ticket's Done does nothing
	}
	price, priced := a.cost(l.Price)
	sh := l.holdShared(p, teamLimits, hasTeam, o, pool, a.EndUser, cost{price, priced}, now)
	eu, r := l.EndUsers.admit(p, teamLimits, hasTeam, a, cost{price, priced}, now, sh)
	if r != nil {
		l.releaseShared(sh)
		return nil, r
	}
	var alerts []BudgetAlert
	t, r := l.admit(p, pool, teamLimits, hasTeam, o, a.Tokens, cost{price, priced}, now, sh, &alerts)
	l.send(alerts)
	if t == nil {
		l.releaseShared(sh)
		eu.cancel(now)
		return nil, r
	}
	t.eu = eu
	return t, r
}

// org is the organisation of a request's team, if ok.
type org struct {
	name string
	lim  Limits
	ok   bool
}

// cost is a request's price, when it has one.
type cost struct {
	usd    float64
	priced bool
}

// of is what the request is expected to cost s: its price, or s's
// recent average.
func (c cost) of(s *subject) float64 {
	if c.priced {
		return c.usd
	}
	return s.avgCost
}

// admit is Admit past the checks that need no state.
func (l *Limiter) admit(p *Principal, pool string, teamLimits Limits, hasTeam bool, o org, tokens int64, c cost, now time.Time, sh *sharedHold, alerts *[]BudgetAlert) (*Ticket, *Refusal) {
	est := float64(max(tokens, 0))
	keyName, teamName := p.names()
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.subject(keyName, p.Limits, now)
	var ts *subject
	if hasTeam {
		ts = l.subject(teamName, teamLimits, now)
	}
	kp := sh.apply(ks, keyName, c.of(ks))
	if r := l.overBudget("key", p.ID, p.Name, "", p.Limits, ks, keyName, kp, now, alerts); r != nil {
		return nil, r
	}
	var tp float64
	if ts != nil {
		tp = sh.apply(ts, teamName, c.of(ts))
		if r := l.overBudget("team", p.Team, "", "", teamLimits, ts, teamName, tp, now, alerts); r != nil {
			return nil, r
		}
	}
	var orgSub *subject
	var op float64
	if o.ok {
		orgSub = l.subject("org:"+o.name, o.lim, now)
		op = sh.apply(orgSub, "org:"+o.name, c.of(orgSub))
		if r := l.overBudget("org", o.name, "", "", o.lim, orgSub, "org:"+o.name, op, now, alerts); r != nil {
			return nil, r
		}
	}
	var ps *subject
	var pp float64
	pb, hasPool := p.PoolBudget(pool)
	if hasPool {
		ps = l.subject(poolSubject(keyName, pool), Limits{}, now)
		pp = sh.apply(ps, poolSubject(keyName, pool), c.of(ps))
		if r := l.overBudget("key", p.ID, p.Name, "pool "+pool, pb, ps, poolSubject(keyName, pool), pp, now, alerts); r != nil {
			return nil, r
		}
	}
	type check struct {
		b          *bucket
		n          float64
		subj, name string
		limit      string
	}
	checks := [6]check{
		{ks.rpm, 1, "key", p.ID, "requests per minute"},
		{ks.tpm, est, "key", p.ID, "tokens per minute"},
	}
	if ts != nil {
		checks[2] = check{ts.rpm, 1, "team", p.Team, "requests per minute"}
		checks[3] = check{ts.tpm, est, "team", p.Team, "tokens per minute"}
	}
	if orgSub != nil {
		checks[4] = check{orgSub.rpm, 1, "org", o.name, "requests per minute"}
		checks[5] = check{orgSub.tpm, est, "org", o.name, "tokens per minute"}
	}
	for _, c := range checks {
		if c.b == nil {
			continue
		}
		if w := c.b.wait(c.n, now); w > 0 {
			w = max(w.Round(time.Millisecond), time.Millisecond)
			who := "key " + p.display()
			if c.subj != "key" {
				who = c.subj + " " + c.name
			}
			used := math.Ceil(c.b.used(now))
			return nil, &Refusal{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Subject: c.subj, Name: c.name,
				Limit: c.limit, Max: c.b.limit, Used: used, Remaining: math.Floor(max(c.b.level, 0)), Reset: now.Add(w), RetryAfter: w,
				Message: fmt.Sprintf("switchover: %s is over its limit of %s %s (at most %s in any 10 s; %s used); retry in %s",
					who, formatCount(c.b.limit), c.limit, formatCount(c.b.cap), formatCount(used), w)}
		}
	}
	t := &Ticket{l: l, p: p, key: ks, team: ts, org: orgSub, orgName: o.name, estimate: est, pool: pool, shared: sh}
	for _, s := range []*subject{ks, ts, orgSub} {
		if s == nil {
			continue
		}
		if s.rpm != nil {
			s.rpm.take(1, now)
		}
		if s.tpm != nil {
			s.tpm.take(est, now)
		}
		s.taken.Requests++
		s.taken.Tokens += est
		s.used = now
	}
	t.reservedKey = kp
	ks.reserved += t.reservedKey
	if ts != nil {
		t.teamName = p.Team
		t.reservedTeam = tp
		ts.reserved += t.reservedTeam
	}
	if orgSub != nil {
		t.reservedOrg = op
		orgSub.reserved += t.reservedOrg
	}
	if ps != nil {
		t.poolSub, t.poolLimits = ps, pb
		t.reservedPool = pp
		ps.reserved += t.reservedPool
		ps.used = now
	}
	ks.inflight++
	return t, nil
}

// OverConcurrency returns the refusal of a request of p's that finds
// inflight of its requests already in flight, at its max_concurrent, or
// nil while there is room. It is not in Admit: the gateway asks it as
// soon as it knows the caller's key, before it reads the request's body,
// and counts the requests in flight itself (a request waiting for its
// body holds a place too).
func (p *Principal) OverConcurrency(inflight int, now time.Time) *Refusal {
	m := p.Limits.MaxConcurrent
	if m <= 0 || inflight < m {
		return nil
	}
	return &Refusal{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Subject: "key", Name: p.ID,
		Limit: "concurrent requests", Max: float64(m), Used: float64(inflight), Reset: now.Add(time.Second), RetryAfter: time.Second,
		Message: fmt.Sprintf("switchover: key %s has %d requests in flight, its limit (max_concurrent); retry when one ends", p.display(), inflight)}
}

// Done ends the request: tokens is what the answer reported (known false
// when it did not say, and the estimate stands) and cost what it cost in
// US dollars.
func (t *Ticket) Done(tokens int64, known bool, cost float64) {
	if t == nil || t.done {
		return
	}
	t.done = true
	l := t.l
	now := l.clock.Now()
	keyName, teamName := t.p.names()
	if t.team == nil {
		teamName = ""
	}
	// Shared first: this replica's own figure, which Shared takes as the
	// floor of spent, must not count a cost Shared does not have yet.
	l.settleShared(t.shared, cost)
	t.eu.done(tokens, known, cost, now)
	poolName := ""
	if t.pool != "" {
		poolName = poolSubject(keyName, t.pool)
	}
	if l.spend != nil && cost != 0 {
		l.spend.add(cost, now, keyName, teamName, poolName)
	}
	var alerts []BudgetAlert
	l.mu.Lock()
	t.key.inflight--
	for _, x := range []struct {
		s        *subject
		reserved float64
	}{{t.key, t.reservedKey}, {t.team, t.reservedTeam}, {t.org, t.reservedOrg}} {
		s := x.s
		if s == nil {
			continue
		}
		if known {
			d := float64(tokens) - t.estimate
			if s.tpm != nil {
				s.tpm.take(d, now)
			}
			s.taken.Tokens += d
		}
		s.reserved = max(s.reserved-x.reserved, 0)
		s.avgCost = average(s, cost)
	}
	if s := t.poolSub; s != nil {
		s.reserved = max(s.reserved-t.reservedPool, 0)
		s.avgCost = average(s, cost)
		l.overBudget("key", t.p.ID, t.p.Name, "pool "+t.pool, t.poolLimits, s, poolName, 0, now, &alerts)
	}
	l.overBudget("key", t.p.ID, t.p.Name, "", t.p.Limits, t.key, keyName, 0, now, &alerts)
	if t.team != nil {
		if tl, ok := l.teams(t.teamName); ok {
			l.overBudget("team", t.teamName, "", "", tl, t.team, teamName, 0, now, &alerts)
		}
	}
	if t.org != nil && l.Orgs != nil {
		if name, ol, ok := l.Orgs(t.teamName); ok && name == t.orgName {
			l.overBudget("org", name, "", "", ol, t.org, "org:"+name, 0, now, &alerts)
		}
	}
	l.mu.Unlock()
	l.send(alerts)
}

// costWeight is the weight of a request's cost in the moving average
// that requests in flight are expected to cost.
const costWeight = 0.2

// average counts cost in s's moving average of costs and returns it.
// Called with l.mu held.
func average(s *subject, cost float64) float64 {
	if s.costs == 0 {
		s.avgCost = cost
	} else {
		s.avgCost += costWeight * (cost - s.avgCost)
	}
	s.costs++
	return s.avgCost
}

// overBudget returns a refusal when the subject's budget has no room
// for a request that may cost price on top of what was spent and what
// the requests in flight reserved, and appends the alerts its spend has
// earned. Called with l.mu held.
//
// scope is "" for the subject's own budget, or "pool NAME" for a key's
// budget of one pool (subj is then its poolSubject).
func (l *Limiter) overBudget(kind, name, label, scope string, lim Limits, s *subject, subj string, price float64, now time.Time, alerts *[]BudgetAlert) *Refusal {
	if l.spend == nil {
		return nil
	}
	start, reset, ok := BudgetPeriod(lim, now)
	if !ok {
		return nil
	}
	spent := max(l.spend.Spent(subj, start), s.fleet.spentIn(start))
	reserved := max(s.reserved, s.fleet.heldIn(start))
	if l.OnBudget != nil {
		for i, thr := range thresholds(lim) {
			k := alertKey{subj, start, thr}
			at := thr * lim.Budget
			soft := i == 0 && lim.SoftBudget > 0 && lim.SoftBudget < lim.Budget
			if soft {
				at = lim.SoftBudget
			}
			if nanos(spent) >= nanos(at) && !l.alerted[k] {
				if len(l.alerted) >= maxAlerted {
					clear(l.alerted)
				}
				l.alerted[k] = true
				a := BudgetAlert{Subject: kind, Name: name, Label: label, Scope: scope, Threshold: thr, Spent: spent,
					Budget: lim.Budget, Period: lim.BudgetPeriod, PeriodStart: start}
				if soft {
					a.Soft, a.SoftBudget = true, lim.SoftBudget
				}
				*alerts = append(*alerts, a)
			}
		}
	}
	budget, held := nanos(lim.Budget), nanos(spent)+nanos(reserved)
	if held < budget && held+nanos(price) <= budget {
		return nil
	}
	who := kind + " " + name
	if label != "" && label != name && kind == "key" {
		who = fmt.Sprintf("key %s (%s)", name, label)
	}
	if scope != "" {
		who += " on " + scope
	}
	r := &Refusal{Status: http.StatusTooManyRequests, Code: "budget_exceeded", Subject: kind, Name: name, Limit: "budget",
		Max: lim.Budget, Used: spent, Reset: reset, RetryAfter: reset.Sub(now)}
	switch {
	case nanos(spent) >= budget:
		r.Message = fmt.Sprintf("switchover: %s has spent $%.4f of its budget of $%s per %s; it resets at %s",
			who, spent, formatMoney(lim.Budget), lim.BudgetPeriod, reset.UTC().Format(time.RFC3339))
	case nanos(spent)+nanos(price) > budget:
		// The request alone does not fit: waiting for the requests in
		// flight will not help, a smaller one (max_tokens) may.
		l.budgetFull(kind, name, label, scope, lim, subj, spent, start, alerts)
		r.Message = fmt.Sprintf("switchover: %s has spent $%.4f of its budget of $%s per %s, and this request may cost up to $%.4f (its prompt and max_tokens at its backend's price), more than the $%.4f left; lower max_tokens, or wait until it resets at %s",
			who, spent, formatMoney(lim.Budget), lim.BudgetPeriod, price, lim.Budget-spent, reset.UTC().Format(time.RFC3339))
	default:
		r.Message = fmt.Sprintf("switchover: %s has spent $%.4f of its budget of $%s per %s, and its requests in flight have reserved $%.4f of the rest; retry when they end",
			who, spent, formatMoney(lim.Budget), lim.BudgetPeriod, reserved)
		r.Reset, r.RetryAfter = now.Add(time.Second), time.Second
	}
	return r
}

// maxAlerted bounds the alerts remembered as sent.
const maxAlerted = 10000

// budgetFull appends the 100% alert of a budget that refused a request
// whose price did not fit what was left, when at least 80% of it is spent
// and the alert was not sent this period. Requests are priced at their
// most (prompt and max_tokens), so a budget usually stops a little short
// of fully spent, and its 100% alert would otherwise never go out while
// its callers are already refused. Called with l.mu held.
func (l *Limiter) budgetFull(kind, name, label, scope string, lim Limits, subj string, spent float64, start time.Time, alerts *[]BudgetAlert) {
	k := alertKey{subj, start, 1}
	if l.OnBudget == nil || nanos(spent) < nanos(0.8*lim.Budget) || l.alerted[k] {
		return
	}
	if len(l.alerted) >= maxAlerted {
		clear(l.alerted)
	}
	l.alerted[k] = true
	*alerts = append(*alerts, BudgetAlert{Subject: kind, Name: name, Label: label, Scope: scope, Threshold: 1, Spent: spent,
		Budget: lim.Budget, Period: lim.BudgetPeriod, PeriodStart: start})
}

func (l *Limiter) send(alerts []BudgetAlert) {
	if l.OnBudget == nil {
		return
	}
	for _, a := range alerts {
		l.OnBudget(a)
	}
}

// subject returns the state of name with its buckets sized to lim and the
// replica's share. Called with l.mu held.
func (l *Limiter) subject(name string, lim Limits, now time.Time) *subject {
	s := l.subjects[name]
	fresh := s == nil
	if fresh {
		s = &subject{used: now}
		l.subjects[name] = s
	}
	s.rpm = l.sized(s.rpm, lim.RPM, now)
	s.tpm = l.sized(s.tpm, lim.TPM, now)
	s.rpmLimit, s.tpmLimit = lim.RPM, lim.TPM
	if fresh {
		l.alignSeen(name, s, now)
	}
	return s
}

// alignSeen starts a new subject's buckets from the most a peer had used
// of them when last listed, less what has refilled since: a key busy on
// another replica does not find a full bucket here. Called with l.mu
// held.
func (l *Limiter) alignSeen(name string, s *subject, now time.Time) {
	for _, p := range l.seen {
		t, ok := p.totals[name]
		if !ok || p.stale {
			continue
		}
		mins := now.Sub(p.at).Minutes()
		if s.rpm != nil && t.RPMUsed > 0 {
			s.rpm.atLeast(t.RPMUsed-s.rpm.limit*mins, now)
		}
		if s.tpm != nil && t.TPMUsed > 0 {
			s.tpm.atLeast(t.TPMUsed-s.tpm.limit*mins, now)
		}
	}
}

func (l *Limiter) sized(b *bucket, limit int64, now time.Time) *bucket {
	if limit <= 0 {
		return nil
	}
	want := float64(limit) * l.share
	if b == nil {
		return newBucket(want, now)
	}
	b.resize(want, now)
	return b
}

// InFlight returns the requests in flight of key id on this replica.
func (l *Limiter) InFlight(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.subjects["key:"+id]; s != nil {
		return s.inflight
	}
	return 0
}

// Exchange shares what each replica took of the rate limits, so that a
// key's RPM and TPM hold for the fleet and not per replica. Swap
// publishes this replica's totals and returns the others', by replica.
// Totals only grow while a replica runs.
type Exchange interface {
	Swap(ctx context.Context, mine map[string]Taken) (others map[string]map[string]Taken, err error)
}

// Sync runs one exchange: it debits this replica's buckets with what the
// others took since the last one. When the exchange fails, each limit is
// cut to this replica's share of it (1/N of the N replicas last seen)
// until it answers again, so the fleet as a whole still keeps to it.
//
// Only what a peer takes between two listings is debited, never its past:
//   - a peer met when this replica has no account of the fleet yet (its
//     first exchange, or the first after a failed one), and one last seen
//     before a failed exchange, is a baseline: what it took before was
//     already held to the limit (by the exchange, or by the 1/N share
//     while the exchange was down);
//   - a peer met while the exchange works is new to the fleet (a rollout
//     or a scale-up gives it a new name) and all it took is recent: it is
//     debited, at most one bucket's worth;
//   - a peer missing from a listing (a Redis restart empties the store
//     until each replica writes again) is remembered for peerMemory, and
//     debited only what it took since when it comes back;
//   - a peer whose count of a subject went down (it restarted under the
//     same name) starts a new baseline for that subject.
//
// Debits from peers have a floor (see bucket.debit), so whatever they say
// a bucket owes at most one bucket's worth more than it holds.
func (l *Limiter) Sync(ctx context.Context, ex Exchange) error {
	now := l.clock.Now()
	mine := l.published(now)
	others, err := ex.Swap(ctx, mine)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.share = 1 / float64(max(l.replicas, 1))
		l.synced = false
		for _, p := range l.seen {
			p.stale = true // it went on under its share meanwhile
		}
		return err
	}
	l.replicas = 1 + len(others)
	l.share = 1
	l.syncs++
	for rep, totals := range others {
		p := l.seen[rep]
		switch {
		case p == nil && l.synced:
			l.debitPeer(peerState{}, totals, now, true)
		case p != nil && !p.stale:
			l.debitPeer(*p, totals, now, false)
		}
		l.seen[rep] = &peerState{totals: totals, at: now}
	}
	l.align(others, now)
	for rep, p := range l.seen {
		if _, ok := others[rep]; !ok && now.Sub(p.at) > peerMemory {
			delete(l.seen, rep)
		}
	}
	l.synced = true
	return nil
}

// peerState is what a peer had taken when last listed.
type peerState struct {
	totals map[string]Taken
	at     time.Time // when it was last listed
	// stale says an exchange failed since: what the peer took meanwhile
	// was held to its share, and is not debited again.
	stale bool
}

// peerMemory is how long a peer missing from the listings is remembered.
// One that comes back later is met anew: what it took over a minute ago
// is outside every per-minute limit anyway.
const peerMemory = time.Minute

// published returns this replica's totals to publish, forgetting idle
// subjects.
func (l *Limiter) published(now time.Time) map[string]Taken {
	l.mu.Lock()
	defer l.mu.Unlock()
	mine := make(map[string]Taken, len(l.subjects))
	for name, s := range l.subjects {
		if s.inflight == 0 && now.Sub(s.used) > idleSubject {
			delete(l.subjects, name) // its totals restart from zero, which the others read as a restart
			continue
		}
		t := s.taken
		t.RPM, t.TPM = s.rpmLimit, s.tpmLimit
		if s.rpm != nil {
			t.RPMUsed = max(s.rpm.used(now), 0)
		}
		if s.tpm != nil {
			t.TPMUsed = max(s.tpm.used(now), 0)
		}
		mine[name] = t
	}
	return mine
}

// align starts the buckets of the subjects met since the last exchange
// from the most any peer has used of them: a replica that joins a fleet,
// or meets a key busy elsewhere, does not add a full bucket to what the
// fleet admits. Called with l.mu held.
func (l *Limiter) align(others map[string]map[string]Taken, now time.Time) {
	for name, s := range l.subjects {
		if s.aligned {
			continue
		}
		s.aligned = true
		var ru, tu float64
		for _, totals := range others {
			if t, ok := totals[name]; ok {
				ru, tu = max(ru, t.RPMUsed), max(tu, t.TPMUsed)
			}
		}
		if s.rpm != nil && ru > 0 {
			s.rpm.atLeast(ru, now)
		}
		if s.tpm != nil && tu > 0 {
			s.tpm.atLeast(tu, now)
		}
	}
}

// debitPeer debits the buckets with what a peer took from prev to totals;
// fresh says the peer is new to the fleet, so all it took is recent.
// Called with l.mu held.
func (l *Limiter) debitPeer(prev peerState, totals map[string]Taken, now time.Time, fresh bool) {
	for name, t := range totals {
		last, known := prev.totals[name]
		d := Taken{Requests: t.Requests - last.Requests, Tokens: t.Tokens - last.Tokens}
		if t.Requests < last.Requests {
			continue // the peer restarted its count: a new baseline
		}
		if d.Requests <= 0 && d.Tokens == 0 {
			continue
		}
		s := l.subjects[name]
		if s == nil {
			if t.RPM <= 0 && t.TPM <= 0 {
				continue
			}
			// Met on another replica first: keep its account from
			// now, with that replica's limits until a request here
			// gives them.
			s = l.subject(name, Limits{RPM: t.RPM, TPM: t.TPM}, now)
		}
		if s.rpm != nil && d.Requests > 0 {
			n := d.Requests
			if fresh && !known {
				n = min(n, s.rpm.cap)
			}
			s.rpm.debit(n, now)
		}
		if s.tpm != nil && d.Tokens != 0 {
			n := d.Tokens
			if fresh && !known {
				n = min(n, s.tpm.cap)
			}
			s.tpm.debit(n, now)
		}
	}
}

// idleSubject is how long a subject with nothing in flight is kept.
const idleSubject = 10 * time.Minute

// BudgetPeriod returns the start and end of the period of lim's budget
// that holds now (see ledger.PeriodStart: every replica computes the
// same from the time alone), and false when lim has no budget or its
// period is not one.
func BudgetPeriod(lim Limits, now time.Time) (start, end time.Time, ok bool) {
	if lim.Budget <= 0 {
		return time.Time{}, time.Time{}, false
	}
	start, err := ledger.PeriodStart(lim.BudgetPeriod, now)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	return start, ledger.PeriodEnd(lim.BudgetPeriod, start), true
}

func (p *Principal) display() string {
	if p.Name != "" && p.Name != p.ID {
		return fmt.Sprintf("%s (%s)", p.ID, p.Name)
	}
	return p.ID
}

func formatCount(f float64) string {
	switch {
	case f >= 1e6 && math.Mod(f, 1e5) == 0:
		return fmt.Sprintf("%gm", f/1e6)
	case f >= 1e3 && math.Mod(f, 100) == 0:
		return fmt.Sprintf("%gk", f/1e3)
	}
	return fmt.Sprintf("%.0f", f)
}

func formatMoney(f float64) string { return fmt.Sprintf("%g", f) }
