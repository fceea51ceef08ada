package route

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/breaker"
)

// Defaults of a RetryBudget's settings.
const (
	// DefaultRetryRatio is the retries allowed per request over the window.
	DefaultRetryRatio = 0.2
	// DefaultMinRetriesPerSecond is the floor of retries allowed per
	// second of the window whatever the traffic.
	DefaultMinRetriesPerSecond = 3.0
	// DefaultRetryWindow is the window over which requests and retries
	// are counted.
	DefaultRetryWindow = 10 * time.Second
)

// retryBuckets is how many fixed slots a RetryBudget's window is cut
// into: the window slides by a tenth of itself at a time.
const retryBuckets = 10

// retryUnit is the budget's fixed point: a retry costs retryUnit, a
// request deposits Ratio×retryUnit, so that the arithmetic is exact on
// integers (Ratio is honoured to a thousandth).
const retryUnit = 1000

// maxRetryRatio bounds Ratio, so that the balance cannot overflow.
const maxRetryRatio = 1000

// RetryBudget bounds the retries of a pool to a share of its requests over
// a sliding window, plus a small floor, after Finagle's RetryBudget (a TTL
// window, percentCanRetry, minRetriesPerSec) and Envoy's retry budget
// (budget_percent and a minimum): when every backend fails, the gateway
// adds at most that share of load instead of multiplying it by the pool's
// Attempts.
//
// Each request's first attempt deposits Ratio of a retry (Request); each
// retry, an attempt after the first, withdraws one whole retry (TryRetry)
// or is refused. Over any Window, then, retries number at most
// Ratio × requests + MinPerSecond × Window (seconds). The floor lets a
// quiet pool still fail over; it is spent in a burst as readily as
// spread out.
//
// The window is Window/10 wide slots, each with its counts of requests
// and retries: a call is O(1), no goroutine runs, and a slot's counts are
// forgotten when the window has slid past it, so a deposit or withdrawal
// counts for between nine tenths of Window and all of it. Time is the
// caller's now (the pool passes its Clock's); a now earlier than one seen
// before counts in the latest slot.
//
// The zero value is a budget with the defaults (0.2, 3 per second, 10s);
// a nil *RetryBudget is no budget at all: Request does nothing and
// TryRetry always allows. The settings must not change once the budget
// is in use: they are read at its first call. It is safe for concurrent
// use; a pool's requests share it, and one budget may be shared by pools
// to bound them together.
type RetryBudget struct {
	// Ratio is the retries allowed per request over Window: 0.2 lets 20
	// retries for every 100 requests. Zero means DefaultRetryRatio (0.2);
	// negative means none (only the floor); above 1000 counts as 1000.
	// Honoured to a thousandth. The higher it is, the more load a pool
	// whose backends all fail adds on top of its traffic: at most a share
	// Ratio more upstream calls.
	Ratio float64
	// MinPerSecond is the retries always allowed per second of Window,
	// whatever the traffic: a pool with few requests can still fail over.
	// Zero means DefaultMinRetriesPerSecond (3); negative means no floor.
	// The floor is per window: 3 a second over 10s is 30 retries that
	// may be taken at once.
	MinPerSecond float64
	// Window is how long a request's deposit and a retry's withdrawal
	// count. Zero or negative means DefaultRetryWindow (10s). Shorter
	// windows follow traffic faster and forgive a burst of retries
	// sooner.
	Window time.Duration

	mu      sync.Mutex
	started bool
	origin  time.Time     // the first call's now: slot 0 starts there
	width   time.Duration // a slot's width: Window/10
	deposit int64         // units a request deposits
	reserve int64         // the floor, in units per window
	slot    int64         // the latest slot seen, counted from origin
	reqs    [retryBuckets]int64
	retries [retryBuckets]int64
	sumReqs int64 // sum of reqs
	sumRet  int64 // sum of retries
}

// Request records a request's first attempt: a deposit of Ratio retries,
// for Window. A nil budget does nothing.
func (b *RetryBudget) Request(now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.advanceLocked(now)
	b.reqs[b.slot%retryBuckets]++
	b.sumReqs++
	b.mu.Unlock()
}

// TryRetry withdraws one retry if the budget has it, and reports whether
// it did: the retry may be made. A refused retry withdraws nothing. A nil
// budget always allows.
func (b *RetryBudget) TryRetry(now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	if b.balanceLocked() < retryUnit {
		return false
	}
	b.retries[b.slot%retryBuckets]++
	b.sumRet++
	return true
}

