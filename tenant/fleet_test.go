package tenant

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// memKV is a shared store in memory that can go down and lose its
// contents, as a Redis server restarted without persistence does.
type memKV struct {
	mu   sync.Mutex
	m    map[string][]byte
	down bool
}

var errDown = errors.New("store down")

func (s *memKV) Put(_ context.Context, key string, v []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errDown
	}
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = v
	return nil
}

func (s *memKV) List(_ context.Context, prefix string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, errDown
	}
	out := map[string][]byte{}
	for k, v := range s.m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// fleetRun runs replicas of a limiter that share a key's limits through
// a store, on a fake clock, and counts what the fleet admits.
type fleetRun struct {
	t      *testing.T
	c      *fakeclock.Clock
	kv     KV
	forget func(name string) // removes a replica's entry, as its TTL would
	p      *Principal
	reps   map[string]*Limiter
	order  []string
	steps  int
}

// fleetRPM is the key's limit in the fleet tests: 10 at once.
const fleetRPM = 60

func newFleetRun(t *testing.T, kv KV, forget func(string), names ...string) *fleetRun {
	f := &fleetRun{t: t, c: fakeclock.New(), kv: kv, forget: forget, p: key("k", Limits{RPM: fleetRPM}), reps: map[string]*Limiter{}}
	for _, n := range names {
		f.add(n)
	}
	return f
}

func (f *fleetRun) add(name string) {
	f.reps[name] = NewLimiter(f.c, nil, nil)
	f.order = append(f.order, name)
}

func (f *fleetRun) remove(name string) {
	delete(f.reps, name)
	f.order = slicesDelete(f.order, name)
	if f.forget != nil {
		f.forget(name)
	}
}

func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// run runs d of simulated time in steps of 100 ms: each replica is
// offered a request of the key every 200 ms (15 times the limit with
// three replicas), and exchanges every 500 ms. It returns how many the
// fleet admitted.
func (f *fleetRun) run(d time.Duration) int {
	admitted := 0
	for range int(d / (100 * time.Millisecond)) {
		f.steps++
		f.c.Advance(100 * time.Millisecond)
		for _, name := range f.order {
			l := f.reps[name]
			if f.steps%2 == 0 {
				if tk, r := l.Admit(f.p, "pool", "pool", 0); r == nil {
					admitted++
					tk.Done(0, false, 0)
				} else if r.RetryAfter > 20*time.Second {
					f.t.Errorf("replica %s: Retry-After %s, over the refill of two buckets", name, r.RetryAfter)
				}
			}
			if f.steps%5 == 0 {
				ex := &StoreExchange{Store: f.kv, ID: name, TTL: time.Minute}
				l.Sync(context.Background(), ex) // a failure cuts the share, as in the gateway
			}
		}
	}
	return admitted
}

// within fails unless admitted over minutes is within 10% of the limit.
func (f *fleetRun) within(what string, admitted int, minutes float64) {
	f.t.Helper()
	want := fleetRPM * minutes
	if lo, hi := 0.9*want, 1.1*want; float64(admitted) < lo || float64(admitted) > hi {
		f.t.Errorf("%s: %d admitted in %g minutes at rpm %d; want %.0f to %.0f", what, admitted, minutes, fleetRPM, lo, hi)
	} else {
		f.t.Logf("%s: %d admitted in %g minutes at rpm %d", what, admitted, minutes, fleetRPM)
	}
}

// fleetStore is the store the fleet tests run on: restart makes it lose
// its contents between two exchanges, down makes it fail (and lose them),
// up makes it answer again.
type fleetStore struct {
	kv      KV
	forget  func(string)
	restart func()
	down    func()
	up      func()
}

func memStore() fleetStore {
	kv := &memKV{}
	return fleetStore{kv: kv,
		forget:  func(n string) { kv.mu.Lock(); delete(kv.m, "limits/"+n); kv.mu.Unlock() },
		restart: func() { kv.mu.Lock(); kv.m = nil; kv.mu.Unlock() },
		down:    func() { kv.mu.Lock(); kv.down = true; kv.m = nil; kv.mu.Unlock() },
		up:      func() { kv.mu.Lock(); kv.down = false; kv.mu.Unlock() },
	}
}

func testFreshFleet(t *testing.T, s fleetStore) {
	f := newFleetRun(t, s.kv, s.forget, "a", "b", "c")
	n := f.run(3 * time.Minute)
	f.within("fresh fleet (one burst of 10 on top)", n-10, 3)
}

func testRollout(t *testing.T, s fleetStore) {
	f := newFleetRun(t, s.kv, s.forget, "a", "b", "c")
	f.run(2 * time.Minute)
	for _, pair := range [][2]string{{"a", "a2"}, {"b", "b2"}, {"c", "c2"}} {
		f.remove(pair[0])
		f.add(pair[1])
		f.within("rollout: "+pair[0]+" replaced by "+pair[1], f.run(time.Minute), 1)
	}
	f.within("after the rollout", f.run(2*time.Minute), 2)
}

func testScaleUp(t *testing.T, s fleetStore) {
	f := newFleetRun(t, s.kv, s.forget, "a", "b")
	f.run(2 * time.Minute)
	f.add("c")
	f.within("scale-up: c joins", f.run(time.Minute), 1)
	f.within("after the scale-up", f.run(2*time.Minute), 2)
}

func testRestartBetweenExchanges(t *testing.T, s fleetStore) {
	f := newFleetRun(t, s.kv, s.forget, "a", "b", "c")
	f.run(2 * time.Minute)
	s.restart()
	f.within("store restarted between two exchanges", f.run(time.Minute), 1)
	f.within("after the restart", f.run(2*time.Minute), 2)
}

func testOutageAndRestart(t *testing.T, s fleetStore) {
	f := newFleetRun(t, s.kv, s.forget, "a", "b", "c")
	f.run(2 * time.Minute)
	s.down()
	n := f.run(10 * time.Second)
	s.up()
	n += f.run(50 * time.Second)
	f.within("store down 10 s and restarted empty", n, 1)
	f.within("after the restart", f.run(2*time.Minute), 2)
}

func TestFleetFreshKeepsToTheLimit(t *testing.T) { testFreshFleet(t, memStore()) }

func TestFleetRolloutKeepsToTheLimit(t *testing.T) { testRollout(t, memStore()) }

func TestFleetScaleUpKeepsToTheLimit(t *testing.T) { testScaleUp(t, memStore()) }

func TestFleetStoreRestartBetweenExchangesKeepsToTheLimit(t *testing.T) {
	testRestartBetweenExchanges(t, memStore())
}

func TestFleetStoreOutageAndRestartKeepsToTheLimit(t *testing.T) {
	testOutageAndRestart(t, memStore())
}
