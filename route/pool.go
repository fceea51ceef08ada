package route

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/translate"
)

// Response headers the engine sets on every response it returns.
const (
	HeaderBackend  = "X-Switchover-Backend"
	HeaderRegion   = "X-Switchover-Region"
	HeaderFailover = "X-Switchover-Failover"
	HeaderAttempts = "X-Switchover-Attempts"
	// HeaderFallback names the pool a request fell back from, on an
	// answer from its fallback pool (see Pool.Fallback); absent otherwise.
	HeaderFallback = "X-Switchover-Fallback"
)

// Member is a backend's place in a pool.
type Member struct {
	Backend *Backend
	// Priority is the member's tier: 1 is tried first, and a higher number
	// gets traffic only while every member of every lower-numbered tier is
	// unavailable or held back (a backend in its breaker's slow start
	// takes only its share of calls; one under a health check none). Values
	// below 1 count as 1.
	Priority int
	// Weight is the member's share of its tier's traffic. Values below 1
	// count as 1.
	Weight int
	// Deployment is the model or deployment name this backend is asked
	// for: the body's model, or for an Azure deployment path the
	// deployment in the URL. Empty means the name the client used. (Not
	// Backend.Model, the model version the backend answered with.)
	Deployment string
	// MaxTokens is the max_tokens sent to a backend that requires one
	// (Anthropic) when the request sets none. Zero means 4096.
	MaxTokens int

	ops atomic.Pointer[opMarks] // operations found not served (see operation.go); nil when none
}

func (m *Member) priority() int { return max(m.Priority, 1) }
func (m *Member) weight() int   { return max(m.Weight, 1) }