// Available returns how many retries the budget would allow at now, for
// metrics and tests; it withdraws nothing. A nil budget returns
// math.MaxInt.
func (b *RetryBudget) Available(now time.Time) int {
	if b == nil {
		return math.MaxInt
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	return int(max(b.balanceLocked(), 0) / retryUnit)
}

// balanceLocked is the budget's balance in units. Requires b.mu held.
func (b *RetryBudget) balanceLocked() int64 {
	return b.sumReqs*b.deposit + b.reserve - b.sumRet*retryUnit
}

// advanceLocked reads the settings at the first call, and slides the
// window to now's slot, forgetting the slots it leaves. Requires b.mu
// held.
func (b *RetryBudget) advanceLocked(now time.Time) {
	if !b.started {
		b.start(now)
		return
	}
	s := int64(now.Sub(b.origin) / b.width)
	if s <= b.slot {
		return // the same slot, or a clock that stepped back
	}
	if s-b.slot >= retryBuckets {
		b.reqs, b.retries = [retryBuckets]int64{}, [retryBuckets]int64{}
		b.sumReqs, b.sumRet = 0, 0
	} else {
		for i := b.slot + 1; i <= s; i++ {
			k := i % retryBuckets
			b.sumReqs -= b.reqs[k]
			b.sumRet -= b.retries[k]
			b.reqs[k], b.retries[k] = 0, 0
		}
	}
	b.slot = s
}

// start fixes the settings and the window's origin. Requires b.mu held.
func (b *RetryBudget) start(now time.Time) {
	b.started, b.origin = true, now
	w := b.Window
	if w <= 0 {
		w = DefaultRetryWindow
	}
	b.width = max(w/retryBuckets, 1)
	ratio := b.Ratio
	switch {
	case ratio == 0:
		ratio = DefaultRetryRatio
	case ratio < 0 || math.IsNaN(ratio):
		ratio = 0
	}
	b.deposit = int64(math.Round(min(ratio, maxRetryRatio) * retryUnit))
	floor := b.MinPerSecond
	switch {
	case floor == 0:
		floor = DefaultMinRetriesPerSecond
	case floor < 0 || math.IsNaN(floor):
		floor = 0
	}
	// Bounded so that the balance cannot overflow: 2^52 units is far
	// beyond any budget's use.
	b.reserve = int64(min(math.Round(floor*(b.width*retryBuckets).Seconds()*retryUnit), 1<<52))
}

// retryAllowed applies the pool's RetryBudget to the attempt on m, at,
// admitted with done: the first attempt deposits, a retry withdraws, and
// a retry the budget refuses is not made: m's admission and quota are
// given back, and the refusal is noted (Report.RetryBudgetSpent,
// EventRetryBudget). A failover off a dead backend
// (failoverOffDeadBackend) is neither counted nor refused. Without a
// budget every attempt is allowed.
func (p *Pool) retryAllowed(ctx context.Context, rep *Report, m *Member, at *attempt, done breaker.Done) bool {
	rb := p.RetryBudget
	if rb == nil {
		return true
	}
	if len(rep.Attempts) == 0 {
		rb.Request(p.now())
		return true
	}
	if p.failoverOffDeadBackend(rep, m) || rb.TryRetry(p.now()) {
		return true
	}
	done(breaker.Outcome{Result: breaker.Ignore})
	at.releaseQuota()
	rep.RetryBudgetSpent = true
	p.observeCtx(ctx, Event{Kind: EventRetryBudget, Backend: m.Backend})
	return false
}

// failoverOffDeadBackend reports whether the retry on m is a failover off
// a backend that is gone, which the retry budget neither counts nor
// refuses: the failed attempt's backend takes no calls now (its breaker
// is open, benched by this very failure, by the health check that found
// it unresponsive, or meanwhile; or an operator drained it), or its
// failure says it never got the call (the connection could not be made)
// or will not answer (unresponsive); and m's breaker is closed, so m takes
// calls as usual. Such retries are not a storm: they number at most the
// calls in flight on the backend when it went, since new requests no
// longer go there, and they go to a member that is taking calls. When
// every member fails with its breaker still closed (5xx, 429, timeouts),
// each retry still spends the budget, and once their breakers open there
// is no member left to retry on.
func (p *Pool) failoverOffDeadBackend(rep *Report, m *Member) bool {
	if br := m.Backend.Breaker; br != nil && br.Snapshot().State != breaker.Closed {
		return false
	}
	last := rep.Attempts[len(rep.Attempts)-1]
	switch last.Reason {
	case ReasonUnresponsive, ReasonConnect:
		return true
	}
	prev := p.Member(last.Backend)
	if prev == nil {
		return false
	}
	b := prev.Backend
	return b.Drained() || b.Breaker != nil && b.Breaker.Snapshot().State == breaker.Open
}
