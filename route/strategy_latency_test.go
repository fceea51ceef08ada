package route

import (
	"strings"
	"testing"
	"time"
)

// measure gives b n answers of the kind, each taking d to its first byte.
func measure(b *Backend, stream bool, d time.Duration, n int) {
	for range n {
		b.lat.observe(stream, d)
	}
}

// latPicks makes n picks from c for requests of the kind.
func latPicks(s Selector, stream bool, c []*Member, n int) string {
	var b strings.Builder
	r := &Request{Stream: stream}
	for range n {
		b.WriteString(c[s.Select(r, c)].Backend.Name)
	}
	return b.String()
}

const ms = time.Millisecond

func TestRingP50(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    time.Duration
		ok      bool
	}{
		{"none", nil, 0, false},
		{"too few", []time.Duration{1, 2, 3, 4, 5, 6, 7}, 0, false},
		{"eight: the fourth", []time.Duration{8, 1, 7, 2, 6, 3, 5, 4}, 4, true},
		{"nine: the fifth", []time.Duration{9, 1, 8, 2, 7, 3, 6, 4, 5}, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ring
			for _, d := range tc.samples {
				r.add(d)
			}
			if got, ok := r.p50(); got != tc.want || ok != tc.ok {
				t.Fatalf("p50() = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	// The ring keeps the last 64: 64 new samples replace the old.
	var r ring
	for range latencySamples {
		r.add(time.Second)
	}
	for range latencySamples {
		r.add(ms)
	}
	if got, _ := r.p50(); got != ms {
		t.Fatalf("p50 after the ring turned over = %v", got)
	}
}

func TestLowestLatencySequence(t *testing.T) {
	b19 := strings.Repeat("b", 19)
	a19 := strings.Repeat("a", 19)
	for _, tc := range []struct {
		name   string
		spec   [][2]int
		lat    []time.Duration // per member, 8 samples each; 0 for none
		s      *LowestLatency
		stream bool
		want   string
	}{
		// Picks 20, 40, 60 explore: the least recently picked of the tier,
		// a and c in turn (never picked ones first, in configuration order).
		{"fastest wins, every 20th explores", [][2]int{{1, 1}, {1, 1}, {1, 1}},
			[]time.Duration{300 * ms, 100 * ms, 200 * ms}, &LowestLatency{}, false,
			b19 + "a" + b19 + "c" + b19 + "a"},
		{"explore every 5", [][2]int{{1, 1}, {1, 1}, {1, 1}},
			[]time.Duration{300 * ms, 100 * ms, 200 * ms}, &LowestLatency{Explore: 5}, false,
			"bbbba" + "bbbbc" + "bbbba"},
		{"explore 1 is round-robin", [][2]int{{1, 1}, {1, 1}, {1, 1}},
			[]time.Duration{300 * ms, 100 * ms, 200 * ms}, &LowestLatency{Explore: 1}, false,
			"abcabc"},
		{"negative explore never explores", [][2]int{{1, 1}, {1, 1}},
			[]time.Duration{300 * ms, 100 * ms}, &LowestLatency{Explore: -1}, false,
			strings.Repeat("b", 45)},
		// a and b are within 10%: their smooth 2/1 sequence, aba.
		{"within the margin ties go by weight", [][2]int{{1, 2}, {1, 1}, {1, 5}},
			[]time.Duration{100 * ms, 109 * ms, 200 * ms}, &LowestLatency{}, false,
			"abaabaaba"},
		{"outside the margin", [][2]int{{1, 2}, {1, 1}},
			[]time.Duration{100 * ms, 111 * ms}, &LowestLatency{}, false,
			"aaaaaaaaa"},
		{"wider margin", [][2]int{{1, 2}, {1, 1}},
			[]time.Duration{100 * ms, 111 * ms}, &LowestLatency{Margin: 0.2}, false,
			"abaabaaba"},
		{"negative margin: exact ties only", [][2]int{{1, 2}, {1, 1}},
			[]time.Duration{100 * ms, 101 * ms}, &LowestLatency{Margin: -1}, false,
			"aaaaaaaaa"},
		{"exact tie with negative margin", [][2]int{{1, 2}, {1, 1}},
			[]time.Duration{100 * ms, 100 * ms}, &LowestLatency{Margin: -1}, false,
			"abaabaaba"},
		// b and c were never measured: they take turns for 8 picks each
		// (their answers never come in this test), then a, the only one
		// measured, takes the rest but the explores: b at 20 (picked
		// last at 15), c at 40.
		{"unmeasured members first, 8 picks each", [][2]int{{1, 1}, {1, 1}, {1, 1}},
			[]time.Duration{100 * ms, 0, 0}, &LowestLatency{}, false,
			strings.Repeat("bc", 8) + "aaa" + "b" + a19 + "c"},
		{"none measured: by weight", [][2]int{{1, 3}, {1, 1}},
			[]time.Duration{0, 0}, &LowestLatency{}, false,
			// The smooth 3/1 sequence is aaba; pick 20 explores a (b was
			// picked at 19), and the smooth sequence resumes.
			strings.Repeat("ab", 8) + "aaba" + "aaab"},
		{"plain answers do not measure streams", [][2]int{{1, 1}, {1, 1}},
			[]time.Duration{100 * ms, 200 * ms}, &LowestLatency{}, true,
			strings.Repeat("ab", 8) + "aba"},
		{"tier 2 is not explored", [][2]int{{2, 1}, {1, 1}, {1, 1}},
			[]time.Duration{0, 100 * ms, 200 * ms}, &LowestLatency{Explore: 2}, false,
			"bcbcbc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := members(tc.spec...)
			for i, d := range tc.lat {
				if d > 0 {
					measure(c[i].Backend, false, d, minSamples)
				}
			}
			if got := latPicks(tc.s, tc.stream, c, len(tc.want)); got != tc.want {
				t.Fatalf("picks\n%s, want\n%s", got, tc.want)
			}
		})
	}
}

func TestLowestLatencyByKind(t *testing.T) {
	// a is fast to stream and slow to answer whole; b the other way round.
	c := members([2]int{1, 1}, [2]int{1, 1})
	measure(c[0].Backend, true, 100*ms, minSamples)
	measure(c[0].Backend, false, 5*time.Second, minSamples)
	measure(c[1].Backend, true, 900*ms, minSamples)
	measure(c[1].Backend, false, 2*time.Second, minSamples)
	s := &LowestLatency{}
	for _, tc := range []struct {
		name   string
		stream bool
		want   string
	}{
		{"streams", true, "aaaaa"},
		{"plain", false, "bbbbb"},
		{"streams again", true, "aaaaa"},
	} {
		if got := latPicks(s, tc.stream, c, len(tc.want)); got != tc.want {
			t.Fatalf("%s: picks %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestLowestLatencyNoticesRecovery(t *testing.T) {
	// a was slow (a full ring of 1 s); b answers in 200 ms. Every pick gets
	// its answer: a's now take 100 ms. a gets only the explores, every
	// 20th pick, until 32 of its 64 samples are new and its median is
	// 100 ms: from pick 641 on, a takes every pick but the explores of b.
	c := members([2]int{1, 1}, [2]int{1, 1})
	measure(c[0].Backend, false, time.Second, latencySamples)
	measure(c[1].Backend, false, 200*ms, latencySamples)
	s := &LowestLatency{}
	var got, want strings.Builder
	for n := 1; n <= 800; n++ {
		m := c[s.Select(nil, c)]
		got.WriteString(m.Backend.Name)
		if m == c[0] {
			m.Backend.lat.observe(false, 100*ms)
		} else {
			m.Backend.lat.observe(false, 200*ms)
		}
		switch {
		case n <= 640 && n%20 == 0, n > 640 && n%20 != 0:
			want.WriteString("a")
		default:
			want.WriteString("b")
		}
	}
	if got.String() != want.String() {
		t.Fatalf("picks\n%s\nwant\n%s", got.String(), want.String())
	}
}

func TestLowestLatencyConcurrent(t *testing.T) {
	// Picks from many goroutines form one sequence: of 8000, the 400
	// explores go to b and c in turn, and the fastest, a, takes the rest.
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	measure(c[0].Backend, false, 100*ms, minSamples)
	measure(c[1].Backend, false, 300*ms, minSamples)
	measure(c[2].Backend, false, 300*ms, minSamples)
	s := &LowestLatency{}
	counts := concurrentPicks(s, c, 8, 1000)
	if counts["a"] != 7600 || counts["b"] != 200 || counts["c"] != 200 {
		t.Fatalf("picks %v, want 7600/200/200", counts)
	}
}

func BenchmarkLowestLatency(b *testing.B) {
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	for i, m := range c {
		measure(m.Backend, true, time.Duration(100+i)*ms, latencySamples)
	}
	s := &LowestLatency{}
	r := &Request{Stream: true}
	b.ReportAllocs()
	for b.Loop() {
		s.Select(r, c)
	}
}

func TestLowestLatencyRetries(t *testing.T) {
	// A request's retries, each without the members already tried, go to
	// the next fastest in turn.
	c := members([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1})
	measure(c[0].Backend, true, 300*ms, minSamples)
	measure(c[1].Backend, true, 100*ms, minSamples)
	measure(c[2].Backend, true, 200*ms, minSamples)
	s := &LowestLatency{}
	r := &Request{Stream: true}
	var got strings.Builder
	for cands := c; len(cands) > 0; {
		m := cands[s.Select(r, cands)]
		got.WriteString(m.Backend.Name)
		cands = without(cands, m.Backend.Name)
	}
	if got.String() != "bca" {
		t.Fatalf("first pick and retries %s, want bca", got.String())
	}
}
