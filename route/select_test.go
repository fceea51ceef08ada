package route

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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

// picks makes n picks from candidates c and returns their names.
func picks(s Selector, c []*Member, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(c[s.Select(nil, c)].Backend.Name)
	}
	return b.String()
}

func without(c []*Member, names ...string) []*Member {
	var out []*Member
	for _, m := range c {
		if !slices.Contains(names, m.Backend.Name) {
			out = append(out, m)
		}
	}
	return out
}

func TestSmoothWeightedSequence(t *testing.T) {
	// nginx's smooth weighted round-robin, pick by pick.
	for _, tc := range []struct {
		name  string
		spec  [][2]int
		picks string
	}{
		{"5/1/1", [][2]int{{1, 5}, {1, 1}, {1, 1}}, "aabacaa" + "aabacaa"},
		{"1/1/1 alternates", [][2]int{{1, 1}, {1, 1}, {1, 1}}, "abcabcabc"},
		{"2/1", [][2]int{{1, 2}, {1, 1}}, "abaaba"},
		{"3/2", [][2]int{{1, 3}, {1, 2}}, "ababa" + "ababa"},
		{"zero weight counts as one", [][2]int{{1, 0}, {1, -3}}, "abab"},
		{"one member", [][2]int{{1, 7}}, "aaa"},
		{"tier 2 only after tier 1", [][2]int{{2, 1}, {1, 1}, {2, 1}, {1, 2}}, "dbddbd"},
		{"priority below 1 counts as 1", [][2]int{{0, 1}, {1, 1}, {2, 5}}, "abab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := members(tc.spec...)
			if got := picks(&SmoothWeighted{}, c, len(tc.picks)); got != tc.picks {
				t.Fatalf("picks %s, want %s", got, tc.picks)
			}
		})
	}
	if got := (&SmoothWeighted{}).Select(nil, nil); got != -1 {
		t.Fatalf("Select on no candidates = %d", got)
	}
}

// positions returns, per member name, the indexes of its picks in seq.
func positions(seq string) map[rune][]int {
	pos := map[rune][]int{}
	for i, r := range seq {
		pos[r] = append(pos[r], i)
	}
	return pos
}

func TestSmoothWeighted90_5_5(t *testing.T) {
	// Every 100 picks hold exactly 90, 5 and 5, and each fallback's picks
	// are exactly 20 apart: never two closer than its weight implies.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	seq := picks(&SmoothWeighted{}, c, 300)
	for w := 0; w+100 <= len(seq); w++ {
		win := seq[w : w+100]
		if a, b, c := strings.Count(win, "a"), strings.Count(win, "b"), strings.Count(win, "c"); a != 90 || b != 5 || c != 5 {
			t.Fatalf("picks %d..%d: a %d, b %d, c %d, want 90/5/5", w, w+99, a, b, c)
		}
	}
	pos := positions(seq)
	for _, r := range "bc" {
		for i := 1; i < len(pos[r]); i++ {
			if gap := pos[r][i] - pos[r][i-1]; gap != 20 {
				t.Fatalf("%c picked at %v: gap %d, want 20", r, pos[r], gap)
			}
		}
	}
}

// maxInWindow is the most picks of name in any n consecutive picks of seq.
func maxInWindow(seq string, name byte, n int) int {
	most := 0
	for w := 0; w+n <= len(seq); w++ {
		most = max(most, strings.Count(seq[w:w+n], string(name)))
	}
	return most
}

