package sim

import (
	"math/bits"
	"sync"
	"time"
)

// limits are per-minute quota limits; 0 means unlimited.
type limits struct {
	rpm, tpm int
}

// limitKind says which limit refused a request.
type limitKind int

const (
	limitNone limitKind = iota
	limitRequests
	limitTokens
)

// admission is the quota decision for one request.
type admission struct {
	ok        bool
	limitedBy limitKind // set when !ok
	// untilNext is the time from now to the start of the next slice: the
	// Retry-After of a refusal and the reset of the counters.
	untilNext time.Duration
	// Per-slice limits (0 = unlimited) and usage in the current slice,
	// including this request when it was admitted.
	reqLimit, tokLimit int64
	reqUsed, tokUsed   int64
	cost               int64 // the estimated tokens asked for
}

// remainingRequests is what is left in the slice, or -1 when unlimited.
func (a admission) remainingRequests() int64 { return remaining(a.reqLimit, a.reqUsed) }

// remainingTokens is what is left in the slice, or -1 when unlimited.
func (a admission) remainingTokens() int64 { return remaining(a.tokLimit, a.tokUsed) }

// neverFits reports whether the token limit refused a request whose
// estimate alone is above the slice's token allowance: no slice can ever
// admit it.
func (a admission) neverFits() bool {
	return a.limitedBy == limitTokens && a.tokLimit > 0 && a.cost > a.tokLimit
}

func remaining(limit, used int64) int64 {
	if limit == 0 {
		return -1
	}
	return max(limit-used, 0)
}

// limiter counts requests and estimated tokens in fixed slices of time
// aligned to origin (the sim's start). It is safe for concurrent use.
type limiter struct {
	slice  time.Duration
	origin time.Time

	mu       sync.Mutex
	index    int64 // slice the counters belong to
	requests int64
	tokens   int64
}

func newLimiter(origin time.Time, slice time.Duration) *limiter {
	return &limiter{slice: slice, origin: origin}
}

// perSlice converts a per-minute limit to a per-slice one: floor(perMinute *
// slice / 1m), at least 1; 0 stays 0 (unlimited).
func perSlice(perMinute int, slice time.Duration) int64 {
	if perMinute <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(perMinute), uint64(slice))
	if hi >= uint64(time.Minute) {
		return int64(^uint64(0) >> 1)
	}
	q, _ := bits.Div64(hi, lo, uint64(time.Minute))
	return max(int64(q), 1)
}

// roll moves the counters to the slice holding now and returns the time
// until the next slice starts. Requires l.mu held.
func (l *limiter) roll(now time.Time) time.Duration {
	elapsed := max(now.Sub(l.origin), 0)
	idx := int64(elapsed / l.slice)
	if idx != l.index {
		l.index, l.requests, l.tokens = idx, 0, 0
	}
	return time.Duration(idx+1)*l.slice - elapsed
}

// admit charges one request of cost estimated tokens if both limits allow it
// in the slice holding now; a refused request is not charged.
func (l *limiter) admit(now time.Time, lim limits, cost int64) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := admission{
		untilNext: l.roll(now),
		reqLimit:  perSlice(lim.rpm, l.slice),
		tokLimit:  perSlice(lim.tpm, l.slice),
		cost:      cost,
	}
	switch {
	case a.reqLimit > 0 && l.requests+1 > a.reqLimit:
		a.limitedBy = limitRequests
	case a.tokLimit > 0 && l.tokens+cost > a.tokLimit:
		a.limitedBy = limitTokens
	default:
		a.ok = true
		l.requests++
		l.tokens += cost
	}
	a.reqUsed, a.tokUsed = l.requests, l.tokens
	return a
}

// peek reports the slice's state at now without charging anything.
func (l *limiter) peek(now time.Time, lim limits) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	return admission{
		ok:        true,
		untilNext: l.roll(now),
		reqLimit:  perSlice(lim.rpm, l.slice),
		tokLimit:  perSlice(lim.tpm, l.slice),
		reqUsed:   l.requests,
		tokUsed:   l.tokens,
	}
}

// perMinute scales a per-slice count to a per-minute rate, rounded.
func perMinute(n int64, slice time.Duration) int64 {
	return int64(float64(n)*float64(time.Minute)/float64(slice) + 0.5)
}
