package route

import (
	"testing"
	"time"
)

// spread returns n times rising evenly from lo to hi.
func spread(n int, lo, hi time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = lo + (hi-lo)*time.Duration(i)/time.Duration(n-1)
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