func TestSmoothWeightedLowerTier(t *testing.T) {
	// The quota-tight fallbacks: the top member (tier 1) takes everything
	// while it is a candidate; without it, the two tier-2 fallbacks
	// alternate exactly, so any 12 consecutive picks give each 6.
	c := members([2]int{1, 1}, [2]int{2, 1}, [2]int{2, 1})
	s := &SmoothWeighted{}
	if got := picks(s, c, 10); got != "aaaaaaaaaa" {
		t.Fatalf("with tier 1 present: %s", got)
	}
	seq := picks(s, without(c, "a"), 120)
	if want := strings.Repeat("bc", 60); seq != want {
		t.Fatalf("tier 2 picks %s, want bc repeated", seq)
	}
	for _, r := range []byte("bc") {
		if got := maxInWindow(seq, r, 12); got != 6 {
			t.Fatalf("%c has %d of some 12 consecutive picks", r, got)
		}
	}
}

func TestQuotaTightFallbacksAlternateWhenTopIsBenched(t *testing.T) {
	// Issue 9: with 90/5/5, benching the top member at any point of its
	// cycle must not give a fallback a burst. (nginx's one current weight
	// per member carries up to 85 weight units into a set whose total is
	// 10: a fallback then got up to 10 picks in a row, 15 of 20.) And the
	// full set's sequence resumes where it stopped when the top returns.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	want := picks(&SmoothWeighted{}, c, 400)
	for n := 0; n <= 200; n++ {
		s := &SmoothWeighted{}
		before := picks(s, c, n)
		benched := picks(s, without(c, "a"), 40)
		after := picks(s, c, 400-n)
		if !strings.HasPrefix(benched, "bcbc") && !strings.HasPrefix(benched, "cbcb") {
			t.Fatalf("bench after %d picks: fallbacks %s", n, benched)
		}
		for i := 1; i < len(benched); i++ {
			if benched[i] == benched[i-1] {
				t.Fatalf("bench after %d picks: fallbacks %s, not alternating", n, benched)
			}
		}
		if got := before + after; got != want {
			t.Fatalf("bench after %d picks: full-set picks\n%s\nwant\n%s", n, got, want)
		}
	}
}

func TestSmoothWeightedRetryKeepsFirstPicks(t *testing.T) {
	// Every request's first pick that lands on a fails and is retried
	// with a excluded. The retries must not move the first picks: they
	// are the sequence without retries, exactly 90/5/5 of every 100. The
	// retries alternate between b and c, so each fallback's calls, first
	// picks and retries together, stay within one of the other's.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	want := picks(&SmoothWeighted{}, c, 1000)
	for _, tc := range []struct {
		name  string
		retry func(i int) bool
	}{
		{"every a fails", func(int) bool { return true }},
		{"every third request fails on a", func(i int) bool { return i%3 == 0 }},
		{"random 30%", func(i int) bool { return rand.New(rand.NewPCG(uint64(i), 9)).IntN(10) < 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &SmoothWeighted{}
			rest := without(c, "a")
			var first, retries, all strings.Builder
			for i := range 1000 {
				m := c[s.Select(nil, c)]
				first.WriteString(m.Backend.Name)
				all.WriteString(m.Backend.Name)
				if m == c[0] && tc.retry(i) {
					r := rest[s.Select(nil, rest)].Backend.Name
					retries.WriteString(r)
					all.WriteString(r)
				}
			}
			if got := first.String(); got != want {
				t.Fatalf("first picks moved by retries:\n%s\nwant\n%s", got, want)
			}
			rs := retries.String()
			for i := 1; i < len(rs); i++ {
				if rs[i] == rs[i-1] {
					t.Fatalf("retries %s do not alternate", rs)
				}
			}
			b, cc := strings.Count(all.String(), "b"), strings.Count(all.String(), "c")
			if b-cc > 1 || cc-b > 1 {
				t.Fatalf("calls: b %d, c %d", b, cc)
			}
		})
	}
}

