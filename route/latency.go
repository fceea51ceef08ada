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
// streams (to the first content: see commit.go; Backend.events keeps the
// times to a stream's first event of any kind) and health checks. It is
// safe for concurrent use.
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

// samples appends to dst the backend's recent times to first byte of
// the kind.
func (l *latency) samples(dst []time.Duration, stream bool) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.plain
	if stream {
		r = &l.stream
	}
	return append(dst, r.d[:r.n]...)
}

// checkSamples appends to dst the backend's recent passing health checks.
func (l *latency) checkSamples(dst []time.Duration) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(dst, l.check.d[:l.check.n]...)
}

// slowAfter is how long a call of the kind may wait for its first byte
// before it counts as slow, judged from the backend's own answers alone
// (see slowThreshold).
func (l *latency) slowAfter(stream bool, limit time.Duration) time.Duration {
	l.mu.Lock()
	r := &l.plain
	if stream {
		r = &l.stream
	}
	p, ok := r.p95()
	l.mu.Unlock()
	return slowThreshold(p, ok, stream, limit)
}

// slowThreshold is how long a call of the kind may wait for its first
// byte before it counts as slow, from p95, the 95th percentile of the
// times to first byte it is judged by (ok: there were minSamples of
// them): slowFactor times p95, at least minSlow*, defaultSlow* without
// p95, at most limit (the attempt's own first-byte bound, when it has
// one).
func slowThreshold(p95 time.Duration, ok, stream bool, limit time.Duration) time.Duration {
	floor, d := minSlowPlain, defaultSlowPlain
	if stream {
		floor, d = minSlowStream, defaultSlowStream
	}
	if ok {
		d = max(slowFactor*p95, floor)
	}
	if limit > 0 {
		d = min(d, limit)
	}
	return d
}

// checkP95 is the 95th percentile of the backend's recent passing checks
// or, before there are minSamples of them, of its stream first bytes, then
// of its plain answers; ok is false when it has minSamples of none.
func (l *latency) checkP95() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.check.p95()
	if !ok {
		p, ok = l.stream.p95()
	}
	if !ok {
		p, ok = l.plain.p95()
	}
	return p, ok
}

// checkTimeout bounds a health check of the backend: checkFactor times
// checkP95, between minCheckTimeout and maxCheckTimeout;
// defaultCheckTimeout before anything has been measured.
func (l *latency) checkTimeout() time.Duration {
	p, ok := l.checkP95()
	if !ok {
		return defaultCheckTimeout
	}
	return checkBound(p)
}

func checkBound(p95 time.Duration) time.Duration {
	return min(max(checkFactor*p95, minCheckTimeout), maxCheckTimeout)
}

// peerBuf is the room reference keeps on the stack: the samples of four
// backends.
const peerBuf = 4 * latencySamples

// reference appends to dst the times to first byte that b's calls of the
// kind are judged by in p, and reports whether there are minSamples of
// them: b's own once it has minSamples; before that, its few with those of
// its pool peers (the pool's other members, which serve the same calls),
// so that a member that has never answered (a fallback, or any member of a
// fleet just started) is judged by what its peers take, not by a flat
// default. The peers are read in configuration order while their samples
// fit in peerBuf: a pool of a hundred members costs a call no more than
// one of five.
func (p *Pool) reference(dst []time.Duration, b *Backend, stream bool) ([]time.Duration, bool) {
	dst = b.lat.samples(dst, stream)
	if len(dst) >= minSamples {
		return dst, true
	}
	for _, m := range p.Members {
		if len(dst)+latencySamples > peerBuf {
			break // dst's room on the caller's stack is full
		}
		if m.Backend != b {
			dst = m.Backend.lat.samples(dst, stream)
		}
	}
	return dst, len(dst) >= minSamples
}

// quantileOf is the pct-th percentile (nearest rank, 1 <= pct <= 100) of
// s, which it sorts; s must not be empty.
func quantileOf(s []time.Duration, pct int) time.Duration {
	slices.Sort(s)
	i := max((pct*len(s)+99)/100, 1)
	return s[i-1]
}

// SlowAfter is how long a call of the kind to b, a member of p, may wait
// for its first byte before it counts as slow and b is checked: three
// times the 95th percentile of b's recent times to first byte (of its
// pool peers' with its own, before b has answered eight), at least 3 s
// (plain) or 2 s (streams), 15 s or 5 s when neither b nor its peers have
// answered eight, and never more than b's first-byte timeout.
func (p *Pool) SlowAfter(b *Backend, stream bool) time.Duration {
	return p.slowAfter(b, stream, b.firstByteTimeout(stream))
}

func (p *Pool) slowAfter(b *Backend, stream bool, limit time.Duration) time.Duration {
	var buf [peerBuf]time.Duration
	ref, ok := p.reference(buf[:0], b, stream)
	var p95 time.Duration
	if ok {
		p95 = quantileOf(ref, 95)
	}
	return slowThreshold(p95, ok, stream, limit)
}

// CheckTimeout bounds one health check of b, a member of p: four times
// the 95th percentile of its recent passing checks (before there are
// eight, of its times to first byte, streams first; before it has answered
// eight, of its pool peers' with its own), between 2 s and 10 s; 5 s when
// nothing has been measured.
func (p *Pool) CheckTimeout(b *Backend) time.Duration {
	if d, ok := b.lat.checkP95(); ok {
		return checkBound(d)
	}
	var buf [peerBuf]time.Duration
	for _, stream := range [...]bool{true, false} {
		if ref, ok := p.reference(buf[:0], b, stream); ok {
			return checkBound(quantileOf(ref, 95))
		}
	}
	return defaultCheckTimeout
}
