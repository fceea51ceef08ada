package route

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func members(spec ...[2]int) []*Member {
	var out []*Member
	for i, s := range spec {
		out = append(out, &Member{Backend: &Backend{Name: string(rune('a' + i))}, Priority: s[0], Weight: s[1]})
	}
	return out
}

func TestPriorityWeightedExactPicks(t *testing.T) {
	// With IntN returning each value in turn, the picks walk the weights of
	// the best tier in order: a gets 0..2, b gets 3, c (tier 2) never.
	c := members([2]int{1, 3}, [2]int{1, 1}, [2]int{2, 100})
	var got []string
	for n := 0; n < 4; n++ {
		n := n
		s := PriorityWeighted{IntN: func(total int) int {
			if total != 4 {
				t.Fatalf("total weight %d, want 4 (tier 1 only)", total)
			}
			return n
		}}
		got = append(got, c[s.Select(nil, c)].Backend.Name)
	}
	if want := []string{"a", "a", "a", "b"}; !equal(got, want) {
		t.Fatalf("picks %v, want %v", got, want)
	}
}

func TestPriorityWeightedFallsToNextTier(t *testing.T) {
	// The engine passes only members that can take the call; when tier 1
	// has none, tier 2 is chosen, and tier 3 only after it.
	c := members([2]int{2, 1}, [2]int{3, 1}, [2]int{2, 1})
	s := PriorityWeighted{}
	for i := 0; i < 100; i++ {
		if name := c[s.Select(nil, c)].Backend.Name; name == "b" {
			t.Fatal("tier 3 chosen while tier 2 had candidates")
		}
	}
	if got := s.Select(nil, nil); got != -1 {
		t.Fatalf("Select on no candidates = %d", got)
	}
}

func TestPriorityWeightedDistribution(t *testing.T) {
	// 90/5/5 weights, as in the benchmark's main-region-short scenario.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	s := PriorityWeighted{IntN: func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }}
	const n = 100000
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		counts[c[s.Select(nil, c)].Backend.Name]++
	}
	// Chi-squared test, 2 degrees of freedom, p = 0.001 critical value 13.82.
	want := map[string]float64{"a": 0.90, "b": 0.05, "c": 0.05}
	chi := 0.0
	for k, p := range want {
		exp := p * n
		chi += math.Pow(float64(counts[k])-exp, 2) / exp
	}
	if chi > 13.82 {
		t.Fatalf("picks %v do not follow 90/5/5 (chi² = %.1f)", counts, chi)
	}
}

func TestPriorityWeightedZeroWeightCountsAsOne(t *testing.T) {
	c := members([2]int{1, 0}, [2]int{1, 0})
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		seen[c[PriorityWeighted{}.Select(nil, c)].Backend.Name] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("picks %v", seen)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