// Pool routes calls across its members: it selects one, retries on
// another when an attempt fails in a way another backend may not, and
// benches failing backends through their breakers. A Pool is an
// http.RoundTripper, so a Go program can use the same failover without the
// gateway. Its fields must not change once it is in use; it is safe for
// concurrent use.
type Pool struct {
	// Name identifies the pool in reports, metrics and errors.
	Name string
	// Members are the backends of the pool. A backend should appear once.
	Members []*Member
	// Attempts bounds the upstream calls for one request, the first
	// included. Each backend is tried at most once per request, so a pool
	// of two makes at most two attempts whatever this says. Default 3.
	Attempts int
	// RetryOn lists the statuses that are retried on another backend. Nil
	// means 429, 500, 502, 503 and 504. 400, 413 and 422 are never retried
	// even if listed: they are the caller's own errors, and another backend
	// would give the same answer and bill again. 401, 403 and 404 are always
	// retried: the caller's credentials never go upstream and the gateway
	// chose the deployment, so they say the backend is misconfigured, or,
	// for an operation other than chat, that the member does not serve it
	// (see ReasonOperationUnsupported; so does a 405, and Azure's 400
	// OperationNotSupported, which are retried too).
	// Connection errors and timeouts are always retried.
	RetryOn *StatusSet
	// Selector picks each attempt's member. Nil means smooth weighted
	// round-robin (SmoothWeighted) with state of the pool's own.
	Selector   Selector
	smooth     SmoothWeighted // the nil Selector's state
	tiers      tierIndex      // Members by priority (select.go)
	translated translateCache // Translates' answers (decodecost.go)
	// Observer receives attempt, failover and stream-error events. Nil
	// means none.
	Observer Observer
	// Tokens counts the tokens of answers that report no usage (chat,
	// completions, Responses and Messages): the request's prompt and the
	// text answered, as Usage marked Estimated. It runs only when an
	// answer ends without usage; a stream's text is kept (up to 1 MiB)
	// until its usage is seen. Nil means such answers stay without usage
	// (Usage.Known false).
	Tokens TokenCounter
	// Clock is read for selection and Retry-After arithmetic, and runs
	// every attempt's timers (first byte, slow call, whole attempt, idle).
	// Nil means the wall clock. Breakers have their own.
	Clock clock.Clock
	// MaxBodyBytes bounds the request body that RoundTrip reads. Default
	// 32 MiB. (The gateway enforces its own limit before Do.)
	MaxBodyBytes int64
	// TryDuration bounds retries in time (Caddy's try_duration): no retry
	// starts once the request has spent this long, and a retry's wait for
	// its first byte ends with it. The first attempt always gets its full
	// first-byte timeout, and an answer already flowing is never cut. Zero
	// means no bound: attempts times the first-byte timeout in the worst
	// case.
	TryDuration time.Duration
	// MaxQueue bounds the patient requests (Request.MaxWait) the pool
	// holds waiting for quota; past it, a request gets its 429 at once.
	// Zero means DefaultMaxQueue.
	MaxQueue int
	// MaxWait is how long a request that does not say (Request.MaxWait)
	// waits for quota. Zero means it does not wait: 429 at once.
	MaxWait time.Duration
	// MaxWaitLimit caps any request's wait for quota. Zero means
	// DefaultMaxWaitLimit.
	MaxWaitLimit time.Duration
	queue        waitQueue
	// ranOut is when (unix nanoseconds on the pool's clock) a request
	// last found no member to retry on after a failure it could have
	// retried (Short); zero when none has since a request was answered.
	ranOut atomic.Int64
	// shortTold is when EventShort was last told (unix nanoseconds).
	shortTold atomic.Int64
	// RetryBudget bounds the pool's retries to a share of its requests
	// (see RetryBudget): each request's first attempt deposits, each
	// retry withdraws, and a retry the budget refuses is not made: the
	// request is answered with its last failure at once
	// (Report.RetryBudgetSpent, EventRetryBudget). The first attempt is
	// never refused, nor is a failover off a backend that is gone (its
	// breaker open, drained, unreachable or unresponsive) onto a member
	// whose breaker is closed: that is not a storm. Nil means no budget:
	// Attempts alone bounds retries, so a pool whose members all fail
	// makes Attempts calls per request.
	RetryBudget *RetryBudget
	// Fallback is the pool a request goes to when this one cannot answer
	// it: every member failed, was benched, drained or skipped, or a
	// retry was refused by the RetryBudget. Its own members, model names
	// and rules apply. Requests for state on one backend (Request.Owner)
	// never fall back. Nil means none. See Do for chains.
	Fallback *Pool
	// ContextFallback is the pool a request goes to when a member refused
	// it for exceeding the model's context window (a 400 such as OpenAI's
	// context_length_exceeded or Anthropic's "prompt is too long"):
	// typically a pool of larger-context models. Never for a
	// content-filter refusal or any other 4xx. Nil means none: the client
	// gets the 400.
	ContextFallback *Pool
	// Hedge, if set, hedges requests whose first attempt is slow to its
	// first byte: a second attempt goes to the next choice, the first to
	// answer is passed on and the other cancelled (see Hedge). Nil means
	// no hedging.
	Hedge *Hedge
}

// DefaultAttempts is the attempts bound of a Pool that sets none.
const DefaultAttempts = 3

var defaultRetryOn = NewStatusSet(429, 500, 502, 503, 504)

// neverRetry are the caller's own errors.
var neverRetry = NewStatusSet(400, 413, 422)

func (p *Pool) attempts() int {
	if p.Attempts <= 0 {
		return DefaultAttempts
	}
	return p.Attempts
}

func (p *Pool) retries(status int) bool {
	if neverRetry.Has(status) {
		return false
	}
	if p.RetryOn == nil {
		return defaultRetryOn.Has(status)
	}
	return p.RetryOn.Has(status)
}

func (p *Pool) now() time.Time { return p.clock().Now() }

func (p *Pool) clock() clock.Clock { return clock.Or(p.Clock) }

func (p *Pool) observe(e Event) {
	if p.Observer != nil {
		e.Pool = p.Name
		p.Observer.Observe(e)
	}
}

// observeCtx is observe for events of a request, carrying its context.
func (p *Pool) observeCtx(ctx context.Context, e Event) {
	e.Ctx = ctx
	p.observe(e)
}

