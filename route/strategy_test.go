package route

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewStrategy(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Selector
	}{
		{"", &SmoothWeighted{}},
		{"priority", &SmoothWeighted{}},
		{"least_busy", &LeastBusy{}},
		{"latency", &LowestLatency{}},
		{"affinity", &Affinity{}},
		{"headroom", &Headroom{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStrategy(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			switch tc.want.(type) {
			case *SmoothWeighted:
				_, ok = s.(*SmoothWeighted)
			case *LeastBusy:
				_, ok = s.(*LeastBusy)
			case *LowestLatency:
				_, ok = s.(*LowestLatency)
			case *Affinity:
				_, ok = s.(*Affinity)
			case *Headroom:
				_, ok = s.(*Headroom)
			}
			if !ok {
				t.Fatalf("NewStrategy(%q) = %T, want %T", tc.name, s, tc.want)
			}
			if again, _ := NewStrategy(tc.name); again == s {
				t.Fatalf("NewStrategy(%q) returned the same Selector twice", tc.name)
			}
		})
	}
}

func TestNewStrategyUnknown(t *testing.T) {
	for _, name := range []string{"round_robin", "Priority", "least-busy", " latency"} {
		t.Run(name, func(t *testing.T) {
			s, err := NewStrategy(name)
			if s != nil || !errors.Is(err, ErrUnknownStrategy) {
				t.Fatalf("NewStrategy(%q) = %v, %v; want ErrUnknownStrategy", name, s, err)
			}
			msg := err.Error()
			for _, known := range Strategies() {
				if !strings.Contains(msg, known) {
					t.Fatalf("error %q does not list %q", msg, known)
				}
			}
			if !strings.Contains(msg, `"`+name+`"`) {
				t.Fatalf("error %q does not quote the name", msg)
			}
		})
	}
}

func TestStrategiesReturnsACopy(t *testing.T) {
	s := Strategies()
	if s[0] != StrategyPriority || len(s) != 5 {
		t.Fatalf("Strategies() = %v", s)
	}
	s[0] = "changed"
	if Strategies()[0] != StrategyPriority {
		t.Fatal("Strategies() shares its slice")
	}
}

// everyStrategy returns a new Selector of each strategy by name, with a
// Headroom that knows some quotas.
func everyStrategy() map[string]Selector {
	out := map[string]Selector{}
	for _, name := range Strategies() {
		s, err := NewStrategy(name)
		if err != nil {
			panic(err)
		}
		if h, ok := s.(*Headroom); ok {
			left := map[string]float64{"a": 0.05, "b": 0.5}
			h.Remaining = func(b *Backend) (float64, bool) {
				v, ok := left[b.Name]
				return v, ok
			}
		}
		out[name] = s
	}
	return out
}

func TestStrategiesKeepPriorityTiers(t *testing.T) {
	// Whatever the strategy: only the best tier present is picked from
	// (tier 2 here, tier 1 has no candidate; the tier-2 member d is idle,
	// unmeasured, full and would win any key, yet only tier 1 is chosen when
	// present), and no candidates give -1.
	bodies := []string{`{}`, `{"user":"u1"}`, `{"prompt_cache_key":"k2"}`, `{"metadata":{"user_id":"x"}}`}
	for name, s := range everyStrategy() {
		t.Run(name, func(t *testing.T) {
			c := members([2]int{1, 1}, [2]int{1, 3}, [2]int{2, 100}, [2]int{3, 100})
			c[0].Backend.beginAttempt() // busy, slow, nearly out of quota: still tier 1
			for range minSamples {
				c[0].Backend.lat.observe(false, time.Hour)
				c[1].Backend.lat.observe(false, time.Hour)
			}
			for i := range 200 {
				r := &Request{Body: []byte(bodies[i%len(bodies)])}
				if got := s.Select(r, c); got != 0 && got != 1 {
					t.Fatalf("pick %d: %d, not tier 1", i, got)
				}
				if got := s.Select(r, c[2:]); got != 0 {
					t.Fatalf("pick %d without tier 1: %d, not tier 2", i, got)
				}
				if got := s.Select(r, c[3:]); got != 0 {
					t.Fatalf("pick %d of tier 3 alone: %d", i, got)
				}
			}
			if got := s.Select(&Request{Body: []byte(`{}`)}, nil); got != -1 {
				t.Fatalf("Select on no candidates = %d", got)
			}
			if got := s.Select(nil, c[2:]); got != 0 {
				t.Fatalf("Select with a nil request = %d", got)
			}
		})
	}
}

func TestStrategiesConcurrent(t *testing.T) {
	// Many goroutines share one Selector of each strategy, picking from
	// the full set and, as retries do, from subsets, while attempts begin
	// and end and latencies arrive. Run under -race; each pick must be a
	// candidate of the best tier.
	for name, s := range everyStrategy() {
		t.Run(name, func(t *testing.T) {
			c := members([2]int{1, 5}, [2]int{1, 3}, [2]int{1, 1}, [2]int{2, 1})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 500 {
						sub := c[i%3:]
						r := &Request{Body: []byte(`{"user":"u` + itoa(g*1000+i) + `"}`), Stream: i%2 == 0}
						if i%4 == 0 {
							r.Body = []byte(`{}`)
						}
						j := s.Select(r, sub)
						if j < 0 || j >= len(sub) || sub[j].Priority != 1 {
							t.Errorf("Select = %d of %d", j, len(sub))
							return
						}
						b := sub[j].Backend
						b.beginAttempt()
						b.lat.observe(r.Stream, time.Duration(100+j*10)*time.Millisecond)
						b.endAttempt()
					}
				})
			}
			wg.Wait()
			for _, m := range c {
				if n := m.Backend.InFlight(); n != 0 {
					t.Fatalf("%s has %d in flight", m.Backend.Name, n)
				}
			}
		})
	}
}

// concurrentPicks makes goroutines times each picks of s from c at once,
// and counts them by backend.
func concurrentPicks(s Selector, c []*Member, goroutines, each int) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			local := map[string]int{}
			for range each {
				local[c[s.Select(nil, c)].Backend.Name]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range local {
				counts[k] += v
			}
		})
	}
	wg.Wait()
	return counts
}
