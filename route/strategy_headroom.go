package route

import "math"

// DefaultHeadroomStep is the step in which Headroom compares shares of
// quota left when its Step is zero: 5%.
const DefaultHeadroomStep = 0.05

// Headroom is a Selector that picks, among the candidates of the best
// (lowest) priority tier, the member with the largest share of its quota
// left, as Remaining reports it. Shares are compared in steps of Step:
// members whose shares round up to the same step tie, and are picked
// between by a SmoothWeighted of its own, so weights count among members
// with about as much left, and a pick does not swing all traffic to a
// member for a fraction of a percent. A lower tier is chosen only when no
// member of a higher tier is a candidate.
//
// Its risk: shares learned from answers lag a burst, which then goes to
// the member that had the most left; and a member whose quota is unknown
// counts as full, so it draws traffic from members known to be partly
// used.
//
// The zero value is ready to use (every member counts as full: picks are
// SmoothWeighted's); fields must not change once it is in use, and a
// Headroom must not be copied after first use. It is safe for concurrent
// use when Remaining is: Remaining is called without any lock held.
type Headroom struct {
	// Remaining reports the share of b's quota left, from 0 (none) to 1
	// (all of it), and whether it is known: of the window the backend's
	// figures count (LocalQuota.Headroom compares what is left of a
	// slice with the slice's share of the limit, not with the whole
	// per-minute limit). Values outside 0-1 are taken
	// as the nearer bound. Nil, unknown or NaN mean 1 (full). It is called
	// for each candidate of the best tier on every pick, so it must be
	// cheap, and safe for concurrent use.
	Remaining func(b *Backend) (share float64, known bool)
	// Step is the resolution of the comparison: shares are rounded up to a
	// multiple of Step, so with the default 0.05 a member with 81% left
	// ties one with 84% and beats one with 79%. Zero means
	// DefaultHeadroomStep; a negative value compares exact shares (the
	// most left wins outright, however slight the lead); 1 or more makes
	// every member with any quota left tie, so picks are by weight alone.
	Step float64

	smooth SmoothWeighted // breaks ties
}

var _ Selector = (*Headroom)(nil)

// Select implements Selector.
func (s *Headroom) Select(r *Request, c []*Member) int {
	tier, ok := bestTier(c)
	if !ok {
		return -1
	}
	var buf [16]float64
	score := scores(buf[:], len(c))
	for i, m := range c {
		if m.priority() == tier {
			score[i] = -s.level(m.Backend) // the most left scores lowest
		}
	}
	return pickLowest(&s.smooth, r, c, tier, score, 0)
}

// level is the share of b's quota left, rounded up to a step.
func (s *Headroom) level(b *Backend) float64 {
	share := 1.0
	if s.Remaining != nil {
		if v, known := s.Remaining(b); known && !math.IsNaN(v) {
			share = min(max(v, 0), 1)
		}
	}
	step := s.Step
	if step == 0 {
		step = DefaultHeadroomStep
	}
	if step < 0 {
		return share
	}
	// A share within a hair of a multiple of step is that multiple: 0.3 /
	// 0.05 is 5.999999999999999 in floating point, and a share counted
	// down in tenths from 1 to 0.6000000000000001 gives 12.000000000000002.
	q := share / step
	if r := math.Round(q); math.Abs(q-r) < 1e-6 {
		return r
	}
	return math.Ceil(q)
}