// prepareAttempt allocates the attempt on m, which next selected with
// done and release, and prepares its request. A member that cannot honour
// r is skipped and noted in rep; a request that cannot be made at all is
// err. Either way at is nil, m counts as tried and its admission and quota
// are given back.
func (p *Pool) prepareAttempt(r *Request, rep *Report, tried *memberSet, m *Member, done breaker.Done, release func()) (*attempt, error) {
	at := new(attempt) // one allocation for the attempt's state and request
	at.quotaRelease, at.m = release, m
	if err := prepareInto(r, m, &at.o); err != nil {
		done(breaker.Outcome{Result: breaker.Ignore})
		at.releaseQuota()
		p.markTried(tried, m.Backend)
		var ue *translate.UnsupportedError
		if errors.As(err, &ue) {
			rep.Skipped = append(rep.Skipped, Skip{Backend: m.Backend.Name, Reason: skipReason(m.Backend.Provider, ue)})
			return nil, nil
		}
		return nil, err
	}
	return at, nil
}

// noteAttempt adds attempt a, on b, to the report and tells the observer.
func (p *Pool) noteAttempt(ctx context.Context, rep *Report, b *Backend, a Attempt) {
	if rep.Attempts == nil {
		rep.Attempts = rep.first[:0] // still nil when no attempt is made
	}
	rep.Attempts = append(rep.Attempts, a)
	p.observeCtx(ctx, Event{Kind: EventAttempt, Backend: b, Attempt: &rep.Attempts[len(rep.Attempts)-1]})
}

// Member returns the pool's member on the backend named backend, nil when
// there is none.
func (p *Pool) Member(backend string) *Member {
	for _, m := range p.Members {
		if m.Backend.Name == backend {
			return m
		}
	}
	return nil
}

// AnyUsable reports whether a member of the pool would take a call at now
// (Backend.Usable), leaving its fallback pools aside.
func (p *Pool) AnyUsable(now time.Time) bool {
	for _, m := range p.Members {
		if m.Backend.Usable(now) {
			return true
		}
	}
	return false
}

// shortFor is how long a request that found no member to retry on keeps
// the pool Short.
const shortFor = 5 * time.Second

// shortTellEvery bounds how often one pool tells EventShort.
const shortTellEvery = time.Second

// ranOutOfMembers notes that a request found no member to retry on after
// a retryable failure (retried; the pool is then Short for shortFor), or
// none at all that would take it, and tells EventShort when the pool is
// short.
func (p *Pool) ranOutOfMembers(now time.Time, retried bool) {
	if retried {
		p.ranOut.Store(now.UnixNano())
	}
	if retried || p.Short(now) {
		p.tellShort(now)
	}
}

// tellShort tells EventShort, unless it was told within shortTellEvery.
func (p *Pool) tellShort(now time.Time) {
	last := p.shortTold.Load()
	if last != 0 && now.Sub(time.Unix(0, last)) < shortTellEvery {
		return
	}
	if p.shortTold.CompareAndSwap(last, now.UnixNano()) {
		p.observe(Event{Kind: EventShort})
	}
}

// Short reports whether the pool is short of members at now, so that its
// benched members are wanted back as soon as they answer: no member would
// take a call (Backend.Usable), or each that would is under a health check
// (suspected of having stopped answering), or within shortFor a request's
// retryable failure found no other member to retry on (and was relayed or
// sent to a fallback) and no request has been answered since. Its fallback
// pools are left aside. The gateway's recovery probes read it (they come
// every second while a pool of the backend is short, and one that passes
// ends the trip).
func (p *Pool) Short(now time.Time) bool {
	if t := p.ranOut.Load(); t != 0 && now.Sub(time.Unix(0, t)) < shortFor {
		return true
	}
	for _, m := range p.Members {
		if m.Backend.Usable(now) && !m.Backend.check.checking() {
			return false
		}
	}
	return true
}

// OwnerUnavailableError is a request for state that lives on one backend
// (Request.Owner) when that backend cannot take it. No other backend is
// tried: none has the state, and one would answer without it.
type OwnerUnavailableError struct {
	Owner, Pool string
	// Why says what keeps the owner from the call.
	Why string
	// RetryAfter is how long until the owner may take calls again, or the
	// gateway will next know (its recovery probe): at least a second,
	// unless the owner is drained or not a member of the pool (zero).
	RetryAfter time.Duration
}

func (e *OwnerUnavailableError) Error() string {
	return "the backend " + e.Owner + " holds the state this request refers to, and " + e.Why
}