func TestSmoothWeightedKeepsBoundedSets(t *testing.T) {
	// 10 members give 1023 candidate sets; only maxLedgers are kept, and
	// picks go on being valid.
	var spec [][2]int
	for range 10 {
		spec = append(spec, [2]int{1, 1})
	}
	c := members(spec...)
	s := &SmoothWeighted{}
	for set := 1; set < 1<<len(c); set++ {
		var sub []*Member
		for i, m := range c {
			if set&(1<<i) != 0 {
				sub = append(sub, m)
			}
		}
		if i := s.Select(nil, sub); i < 0 || i >= len(sub) {
			t.Fatalf("set %b: Select = %d", set, i)
		}
	}
	if len(s.ledgers) != maxLedgers {
		t.Fatalf("%d sets kept, want %d", len(s.ledgers), maxLedgers)
	}
	// The full set, used last, resumes after its one pick; {a, b}, used
	// early, was dropped and starts again.
	if got := picks(s, c, 10); got != "bcdefghija" {
		t.Fatalf("full set picks %s, want bcdefghija", got)
	}
	if got := picks(s, c[:2], 2); got != "ab" {
		t.Fatalf("{a, b} picks %s, want ab (from the start)", got)
	}
}

func TestSmoothWeightedConcurrent(t *testing.T) {
	// Picks from many goroutines form one sequence: 8000 picks of 90/5/5
	// hold exactly 7200/400/400, while other goroutines retry on the
	// fallbacks.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	rest := without(c, "a")
	s := &SmoothWeighted{}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			local := map[string]int{}
			for range 1000 {
				local[c[s.Select(nil, c)].Backend.Name]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range local {
				counts[k] += v
			}
		})
		wg.Go(func() {
			for range 100 {
				if i := s.Select(nil, rest); i < 0 || i > 1 {
					t.Errorf("retry Select = %d", i)
				}
			}
		})
	}
	wg.Wait()
	if counts["a"] != 7200 || counts["b"] != 400 || counts["c"] != 400 {
		t.Fatalf("picks %v, want 7200/400/400", counts)
	}
}

func TestPoolDefaultSelectorIsSmoothPerPool(t *testing.T) {
	// A Pool without a Selector picks by smooth weighted round-robin with
	// state of its own: two pools over the same members do not share it,
	// and a retry (a tried member) picks from the rest.
	c := members([2]int{1, 5}, [2]int{1, 1}, [2]int{1, 1})
	p1 := &Pool{Members: c}
	p2 := &Pool{Members: c}
	var got1, got2 strings.Builder
	for range 7 {
		m, _, _ := p1.next(nil, nil, &memberSet{})
		got1.WriteString(m.Backend.Name)
		m, _, _ = p2.next(nil, nil, &memberSet{})
		got2.WriteString(m.Backend.Name)
	}
	if got1.String() != "aabacaa" || got2.String() != "aabacaa" {
		t.Fatalf("pools picked %s and %s, want aabacaa each", got1.String(), got2.String())
	}
	var tried memberSet
	tried.add(0)
	var retries strings.Builder
	for range 4 {
		m, _, _ := p1.next(nil, nil, &tried)
		retries.WriteString(m.Backend.Name)
	}
	if retries.String() != "bcbc" {
		t.Fatalf("retries %s, want bcbc", retries.String())
	}
	if m, _, _ := p1.next(nil, nil, &memberSet{}); m != c[0] {
		t.Fatalf("first pick after retries %s, want a (the sequence resumes)", m.Backend.Name)
	}
	if _, ok := (&Pool{Selector: PriorityWeighted{}}).selector().(PriorityWeighted); !ok {
		t.Fatal("a Pool's own Selector is not used")
	}
}

func BenchmarkSmoothWeighted(b *testing.B) {
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	rest := c[1:]
	for _, bc := range []struct {
		name string
		sets [][]*Member
	}{
		{"one set", [][]*Member{c}},
		{"first pick and retry", [][]*Member{c, rest}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := &SmoothWeighted{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Select(nil, bc.sets[i%len(bc.sets)])
				i++
			}
		})
	}
}

func BenchmarkPriorityWeighted(b *testing.B) {
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	b.ReportAllocs()
	for b.Loop() {
		PriorityWeighted{}.Select(nil, c)
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
