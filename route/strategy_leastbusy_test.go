package route

import (
	"strings"
	"sync"
	"testing"
)

// busyScript drives a Selector through steps: a lower-case name is a pick
// that must be that member, whose attempt then begins; an upper-case name
// ends one attempt on that member. It returns the picks.
func busyScript(t *testing.T, s Selector, c []*Member, script string) string {
	t.Helper()
	var got strings.Builder
	for _, step := range script {
		if step >= 'A' && step <= 'Z' {
			c[step-'A'].Backend.endAttempt()
			continue
		}
		m := c[s.Select(nil, c)]
		m.Backend.beginAttempt()
		got.WriteString(m.Backend.Name)
	}
	return got.String()
}

func TestLeastBusySequence(t *testing.T) {
	// Each pick is the member with the fewest attempts in flight; ties go
	// by smooth weighted round-robin among the tied, each tied set in its
	// own sequence.
	for _, tc := range []struct {
		name   string
		spec   [][2]int
		script string // picks as lower-case names, ends as upper-case
		want   string
	}{
		// All idle: a (tie of three, weights 1/1/1), then b (b and c tied),
		// then c (alone); all at one: the three-way tie's second pick, b.
		{"equal weights fill evenly", [][2]int{{1, 1}, {1, 1}, {1, 1}}, "xxxx", "abcb"},
		// Attempts ending at once: each pick is the three-way tie, whose
		// smooth sequence for 5/1/1 is aabacaa.
		{"idle ties follow weights", [][2]int{{1, 5}, {1, 1}, {1, 1}}, "xAxAxBxAxCxAxA", "aabacaa"},
		// a stays busy with a long stream: b and c alternate by their own
		// tie, whatever a's weight.
		{"a busy member is passed over", [][2]int{{1, 90}, {1, 5}, {1, 5}}, "xxBxCxBxC", "abcbc"},
		// Weights of 3 and 1, nothing ending: a (the idle tie), b (idle),
		// a (the tie at one each, 3/1's second pick), b (idle by one): the
		// weight counts only on ties.
		{"in flight beats weight", [][2]int{{1, 3}, {1, 1}}, "xxxx", "abab"},
		{"tier 2 only without tier 1", [][2]int{{2, 1}, {1, 1}, {2, 1}}, "xxxBx", "bbbb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := members(tc.spec...)
			script := strings.ReplaceAll(tc.script, "x", "p") // any lower-case letter picks
			if got := busyScript(t, &LeastBusy{}, c, script); got != tc.want {
				t.Fatalf("picks %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLeastBusyCountsOtherPools(t *testing.T) {
	// The count is the backend's, shared by every pool it is in: attempts
	// of another pool on a make b the pick here.
	c := members([2]int{1, 1}, [2]int{1, 1})
	other := &Member{Backend: c[0].Backend}
	other.Backend.beginAttempt()
	s := &LeastBusy{}
	if got := picks(s, c, 3); got != "bbb" {
		t.Fatalf("picks %s, want bbb", got)
	}
	other.Backend.endAttempt()
	if got := picks(s, c, 4); got != "abab" {
		t.Fatalf("picks %s after a's attempt ended, want abab", got)
	}
}

func TestLeastBusyConcurrent(t *testing.T) {
	// Picks from many goroutines with no attempt held are the smooth
	// sequence of the full set: exactly 7200/400/400 of 8000. Then
	// goroutines begin and end attempts around their picks (under -race),
	// and the counts come back to zero.
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	s := &LeastBusy{}
	counts := concurrentPicks(s, c, 8, 1000)
	if counts["a"] != 7200 || counts["b"] != 400 || counts["c"] != 400 {
		t.Fatalf("idle picks %v, want 7200/400/400", counts)
	}
	busy := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				b := busy[s.Select(nil, busy)].Backend
				b.beginAttempt()
				b.endAttempt()
			}
		})
	}
	wg.Wait()
	for _, m := range busy {
		if n := m.Backend.InFlight(); n != 0 {
			t.Fatalf("%s: %d in flight", m.Backend.Name, n)
		}
	}
}

func BenchmarkLeastBusy(b *testing.B) {
	c := members([2]int{1, 90}, [2]int{1, 5}, [2]int{1, 5})
	s := &LeastBusy{}
	b.ReportAllocs()
	for b.Loop() {
		s.Select(nil, c)
	}
}