// ownerBenched describes why the owner's member took no attempt, and when
// to ask again (readyAt): unless it is drained, at least a second away.
func (p *Pool) ownerBenched(owner string) error {
	m := p.Member(owner)
	e := &OwnerUnavailableError{Owner: owner, Pool: p.Name, Why: "it is not taking calls"}
	b := m.Backend
	if b.Drained() {
		e.Why = "it is drained by an operator"
		return e
	}
	now := p.now()
	if b.Breaker != nil {
		s := b.Breaker.Snapshot()
		if s.State == breaker.Open {
			e.Why = "its circuit breaker is open"
			if s.Throttled {
				e.Why = "it is rate limited"
			}
		}
		if _, ok := probedAt(b, s, now); ok {
			e.Why += fmt.Sprintf("; a health probe checks it every %s", b.ProbeInterval)
		}
	}
	e.RetryAfter = clientWait(p.readyAt(m, &Report{}, now).Sub(now))
	return e
}

// memberSet marks members by index: the first 256 in place, so that a
// request to a pool of up to 256 members allocates nothing for it.
type memberSet struct {
	small [4]uint64
	big   []bool
}

func (s *memberSet) has(i int) bool {
	if i < 256 {
		return s.small[i>>6]&(1<<(i&63)) != 0
	}
	return i-256 < len(s.big) && s.big[i-256]
}

// empty reports whether no member is marked.
func (s *memberSet) empty() bool {
	return s.small == [4]uint64{} && !slices.Contains(s.big, true)
}

func (s *memberSet) add(i int) {
	if i < 256 {
		s.small[i>>6] |= 1 << (i & 63)
		return
	}
	for len(s.big) <= i-256 {
		s.big = append(s.big, false)
	}
	s.big[i-256] = true
}

func (p *Pool) markTried(s *memberSet, b *Backend) {
	for i, m := range p.Members {
		if m.Backend == b {
			s.add(i)
		}
	}
}

func noopDone(breaker.Outcome) {}

// next selects a member that has not been tried, whose breaker lets the
// call through and whose quota (if tracked) says the call fits, and
// returns it with the breaker's done function and the quota's release
// (nil when untracked). Members passed over for quota are noted in rep.
// It returns nil when no member can take the call.
func (p *Pool) next(r *Request, rep *Report, tried *memberSet) (*Member, breaker.Done, func()) {
	now := p.now()
	m, done, release, sitOut := p.nextWhole(now, r, rep, tried)
	if m != nil {
		return m, done, release
	}
	var buf [8]*Member
	dst := buf[:0]
	if len(p.Members) > len(buf) {
		big := candidateBufs.Get().(*[]*Member)
		if cap(*big) < len(p.Members) {
			*big = make([]*Member, 0, len(p.Members)) // never grown by candidates
		}
		defer putCandidates(big)
		dst = (*big)[:0]
	}
	cands, more := p.candidates(dst, now, r, rep, tried, 0, sitOut)
	switch {
	case len(cands) > 0:
		for {
			m, done, release, exhausted := p.admit(now, r, rep, cands)
			if m != nil || !exhausted || more < 0 {
				return m, done, release
			}
			// Every candidate of the tier refused since it was gathered:
			// the next tiers'.
			if cands, more = p.candidates(dst[:0], now, r, rep, tried, more, sitOut); len(cands) == 0 {
				return nil, nil, nil
			}
		}
	case r != nil && r.Owner != "":
		return nil, nil, nil
	}
	return p.admitEarly(now, r, rep, tried)
}

