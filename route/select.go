package route

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// Selector picks the member to try next. Select is given the members that
// may take the call now (not yet tried for this request, breaker ready),
// in configuration order, and returns the index of one of them, or -1 to
// pick none. They are those of the best (lowest) priority tier that has
// any (the lower tiers are not even looked at, so that a request costs the
// same however many members wait below), except when every member that
// may take the call is held back (slow start, health check): then all of
// those, whatever their tier. Implementations must be safe for concurrent
// use.
type Selector interface {
	Select(r *Request, candidates []*Member) int
}

// bestTier returns the best (lowest) priority among c; ok is false when c
// is empty.
func bestTier(c []*Member) (best int, ok bool) {
	if len(c) == 0 {
		return 0, false
	}
	best = c[0].priority()
	for _, m := range c[1:] {
		best = min(best, m.priority())
	}
	return best, true
}

// selector returns the Selector of p's picks: p.Selector, or the pool's
// own SmoothWeighted when it has none.
func (p *Pool) selector() Selector {
	if p.Selector != nil {
		return p.Selector
	}
	return &p.smooth
}

// SmoothWeighted is the default Selector: among the candidates of the best
// (lowest) priority tier it picks by smooth weighted round-robin, nginx's
// algorithm. A lower tier is chosen only when no member of a higher tier
// is a candidate. Each pick adds every candidate's weight to its current
// weight, picks the largest (ties go to the earlier member in
// configuration order) and takes the candidates' total weight off the
// pick. Weights 5, 1, 1 give a a b a c a a, and again; 90, 5, 5 give
// exactly 90, 5 and 5 of every 100 picks, each 5 spread 20 picks apart. A
// pool of quota-bound regions thus sends each its share evenly over time,
// where a random split sends one region more than its share in some
// windows and gets it benched.
//
// The candidates change from call to call: a retry leaves out the members
// already tried for the request, and a benched member is left out until
// its breaker lets calls through again. SmoothWeighted keeps the current
// weights of each distinct set of best-tier candidates (the *Member values
// of the set, in order) apart, and only the set a pick is made from moves. So each set's picks follow the exact
// sequence above as if the others were never used: a retry after the
// first member failed does not change which member the next request gets
// first, the first picks of a pool that retries keep exactly their
// weights, and while the top member is benched the others keep to their
// own exact sequence from the first pick (two equal fallbacks alternate).
// When a member comes back, the set with it
// resumes its sequence where it stopped, so the member gets no burst to
// make up for the time it was away. (One set of current weights per member
// for all sets, as nginx keeps, carries weight-sized values from a large
// set into a small one, where they are worth many picks: with 90, 5, 5 a
// fallback then takes up to ten picks in a row when the top member is
// benched.) The cost is that each member's share of all picks is exact
// per set, so over many sets it can be off by up to about one pick per set
// in use; SmoothWeighted keeps at most 64 sets and drops the least recently
// used. When Select's pick is not used (the engine found its half-open
// probe taken and selects again), the member is counted as picked all the
// same.
//
// In a tier of more than wholeTierMin members, a request's first pick
// (for the pool's own SmoothWeighted, not a Selector set in Pool.Selector)
// is made from the whole tier's ledger before any member is asked whether
// it can take the call, and only the pick is asked; when it cannot, the
// pick counts as made all the same and is made again from the members
// that can, as above. Asking each of a hundred members (its breaker,
// quota and checks) on every request cost a tenth more CPU a request than
// a pool of one; this way costs the same. While every member can take
// calls the picks are the same; while one cannot, its turns in the whole
// tier's sequence go to the others by the sequence of the set without it,
// so each still gets its weight's share. Retries, hedges and requests for
// one owner are picked from the members that can take them, as above.
//
// The zero value is ready to use; a SmoothWeighted must not be copied after
// first use. It is safe for concurrent use: picks are made under a mutex,
// in one sequence whatever the interleaving. Each Pool without a Selector
// has its own.
type SmoothWeighted struct {
	mu      sync.Mutex
	ledgers []*ledger // one per candidate set, at most maxLedgers
	whole   *ledger   // the best tier's whole ledger (pickWhole), never evicted
	uses    uint64    // picks made, to find the least recently used ledger
}

var _ Selector = (*SmoothWeighted)(nil)

// maxLedgers bounds the candidate sets a SmoothWeighted keeps.
const maxLedgers = 64

// wholeTierMin is the size of a tier above which a first pick is made
// from the whole tier before its members are asked (Pool.nextWhole).
const wholeTierMin = 8

// ledger is the smooth round-robin state of one candidate set.
type ledger struct {
	members []*Member // the set, in configuration order
	weights []int     // members' weights
	current []int     // members' current weights
	used    uint64    // SmoothWeighted.uses at its last pick
}

