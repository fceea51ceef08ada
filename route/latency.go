package route

import (
	"slices"
	"sync"
	"time"
)

// latencySamples is how many recent times to first byte a backend keeps
// per kind of call: enough for a stable 95th percentile, few enough that
// the estimate follows a change within a minute of traffic.
const latencySamples = 64

// minSamples is how many samples a kind needs before its own percentile
// is trusted; until then the built-in defaults apply.
const minSamples = 8

// Bounds of the learned thresholds.
const (
	// slowFactor times the 95th percentile of recent times to first byte
	// is when a call counts as slow and the backend is checked.
	slowFactor = 3
	// minSlowPlain and minSlowStream are the lowest slow thresholds: a
	// backend that usually answers in 100 ms is not checked at 300 ms.
	minSlowPlain  = 3 * time.Second
	minSlowStream = 2 * time.Second
	// defaultSlowPlain and defaultSlowStream apply before a backend has
	// answered minSamples calls of that kind.
	defaultSlowPlain  = 15 * time.Second
	defaultSlowStream = 5 * time.Second
	// checkFactor times the 95th percentile of recent health checks (or,
	// before there are any, of stream first bytes) bounds a health check,
	// between minCheckTimeout and maxCheckTimeout.
	checkFactor     = 4
	minCheckTimeout = 2 * time.Second
	maxCheckTimeout = 10 * time.Second
	// defaultCheckTimeout applies before anything has been measured.
	defaultCheckTimeout = 5 * time.Second
)

// latency keeps a backend's recent times to first byte: plain calls (to
// the response headers, which come once the whole answer is generated),
// streams (to the first event) and health checks. It is safe for
// concurrent use.
type latency struct {
	mu                   sync.Mutex
	plain, stream, check ring
}

// ring is a fixed-size ring of durations. Requires external locking.
type ring struct {
	d    [latencySamples]time.Duration
	n    int // samples held, at most latencySamples
	next int
}

func (r *ring) add(d time.Duration) {
	r.d[r.next] = d
	r.next = (r.next + 1) % latencySamples
	r.n = min(r.n+1, latencySamples)
}

// p95 is the 95th percentile (nearest rank) of the samples, and whether
// there are enough of them to trust it.
func (r *ring) p95() (time.Duration, bool) { return r.quantile(95) }

// quantile is the pct-th percentile (nearest rank, 1 <= pct <= 100) of
// the samples, and whether there are enough of them to trust it.
func (r *ring) quantile(pct int) (time.Duration, bool) {
	if r.n < minSamples {
		return 0, false
	}
	var buf [latencySamples]time.Duration
	s := buf[:r.n]
	copy(s, r.d[:r.n])
	slices.Sort(s)
	i := max((pct*r.n+99)/100, 1) // ceil(pct/100 n), 1-based
	return s[i-1], true
}

// quantile is the q-th quantile (0 < q < 1, to a hundredth) of the
// backend's recent times to first byte of the kind, and whether there are
// enough samples to trust it.
func (l *latency) quantile(stream bool, q float64) (time.Duration, bool) {
	pct := min(max(int(q*100+0.5), 1), 100)
	l.mu.Lock()
	defer l.mu.Unlock()
	if stream {
		return l.stream.quantile(pct)
	}
	return l.plain.quantile(pct)
}

func (l *latency) observe(stream bool, d time.Duration) {
	l.mu.Lock()
	if stream {
		l.stream.add(d)
	} else {
		l.plain.add(d)
	}
	l.mu.Unlock()
}

func (l *latency) observeCheck(d time.Duration) {
	l.mu.Lock()
	l.check.add(d)
	l.mu.Unlock()
}

// slowAfter is how long a call of the kind may wait for its first byte
// before it counts as slow: slowFactor times the 95th percentile of the
// backend's recent ones, at least minSlow*, at most limit (the attempt's
// own first-byte bound, when it has one).
func (l *latency) slowAfter(stream bool, limit time.Duration) time.Duration {
	l.mu.Lock()
	r, floor, def := &l.plain, minSlowPlain, defaultSlowPlain
	if stream {
		r, floor, def = &l.stream, minSlowStream, defaultSlowStream
	}
	p, ok := r.p95()
	l.mu.Unlock()
	d := def
	if ok {
		d = max(slowFactor*p, floor)
	}
	if limit > 0 {
		d = min(d, limit)
	}
	return d
}

// checkTimeout bounds a health check of the backend: checkFactor times
// the 95th percentile of recent passing checks (before there are enough,
// of stream first bytes, then of plain answers), between minCheckTimeout
// and maxCheckTimeout.
func (l *latency) checkTimeout() time.Duration {
	l.mu.Lock()
	p, ok := l.check.p95()
	if !ok {
		p, ok = l.stream.p95()
	}
	if !ok {
		p, ok = l.plain.p95()
	}
	l.mu.Unlock()
	if !ok {
		return defaultCheckTimeout
	}
	return min(max(checkFactor*p, minCheckTimeout), maxCheckTimeout)
}
