package route

import (
	"math"
	"testing"
	"time"
)

// poissonTail is P(N >= k) for N Poisson with the given mean, summed
// directly, for checking pileUpNeed.
func poissonTail(mean float64, k int) float64 {
	below, term := 0.0, math.Exp(-mean)
	for i := range k {
		below += term
		term *= mean / float64(i+1)
	}
	return 1 - below
}

func TestPileUpNeed(t *testing.T) {
	tests := []struct {
		mean float64
		want int
	}{
		{0, minPileUp},
		{math.NaN(), minPileUp},
		{0.01, minPileUp},
		{0.06, minPileUp}, // 3 s median, spread 0.3, 2 req/s: about 0.06 calls past p90 at once
		{0.5, 6},
		{3, 12},
		{30, 53},
	}
	for _, tc := range tests {
		got := pileUpNeed(tc.mean)
		if got != tc.want {
			t.Errorf("pileUpNeed(%g) = %d, want %d", tc.mean, got, tc.want)
		}
		if tc.mean > 0 && (poissonTail(tc.mean, got) >= pileUpAlpha || got > minPileUp && poissonTail(tc.mean, got-1) < pileUpAlpha) {
			t.Errorf("pileUpNeed(%g) = %d is not the least count past alpha: tails %g, %g", tc.mean, got, poissonTail(tc.mean, got-1), poissonTail(tc.mean, got))
		}
	}
}

// poolWith is a pool of one backend whose plain calls took ds.
func poolWith(ds ...time.Duration) (*Pool, *Backend) {
	b := &Backend{Name: "weu"}
	for _, d := range ds {
		b.lat.observe(false, d)
	}
	return &Pool{Members: []*Member{{Backend: b}}}, b
}

// spread returns n times rising evenly from lo to hi.
func spread(n int, lo, hi time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = lo + (hi-lo)*time.Duration(i)/time.Duration(n-1)
	}
	return out
}

// repeat returns n times d.
func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestPileUpCause(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		samples []time.Duration
		waits   []time.Duration
		check   bool
	}{
		{"no history: nothing judged", nil, []time.Duration{20 * s, 20 * s, 20 * s}, false},
		{"seven answers: nothing judged", spread(7, 2*s, 4*s), []time.Duration{20 * s, 20 * s, 20 * s}, false},
		{"three calls past a steady backend's usual time", spread(64, 2*s, 4*s), []time.Duration{5 * s, 5 * s, 5 * s, 1 * s}, true},
		{"two are not enough", spread(64, 2*s, 4*s), []time.Duration{20 * s, 20 * s, 1 * s}, false},
		{"a fast backend's calls are not long under a second", spread(64, 100*time.Millisecond, 200*time.Millisecond), []time.Duration{900 * time.Millisecond, 900 * time.Millisecond, 900 * time.Millisecond}, false},
		{"a fast backend's calls piling up past a second", spread(64, 100*time.Millisecond, 200*time.Millisecond), []time.Duration{1100 * time.Millisecond, 1200 * time.Millisecond, 1300 * time.Millisecond}, true},
		// A thousand calls arriving while others wait: a few of them
		// waiting past the 90th percentile at once is ordinary.
		{"a few long waits among many calls", spread(64, 2*s, 4*s), append(repeat(5, 5*s), repeat(1000, s)...), false},
		{"many long waits among many calls", spread(64, 2*s, 4*s), append(repeat(15, 5*s), repeat(1000, s)...), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, b := poolWith(tc.samples...)
			why, _ := p.pileUpCause(b, tc.waits, false)
			if (why != "") != tc.check {
				t.Fatalf("pileUpCause = %q, want a check: %v", why, tc.check)
			}
		})
	}
}

// backends is n backends made by mk.
func backends(mk func() *Backend, n int) []*Backend {
	var out []*Backend
	for range n {
		out = append(out, mk())
	}
	return out
}

func TestSlowThresholdFromPeers(t *testing.T) {
	s := time.Second
	fast := func() *Backend {
		b := &Backend{Name: "fast"}
		for range minSamples {
			b.lat.observe(false, 400*time.Millisecond)
		}
		return b
	}
	slow := func() *Backend {
		b := &Backend{Name: "slow"}
		for range minSamples {
			b.lat.observe(false, 4*s)
		}
		return b
	}
	tests := []struct {
		name      string
		peers     []*Backend
		own       []time.Duration
		slowAfter time.Duration
		check     time.Duration
	}{
		{"nothing known: the defaults", nil, nil, defaultSlowPlain, defaultCheckTimeout},
		{"a fast peer", []*Backend{fast()}, nil, minSlowPlain, minCheckTimeout},
		{"a slow peer", []*Backend{slow()}, nil, 12 * s, maxCheckTimeout},
		{"a few answers of its own count with its peers'", []*Backend{fast()}, []time.Duration{5 * s}, 15 * s, maxCheckTimeout},
		{"eight of its own: its own alone", []*Backend{slow()}, spread(8, 300*time.Millisecond, 400*time.Millisecond), minSlowPlain, minCheckTimeout},
		// Peers are read until there are peerBuf samples: the first
		// 4*latencySamples/minSamples fast peers fill them, the slow ones
		// after them are not read.
		{"the first peers' samples alone", append(backends(fast, peerBuf/minSamples), backends(slow, 60)...), nil, minSlowPlain, minCheckTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{Name: "new"}
			for _, d := range tc.own {
				b.lat.observe(false, d)
			}
			p := &Pool{Members: []*Member{{Backend: b}}}
			for _, peer := range tc.peers {
				p.Members = append(p.Members, &Member{Backend: peer})
			}
			if got := p.SlowAfter(b, false); got != tc.slowAfter {
				t.Errorf("SlowAfter = %v, want %v", got, tc.slowAfter)
			}
			if got := p.CheckTimeout(b); got != tc.check {
				t.Errorf("CheckTimeout = %v, want %v", got, tc.check)
			}
		})
	}
}