// Select implements Selector.
func (s *SmoothWeighted) Select(_ *Request, c []*Member) int {
	best, ok := bestTier(c)
	if !ok {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.ledger(c, best)
	pick := s.pickLocked(l)
	for i, m := range c {
		if m == l.members[pick] {
			return i
		}
	}
	return -1 // unreachable: the ledger's members are c's best tier
}

// pickLocked makes l's next pick and returns its index in l.members.
// Requires s.mu.
func (s *SmoothWeighted) pickLocked(l *ledger) int {
	total, pick := 0, 0
	for j, w := range l.weights {
		l.current[j] += w
		total += w
		if l.current[j] > l.current[pick] {
			pick = j
		}
	}
	l.current[pick] -= total
	s.uses++
	l.used = s.uses
	return pick
}

// pickWhole makes the pick Select would make if every member of the best
// tier were a candidate: tier is its members' indices in members. It
// returns the index in members of the pick, which counts as made whether
// or not the pick can take the call. The whole tier's ledger is found
// without reading the members (the reason for this short way: see
// Pool.nextWhole), and is the one Select uses when its candidates are the
// whole tier.
func (s *SmoothWeighted) pickWhole(members []*Member, tier []int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.whole == nil {
		l := newLedger(len(tier))
		for _, i := range tier {
			l.add(members[i])
		}
		// A ledger Select made of the same set is the one: its sequence
		// goes on.
		if j := slices.IndexFunc(s.ledgers, func(o *ledger) bool { return slices.Equal(o.members, l.members) }); j >= 0 {
			l = s.ledgers[j]
			s.ledgers = slices.Delete(s.ledgers, j, j+1)
		}
		s.whole = l
	}
	return tier[s.pickLocked(s.whole)]
}

// ledger returns the ledger of the members of tier best in c, creating it
// (and evicting the least recently used one when full) if new. Requires
// external locking.
func (s *SmoothWeighted) ledger(c []*Member, best int) *ledger {
	if s.whole != nil && s.whole.is(c, best) {
		return s.whole
	}
	oldest := -1
	for i, l := range s.ledgers {
		if l.is(c, best) {
			return l
		}
		if oldest < 0 || l.used < s.ledgers[oldest].used {
			oldest = i
		}
	}
	l := newLedger(0)
	for _, m := range c {
		if m.priority() == best {
			l.add(m)
		}
	}
	if len(s.ledgers) < maxLedgers {
		s.ledgers = append(s.ledgers, l)
	} else {
		s.ledgers[oldest] = l
	}
	return l
}

// newLedger returns an empty ledger with room for n members.
func newLedger(n int) *ledger {
	return &ledger{members: make([]*Member, 0, n), weights: make([]int, 0, n), current: make([]int, 0, n)}
}

// add adds m to the set of l, with a current weight of zero.
func (l *ledger) add(m *Member) {
	l.members = append(l.members, m)
	l.weights = append(l.weights, m.weight())
	l.current = append(l.current, 0)
}

// is reports whether l is the ledger of the members of tier best in c.
func (l *ledger) is(c []*Member, best int) bool {
	j := 0
	for _, m := range c {
		if m.priority() != best {
			continue
		}
		if j == len(l.members) || l.members[j] != m {
			return false
		}
		j++
	}
	return j == len(l.members)
}

// PriorityWeighted is a stateless Selector: among the candidates of the
// best (lowest) priority tier, it picks at random in proportion to weight.
// A lower tier is chosen only when no member of a higher tier is a
// candidate. The split holds only on average: over a short window a member
// can get well above its share (two equal members sharing 20 picks each
// get more than 12 of them about one time in eight), which is why the
// default is SmoothWeighted. It suits a caller that wants
// independent picks, such as many replicas that must not move in step. It
// is safe for concurrent use when IntN is.
type PriorityWeighted struct {
	// IntN returns a uniform random number in [0, n). Nil means
	// math/rand/v2.IntN. Tests inject a deterministic source; it must be
	// safe for concurrent use.
	IntN func(n int) int
}

var _ Selector = PriorityWeighted{}

// Select implements Selector.
func (s PriorityWeighted) Select(_ *Request, c []*Member) int {
	best, ok := bestTier(c)
	if !ok {
		return -1
	}
	total := 0
	for _, m := range c {
		if m.priority() == best {
			total += m.weight()
		}
	}
	intN := s.IntN
	if intN == nil {
		intN = rand.IntN
	}
	n := intN(total)
	for i, m := range c {
		if m.priority() != best {
			continue
		}
		if n < m.weight() {
			return i
		}
		n -= m.weight()
	}
	return -1 // unreachable with a correct IntN
}

// candidateBufs hold the candidate slices of pools of more than eight
// members (next keeps smaller ones on its stack), so that a request
// allocates the same whatever the size of its pool.
var candidateBufs = sync.Pool{New: func() any { return new([]*Member) }}

// putCandidates gives back a slice of candidateBufs, grown as it was
// used, its members cleared so that it keeps no backend alive.
func putCandidates(b *[]*Member) {
	clear((*b)[:cap(*b)])
	candidateBufs.Put(b)
}

// tierIndex is a pool's members by priority tier, best first: each tier
// the indices of its members in Members, in configuration order. Made at
// the first selection (a Pool's Members do not change once in use).
type tierIndex struct {
	once  sync.Once
	tiers [][]int
}

// of returns the tiers of members, made once.
func (t *tierIndex) of(members []*Member) [][]int {
	t.once.Do(func() {
		byPrio := map[int][]int{}
		var prios []int
		for i, m := range members {
			p := m.priority()
			if _, ok := byPrio[p]; !ok {
				prios = append(prios, p)
			}
			byPrio[p] = append(byPrio[p], i)
		}
		slices.Sort(prios)
		for _, p := range prios {
			t.tiers = append(t.tiers, byPrio[p])
		}
	})
	return t.tiers
}
