package route

import "math/rand/v2"

// Selector picks the member to try next. Select is given the members that
// may take the call now (not yet tried for this request, breaker ready),
// in configuration order, and returns the index of one of them, or -1 to
// pick none. Implementations must be safe for concurrent use.
type Selector interface {
	Select(r *Request, candidates []*Member) int
}

// PriorityWeighted is the default Selector: among the candidates of the
// best (lowest) priority tier, pick at random in proportion to weight. A
// lower tier is chosen only when no member of a higher tier is a candidate.
type PriorityWeighted struct {
	// IntN returns a uniform random number in [0, n). Nil means
	// math/rand/v2.IntN. Tests inject a deterministic source; it must be
	// safe for concurrent use.
	IntN func(n int) int
}

var _ Selector = PriorityWeighted{}

// Select implements Selector.
func (s PriorityWeighted) Select(_ *Request, c []*Member) int {
	if len(c) == 0 {
		return -1
	}
	best := c[0].priority()
	for _, m := range c[1:] {
		best = min(best, m.priority())
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
