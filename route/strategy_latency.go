package route

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Defaults of LowestLatency.
const (
	// DefaultExplore is how often LowestLatency explores when its Explore
	// is zero: every 20th pick.
	DefaultExplore = 20
	// DefaultLatencyMargin is how close to the lowest median a member's
	// must be to tie when LowestLatency's Margin is zero: within 10%.
	DefaultLatencyMargin = 0.10
)

// LowestLatency is a Selector that picks, among the candidates of the
// best (lowest) priority tier, the member whose backend has had the lowest
// recent time to first byte for the kind of call (streams and plain calls
// apart): the median of its last 64. Members within Margin of the lowest
// tie and are picked between by a SmoothWeighted of its own. A lower tier
// is chosen only when no member of a higher tier is a candidate.
//
// Latency is learned only from calls, so it explores:
//
//   - A member with fewer than 8 answers of the kind is picked first (the
//     least recently picked of such members, so new ones take turns), for
//     up to 8 picks: enough to measure it, without sending a whole burst
//     to a member before its first answer is back. A member still
//     unmeasured after that (its calls fail) gets only the picks below.
//   - Every Explore-th pick (default 20) goes instead to the tier's least
//     recently picked member, so a region that recovered, or was never
//     measured, is measured again. With the median of 64 samples, a
//     recovered region wins back once about 32 of its samples are new.
//
// It is deterministic: the same calls and the same latencies give the same
// picks. Its risk: traffic herds onto the fastest region, which burns its
// quota first (then its 429s bench it, and traffic moves); and a plain
// call's first byte comes when the whole answer is done, so plain-call
// latency follows answer length as much as the region.
//
// The zero value is ready to use. It keeps a little state for each
// *Member it has picked: give each pool its own. Fields must not change
// once it is in use, and a LowestLatency must not be copied after first
// use. It is safe for concurrent use: picks are made under a mutex, in one
// sequence.
type LowestLatency struct {
	// Explore is how often the tier's least recently picked member is
	// picked instead of the fastest: every Explore-th pick. Zero means
	// DefaultExplore (20); a negative value means never, so a region that
	// was slow once is not measured again while a faster one is a
	// candidate (risky: it stays out after it recovers). 1 picks the
	// least recently picked member every time: round-robin.
	Explore int
	// Margin is how much slower than the lowest median a member may be and
	// still tie with it, as a fraction: 0.1 ties 440 ms with 400 ms.
	// Zero means DefaultLatencyMargin (10%); a negative value means exact
	// ties only, so the fastest takes every pick however slight its lead.
	Margin float64

	mu     sync.Mutex
	picks  uint64                 // picks made
	state  map[*Member]*latPicked // per member picked
	smooth SmoothWeighted         // breaks ties
}

var _ Selector = (*LowestLatency)(nil)

// latPicked is what LowestLatency keeps for one member.
type latPicked struct {
	last  uint64 // LowestLatency.picks at its last pick; 0 for never
	tries [2]int // picks while unmeasured, plain and stream
}

// Select implements Selector.
func (s *LowestLatency) Select(r *Request, c []*Member) int {
	tier, ok := bestTier(c)
	if !ok {
		return -1
	}
	stream := r != nil && r.Stream
	kind := 0
	if stream {
		kind = 1
	}
	// Read the medians first: each under its backend's own lock.
	var buf [16]float64
	score := scores(buf[:], len(c))
	var mbuf [16]bool
	measured := mbuf[:0]
	if len(c) > len(mbuf) {
		measured = make([]bool, 0, len(c))
	}
	for i, m := range c {
		ok := false
		if m.priority() == tier {
			var p time.Duration
			p, ok = m.Backend.lat.p50(stream)
			score[i] = float64(p)
		}
		measured = append(measured, ok)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[*Member]*latPicked{}
	}
	s.picks++
	pick := -1
	if every := s.explore(); every > 0 && s.picks%uint64(every) == 0 {
		pick = s.leastRecent(c, tier, func(int) bool { return true })
	}
	if pick < 0 {
		pick = s.leastRecent(c, tier, func(i int) bool {
			return !measured[i] && s.of(c[i]).tries[kind] < minSamples
		})
		if pick >= 0 {
			s.of(c[pick]).tries[kind]++
		}
	}
	if pick < 0 {
		// The fastest of the measured; when none is, weights decide.
		anyMeasured := slices.Contains(measured, true)
		for i, m := range c {
			if m.priority() == tier && anyMeasured && !measured[i] {
				score[i] = math.Inf(1) // never within the margin
			} else if !anyMeasured {
				score[i] = 0
			}
		}
		pick = pickLowest(&s.smooth, r, c, tier, score, s.margin())
	}
	if pick >= 0 {
		s.of(c[pick]).last = s.picks
	}
	return pick
}

// leastRecent returns the index of the least recently picked member of
// tier tier in c for which ok holds (the first in configuration order of
// equals), -1 for none. Requires s.mu.
func (s *LowestLatency) leastRecent(c []*Member, tier int, ok func(i int) bool) int {
	pick := -1
	var oldest uint64
	for i, m := range c {
		if m.priority() != tier || !ok(i) {
			continue
		}
		if last := s.of(m).last; pick < 0 || last < oldest {
			pick, oldest = i, last
		}
	}
	return pick
}

// of returns m's state, creating it. Requires s.mu.
func (s *LowestLatency) of(m *Member) *latPicked {
	st := s.state[m]
	if st == nil {
		st = &latPicked{}
		s.state[m] = st
	}
	return st
}

func (s *LowestLatency) explore() int {
	if s.Explore == 0 {
		return DefaultExplore
	}
	return s.Explore
}

func (s *LowestLatency) margin() float64 {
	switch {
	case s.Margin == 0:
		return DefaultLatencyMargin
	case s.Margin < 0:
		return 0
	}
	return s.Margin
}

// p50 is the median time to first byte of the kind of call, and whether
// there are minSamples of them to trust it.
func (l *latency) p50(stream bool) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stream {
		return l.stream.p50()
	}
	return l.plain.p50()
}

// p50 is the median (nearest rank) of the samples, and whether there are
// enough of them (minSamples) to trust it. Requires external locking.
func (r *ring) p50() (time.Duration, bool) {
	if r.n < minSamples {
		return 0, false
	}
	var buf [latencySamples]time.Duration
	s := buf[:r.n]
	copy(s, r.d[:r.n])
	slices.Sort(s)
	return s[(r.n+1)/2-1], true // ceil(n/2), 1-based
}