// nextWhole is next's short way for a request's first pick in a pool whose
// best tier has more than wholeTierMin members and which has no Selector
// of its own: the pick is made from the whole tier (see SmoothWeighted)
// and only the pick is asked whether it can take the call (supported,
// usable, its turn if in a slow start, quota, no health check running)
// and admitted. m is nil when it cannot: next then walks the members as
// usual, and the pick's turn in the whole tier's sequence goes to the
// member the walk picks. A pick in its slow start takes the call when it
// is its turn (rampTurns), as the walk would let it; when it is not,
// sitOut is its index in Members (else -1), and the walk holds it back
// without asking its turns again. Reading every member's state on each
// request costs more than the rest of the selection once a tier is large
// (each backend's breaker, quota and marks are apart in memory and cold).
func (p *Pool) nextWhole(now time.Time, r *Request, rep *Report, tried *memberSet) (m *Member, done breaker.Done, release func(), sitOut int) {
	if p.Selector != nil || !tried.empty() || r == nil || r.Owner != "" {
		return nil, nil, nil, -1
	}
	tiers := p.tiers.of(p.Members)
	if len(tiers) == 0 || len(tiers[0]) <= wholeTierMin {
		return nil, nil, nil, -1
	}
	if rep != nil {
		rep.op = r.Op
	}
	i := p.smooth.pickWhole(p.Members, tiers[0])
	m, done, release, notItsTurn := p.admitWhole(now, r, p.Members[i])
	if notItsTurn {
		return nil, nil, nil, i
	}
	return m, done, release, -1
}

// admitWhole admits m, nextWhole's pick, if it can take r at now without
// being held back, as admit would: nil, nothing held, otherwise;
// notItsTurn when m is in its slow start and this call is not its turn.
func (p *Pool) admitWhole(now time.Time, r *Request, m *Member) (_ *Member, _ breaker.Done, _ func(), notItsTurn bool) {
	if m.skipsUnsupported(r, now) || m.Backend.check.checking() {
		return nil, nil, nil, false
	}
	usable, share := m.Backend.usable(now)
	if !usable {
		return nil, nil, nil, false
	}
	if share < 1 {
		// A turn is taken only if the call fits its quota, as the walk
		// takes one only of a member that could take the call.
		if q := m.Backend.Quota; q != nil {
			if fits, _ := q.Fits(now, r); !fits {
				return nil, nil, nil, false
			}
		}
		if !m.Backend.turns.take(share) {
			return nil, nil, nil, true
		}
	}
	var release func()
	if q := m.Backend.Quota; q != nil {
		var ok bool
		if release, ok, _ = q.Admit(now, r); !ok {
			return nil, nil, nil, false
		}
	}
	if done, ok := allowBreaker(m, release); ok {
		return m, done, release, false
	}
	return nil, nil, nil, false
}

// allowBreaker asks m's breaker to let a call through: its done, or ok
// false, with release (the call's quota reservation, if any) given back,
// when another request took its half-open probe.
func allowBreaker(m *Member, release func()) (breaker.Done, bool) {
	if m.Backend.Breaker == nil {
		return noopDone, true
	}
	if done, ok := m.Backend.Breaker.Allow(); ok {
		return done, true
	}
	if release != nil {
		release()
	}
	return nil, false
}

// candidates appends to dst, and returns, the members that may take r at
// now: not tried, usable (not drained, breaker ready), the owner alone
// for a request on its state, and with quota for the call. A member whose
// quota says the call would not fit is noted in rep and counts as tried.
// A member held back (slow start, health check: see heldBack) is left out
// unless no other member is a candidate.
//
// The members are walked tier by tier, best first, from tier index from,
// and the walk stops at the first tier with a candidate that is not held
// back: every strategy chooses in the best tier present, so a request
// costs the same whatever the number of members of the tiers below. more
// is the index of the next tier, -1 when every tier was walked. The
// member at index sitOut in Members (-1: none) is held back without its
// turns asked: nextWhole found it was not its turn.
func (p *Pool) candidates(dst []*Member, now time.Time, r *Request, rep *Report, tried *memberSet, from, sitOut int) (cands []*Member, more int) {
	owner := ""
	if r != nil {
		owner = r.Owner
	}
	if r != nil && rep != nil {
		rep.op = r.Op
	}
	start := len(dst)
	var hbuf [4]*Member
	held := hbuf[:0]
	tiers := p.tiers.of(p.Members)
	more = -1
	for t := from; t < len(tiers); t++ {
		if len(dst) > start {
			more = t
			break
		}
		dst, held = p.tierCandidates(dst, held, tiers[t], now, r, rep, tried, owner, sitOut)
	}
	if len(dst) == start {
		dst = append(dst, held...)
	}
	return dst, more
}

