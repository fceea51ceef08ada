package route

import (
	"errors"
	"fmt"
	"strings"
)

// The routing strategies a pool can use, by their configuration names.
// Every one chooses only among the candidates of the best (lowest)
// priority tier present, so tiers mean the same whatever the strategy: a
// lower tier gets calls only while no member of a higher one can take
// them.
//
//   - "priority" (the default, also for ""): SmoothWeighted. Smooth
//     weighted round-robin; each member gets exactly its weight's share of
//     its tier's picks, evenly spread. No knobs. Risk: it ignores load and
//     speed, so a slow region keeps its full share until its breaker
//     benches it.
//   - "least_busy": LeastBusy. The member whose backend has the fewest
//     attempts in flight; ties by SmoothWeighted. No knobs. Risk: weight
//     counts only on ties, so under load a small-quota region takes as
//     many concurrent calls as a large one, and in-flight counts are
//     local to one gateway replica.
//   - "latency": LowestLatency. The member with the lowest median time to
//     first byte for the kind of call (plain or stream), with members
//     within Margin (default 10%) of it tied and split by SmoothWeighted;
//     members never measured are tried first, and every Explore-th pick
//     (default 20) goes to the tier's least recently picked member, so a
//     region that recovered is noticed. Risk: traffic herds onto the
//     fastest region, which burns its quota first; a plain call's first
//     byte waits for the whole answer, so its latency follows answer
//     length as much as the region.
//   - "affinity": Affinity. Requests with the same key (prompt_cache_key,
//     user, previous_response_id or Anthropic's metadata.user_id) go to
//     the same member while it is a candidate, by weighted rendezvous
//     hashing, so the provider's prompt cache keeps hitting; requests
//     without a key go by SmoothWeighted. No knobs. Risk: weights hold
//     only over many keys, so one heavy key loads one region; when a
//     member is benched its keys move, and move back when it returns.
//   - "headroom": Headroom. The member with the largest share of its quota
//     left, from Headroom.Remaining (which the caller sets; until then
//     every member counts as full and picks are SmoothWeighted), compared
//     in steps of Step (default 5%), ties by SmoothWeighted. Risk: shares
//     known only after answers lag a burst, which then herds onto one
//     member; a member whose quota is unknown counts as full.
const (
	StrategyPriority  = "priority"
	StrategyLeastBusy = "least_busy"
	StrategyLatency   = "latency"
	StrategyAffinity  = "affinity"
	StrategyHeadroom  = "headroom"
)

// strategies are the names NewStrategy knows, in the order errors list
// them.
var strategies = [...]string{StrategyPriority, StrategyLeastBusy, StrategyLatency, StrategyAffinity, StrategyHeadroom}

// Strategies returns the names NewStrategy accepts, the default first.
func Strategies() []string { return append([]string(nil), strategies[:]...) }

// ErrUnknownStrategy is wrapped by NewStrategy's error for a name it does
// not know.
var ErrUnknownStrategy = errors.New("unknown routing strategy")

// NewStrategy returns a new Selector for the strategy of that
// configuration name (see StrategyPriority and the others), with default
// settings: "" and "priority" give a *SmoothWeighted, "least_busy" a
// *LeastBusy, "latency" a *LowestLatency, "affinity" an *Affinity and
// "headroom" a *Headroom, whose Remaining the caller sets before use. Each
// call returns a Selector with state of its own: give each pool its own.
// An unknown name is an error wrapping ErrUnknownStrategy that lists the
// known ones.
func NewStrategy(name string) (Selector, error) {
	switch name {
	case "", StrategyPriority:
		return &SmoothWeighted{}, nil
	case StrategyLeastBusy:
		return &LeastBusy{}, nil
	case StrategyLatency:
		return &LowestLatency{}, nil
	case StrategyAffinity:
		return &Affinity{}, nil
	case StrategyHeadroom:
		return &Headroom{}, nil
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknownStrategy, name, strings.Join(strategies[:], ", "))
}

// pickLowest returns the index in c of the member to pick among the
// candidates of priority tier tier whose score is at most the tier's
// lowest score times 1+margin: that member when it is the only one, else
// s's pick among them, so weights decide between equals. score holds one
// score per member of c; lower is better, and only the tier's entries are
// read. Scores must not be negative when margin is not zero. It returns -1
// when the tier has no candidates.
func pickLowest(s *SmoothWeighted, r *Request, c []*Member, tier int, score []float64, margin float64) int {
	lowest, found := 0.0, false
	for i, m := range c {
		if m.priority() == tier && (!found || score[i] < lowest) {
			lowest, found = score[i], true
		}
	}
	if !found {
		return -1
	}
	limit := lowest + lowest*margin
	var tbuf [16]*Member
	var ibuf [16]int
	tied, idx := tbuf[:0], ibuf[:0]
	for i, m := range c {
		if m.priority() == tier && score[i] <= limit {
			tied = append(tied, m)
			idx = append(idx, i)
		}
	}
	if len(tied) == 1 {
		return idx[0]
	}
	j := s.Select(r, tied)
	if j < 0 {
		return -1
	}
	return idx[j]
}

// scores returns a slice of n scores, buf's when it is large enough.
func scores(buf []float64, n int) []float64 {
	if n <= len(buf) {
		return buf[:n]
	}
	return make([]float64, n)
}
