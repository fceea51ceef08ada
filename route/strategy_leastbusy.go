package route

// LeastBusy is a Selector that picks, among the candidates of the best
// (lowest) priority tier, the member whose backend has the fewest attempts
// in flight (Backend.InFlight, counted across every pool the backend is
// in). Members with equally few are picked between by a SmoothWeighted of
// its own, so weights still count on ties: a burst of calls that all see
// idle backends is split by weight, not sent to the first. A lower tier is
// chosen only when no member of a higher tier is a candidate.
//
// It suits backends whose capacity is concurrency (self-hosted models, a
// provisioned deployment). Its risk: weights count only on ties, so under
// load a small-quota region takes as many concurrent calls as a large one;
// and the counts are those of this process, not of other replicas.
//
// The zero value is ready to use; a LeastBusy must not be copied after
// first use. It is safe for concurrent use: the counts are read without a
// lock (a pick may see a count that changes a moment later), and ties are
// broken in SmoothWeighted's one sequence.
type LeastBusy struct {
	smooth SmoothWeighted // breaks ties
}

var _ Selector = (*LeastBusy)(nil)

// Select implements Selector.
func (s *LeastBusy) Select(r *Request, c []*Member) int {
	tier, ok := bestTier(c)
	if !ok {
		return -1
	}
	var buf [16]float64
	score := scores(buf[:], len(c))
	for i, m := range c {
		if m.priority() == tier {
			score[i] = float64(m.Backend.InFlight())
		}
	}
	return pickLowest(&s.smooth, r, c, tier, score, 0)
}