// tierCandidates is candidates for the members of one tier (their
// indices in Members), appended to dst, or to held for those held back
// (the member at index sitOut among them: see nextWhole).
func (p *Pool) tierCandidates(dst, held []*Member, tier []int, now time.Time, r *Request, rep *Report, tried *memberSet, owner string, sitOut int) ([]*Member, []*Member) {
	for _, i := range tier {
		m := p.Members[i]
		if !tried.has(i) && m.skipsUnsupported(r, now) {
			tried.add(i) // not this request's, even as an early probe
			continue
		}
		if tried.has(i) || owner != "" && m.Backend.Name != owner {
			continue
		}
		ok, share := m.Backend.usable(now)
		if !ok {
			continue
		}
		if q := m.Backend.Quota; q != nil && r != nil {
			if ok, until := q.Fits(now, r); !ok {
				p.holdForQuota(rep, m, until)
				tried.add(i) // not this request's, whatever happens next
				continue
			}
		}
		if i == sitOut || m.Backend.heldBack(share) {
			held = append(held, m)
			continue
		}
		dst = append(dst, m)
	}
	return dst, held
}

// admit picks among cands (Pool.Selector) and admits the pick: its quota
// reserves the call and its breaker lets it through. A pick that either
// refuses (another request took the last of its quota, or its half-open
// probe, since cands were gathered) is dropped and the pick made again.
//
// exhausted reports that no member was admitted because every candidate
// refused (not because the selector picked none).
func (p *Pool) admit(now time.Time, r *Request, rep *Report, cands []*Member) (*Member, breaker.Done, func(), bool) {
	for len(cands) > 0 {
		i := p.pick(r, cands)
		if i < 0 || i >= len(cands) {
			return nil, nil, nil, false
		}
		m := cands[i]
		var release func()
		if q := m.Backend.Quota; q != nil && r != nil {
			var ok bool
			var until time.Time
			if release, ok, until = q.Admit(now, r); !ok {
				// Another request took the last of it since Fits.
				p.holdForQuota(rep, m, until)
				cands = append(cands[:i], cands[i+1:]...)
				continue
			}
		}
		if done, ok := allowBreaker(m, release); ok {
			return m, done, release, false
		}
		// Another request took the half-open probe between the snapshot
		// and Allow: drop it and choose again.
		cands = append(cands[:i], cands[i+1:]...)
	}
	return nil, nil, nil, true
}

// admitEarly is the selection when no member is a candidate: a benched
// member whose Retry-After has passed is let through as its breaker's
// probe (early), if its quota takes the call.
func (p *Pool) admitEarly(now time.Time, r *Request, rep *Report, tried *memberSet) (*Member, breaker.Done, func()) {
	m, done := p.early(now, tried)
	if m == nil {
		return nil, nil, nil
	}
	if q := m.Backend.Quota; q != nil && r != nil {
		release, ok, until := q.Admit(now, r)
		if !ok {
			done(breaker.Outcome{Result: breaker.Ignore})
			p.holdForQuota(rep, m, until)
			return nil, nil, nil
		}
		return m, done, release
	}
	return m, done, nil
}

// holdForQuota notes that m was passed over for r because its quota will
// not take the call until until, in rep and for the observer.
func (p *Pool) holdForQuota(rep *Report, m *Member, until time.Time) {
	if rep == nil {
		return
	}
	for _, h := range rep.OutOfQuota {
		if h.Backend == m.Backend.Name {
			return
		}
	}
	rep.OutOfQuota = append(rep.OutOfQuota, QuotaHold{Backend: m.Backend.Name, Until: until})
	p.observe(Event{Kind: EventQuotaHeld, Backend: m.Backend})
}

// pick asks the pool's selector for the index in cands of the member to
// try. The default selector is called on its own type, which keeps no
// reference to cands, so that next's candidates stay on its stack; a
// Selector of the caller's gets a copy of them, copied back afterwards so
// that an order it leaves them in counts as it did before.
func (p *Pool) pick(r *Request, cands []*Member) int {
	if p.Selector == nil {
		return p.smooth.Select(r, cands)
	}
	c := slices.Clone(cands)
	i := p.selector().Select(r, c)
	copy(cands, c)
	return i
}

// early is the selection when no member can take the call: every one is
// tried, drained or benched. A benched member whose backend's own
// Retry-After has already passed is let through as its breaker's probe,
// the one whose Retry-After ended first, so that a fixed trip never keeps
// a pool refusing everything once a backend said it would take calls
// again; failing that, one benched for a brownout (a partial trip: it
// still answered most calls), the one whose trip ends first (Envoy's
// panic threshold and max ejection percent: the bench must not empty the
// pool of members that answer).
func (p *Pool) early(now time.Time, tried *memberSet) (*Member, breaker.Done) {
	var best *Member
	var bestTier int
	var bestAt time.Time
	for i, m := range p.Members {
		b := m.Backend
		if tried.has(i) || b.Drained() || b.Breaker == nil {
			continue
		}
		tier, at, ok := earlyRank(b.Breaker.Snapshot(), now)
		if !ok {
			continue
		}
		if best == nil || tier < bestTier || tier == bestTier && at.Before(bestAt) {
			best, bestTier, bestAt = m, tier, at
		}
	}
	if best == nil {
		return nil, nil
	}
	if done, ok := best.Backend.Breaker.AllowEarly(); ok {
		return best, done
	}
	return nil, nil
}

// served fills the report and headers for the member whose response is
// returned.
func (p *Pool) served(rep *Report, m *Member, resp *http.Response) {
	rep.Served = m
	if p.ranOut.Load() != 0 { // a read, not a write, on the hot path
		p.ranOut.Store(0)
	}
	if judged := rep.judged(); len(judged) > 1 && judged[0].Backend != m.Backend.Name {
		rep.Failover = true
		rep.FailoverFrom = judged[0].Backend
		rep.FailoverReason = judged[0].Reason
	} else if top := p.topServing(rep.op); top != nil && m.priority() > top.priority() {
		rep.Failover = true
		rep.FailoverFrom = top.Backend.Name
		rep.FailoverReason = passedOver(rep, top.Backend)
	}
	if rep.Failover {
		p.observe(Event{Kind: EventFailover, Backend: m.Backend, From: rep.FailoverFrom, To: m.Backend.Name, Reason: rep.FailoverReason})
	}
	hb := m.Backend.relayHeaderInPlace(resp.Header, rep.headerVals[:0])
	hb.set(HeaderBackend, m.Backend.Name)
	if m.Backend.Region != "" {
		hb.set(HeaderRegion, m.Backend.Region)
	} else {
		hb.h.Del(HeaderRegion)
	}
	hb.set(HeaderFailover, boolString(rep.Failover))
	hb.set(HeaderAttempts, itoa(len(rep.Attempts)))
	if rep.Hedge != "" {
		hb.set(HeaderHedge, string(rep.Hedge))
	}
	resp.Header = hb.h
}

// passedOver is why b, the pool's top member, took no attempt for a
// request a lower tier served: an operator drained it, it cannot honour
// the request, its quota would not take the call, or else its breaker
// kept the call out (open, or its half-open probe taken).
func passedOver(rep *Report, b *Backend) Reason {
	switch {
	case b.Drained():
		return ReasonDrained
	case slices.ContainsFunc(rep.Skipped, func(s Skip) bool { return s.Backend == b.Name }):
		return ReasonUnsupported
	case slices.ContainsFunc(rep.OutOfQuota, func(h QuotaHold) bool { return h.Backend == b.Name }):
		return ReasonQuotaHeld
	}
	return ReasonUnavailable
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// modelCheckEvery is how often a backend's responses are read for the
// model version they name: versions change rarely, and reading every
// response would cost every request.
const modelCheckEvery = time.Second

// checkModel reports whether this response of b should be read for its
// model version: the first one, then at most one per modelCheckEvery.
func (p *Pool) checkModel(b *Backend) bool {
	now := p.now().UnixNano()
	last := b.modelChecked.Load()
	if last != 0 && now-last < int64(modelCheckEvery) {
		return false
	}
	return b.modelChecked.CompareAndSwap(last, now)
}

// noteModel records the model version a backend answered with, and
// reports a change.
func (p *Pool) noteModel(b *Backend, model string) {
	if model == "" {
		return
	}
	if old := b.model.Load(); old != nil && *old == model {
		return
	}
	b.model.Store(&model)
	p.observe(Event{Kind: EventModel, Backend: b, Model: model})
}
