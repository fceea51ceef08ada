package fleet_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/route"
)

// flaky is a Store whose every call fails while down is set.
type flaky struct {
	fleet.Store
	down atomic.Bool
}

var errDown = errors.New("store down")

func (f *flaky) err(ctx context.Context) error {
	if f.down.Load() {
		return errDown
	}
	return ctx.Err()
}

func (f *flaky) Publish(ctx context.Context, m []byte) error {
	if err := f.err(ctx); err != nil {
		return err
	}
	return f.Store.Publish(ctx, m)
}

func (f *flaky) Subscribe(ctx context.Context) (<-chan []byte, error) {
	if err := f.err(ctx); err != nil {
		return nil, err
	}
	return f.Store.Subscribe(ctx)
}

func (f *flaky) Put(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	if err := f.err(ctx); err != nil {
		return err
	}
	return f.Store.Put(ctx, k, v, ttl)
}

func (f *flaky) List(ctx context.Context, p string) (map[string][]byte, error) {
	if err := f.err(ctx); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, p)
}

func (f *flaky) Count(ctx context.Context, key, id string, now time.Time, window time.Duration) (int, error) {
	if err := f.err(ctx); err != nil {
		return 0, err
	}
	return f.Store.Count(ctx, key, id, now, window)
}

func (f *flaky) Acquire(ctx context.Context, k, h string, ttl time.Duration) (bool, error) {
	if err := f.err(ctx); err != nil {
		return false, err
	}
	return f.Store.Acquire(ctx, k, h, ttl)
}

// host is a Host of real breakers.
type host struct {
	mu       sync.Mutex
	breakers map[string]*breaker.Breaker
	applied  []fleet.Action
}

func (h *host) Breaker(b string) *breaker.Breaker { return h.breakers[b] }
func (h *host) Quota(string) *route.LocalQuota    { return nil }
func (h *host) Failovers(string, int, time.Time)  {}
func (h *host) InFlight() map[string]int          { return nil }
func (h *host) Backends() []string                { return []string{"weu"} }
func (h *host) Apply(a fleet.Action) error {
	h.mu.Lock()
	h.applied = append(h.applied, a)
	h.mu.Unlock()
	return nil
}

// runOne runs a replica of o in a synctest bubble, and returns it once it
// has settled, with the function that stops it.
func runOne(t *testing.T, o fleet.Options) (*fleet.Replica, func()) {
	t.Helper()
	r, err := fleet.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	synctest.Wait()
	return r, func() { cancel(); <-done }
}

// runPair runs replicas "a" and "b" of ha and hb on mem, in a synctest
// bubble, and returns them once both have joined, with the function that
// stops them.
func runPair(t *testing.T, mem *fleet.Memory, ha, hb fleet.Host) (a, b *fleet.Replica, stop func()) {
	t.Helper()
	a, _ = fleet.New(fleet.Options{Store: mem.View(), Host: ha, ID: "a"})
	b, _ = fleet.New(fleet.Options{Store: mem.View(), Host: hb, ID: "b"})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	wg.Go(func() { b.Run(ctx) })
	synctest.Wait()
	return a, b, func() { cancel(); wg.Wait() }
}

// TestReplicaCarriesOnWhenTheStoreFails: a replica whose store stops
// answering says so once, takes the notifications on itself, and shares
// again when the store is back.
func TestReplicaCarriesOnWhenTheStoreFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &flaky{Store: fleet.NewMemory().View()}
		var mu sync.Mutex
		var health []bool
		r, stop := runOne(t, fleet.Options{Store: f, Host: &host{}, ID: "a", OnHealth: func(up bool) {
			mu.Lock()
			health = append(health, up)
			mu.Unlock()
		}})
		if !r.Up() || !r.Joined() || !r.Leader() {
			t.Fatalf("alone with a working store: up %v joined %v leader %v", r.Up(), r.Joined(), r.Leader())
		}
		f.down.Store(true)
		time.Sleep(2 * fleet.DefaultHeartbeat) // the bubble's clock
		synctest.Wait()
		if r.Up() || !r.Leader() {
			t.Fatalf("store down: up %v leader %v; want down, and notifying alone", r.Up(), r.Leader())
		}
		f.down.Store(false)
		time.Sleep(2 * fleet.DefaultHeartbeat)
		synctest.Wait()
		if !r.Up() {
			t.Fatal("the store is back but the replica does not share")
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if len(health) != 2 || health[0] || !health[1] {
			t.Fatalf("health reports %v, want [false true]", health)
		}
	})
}

// TestReplicaAdoptsATripWithTheProbeLeftToItsHolder: a trip another
// replica decided is adopted past its end by the probe grace, so that
// only the lease holder probes; one that closes on its Retry-After is
// adopted as it is.
func TestReplicaAdoptsATripWithTheProbeLeftToItsHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		newHost := func() *host {
			return &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 1, Trip: 10 * time.Second, FollowRetryAfter: true})}}
		}
		ha, hb := newHost(), newHost()
		a, _, stop := runPair(t, mem, ha, hb)
		// A's breaker opens on a 503 and a's replica is told.
		var trs []breaker.Transition
		br := breaker.New("weu", breaker.Settings{Failures: 1, Trip: 10 * time.Second, OnTransition: func(t breaker.Transition) { trs = append(trs, t) }})
		ha.breakers["weu"] = br
		done, _ := br.Allow()
		done(breaker.Outcome{Result: breaker.Failure, Cause: "503"})
		a.Transition(trs[0])
		synctest.Wait()
		s := hb.breakers["weu"].Snapshot()
		if s.State != breaker.Open || !s.Until.Equal(br.Snapshot().Until.Add(fleet.DefaultProbeGrace)) {
			t.Fatalf("b's breaker %+v; want open until a's end plus the probe grace (%v)", s, br.Snapshot().Until.Add(fleet.DefaultProbeGrace))
		}
		stop()
	})
}

// TestFleetCountsAFailureThatArrivesLate is the regression test for a
// count that never reached the threshold under load: each replica counted
// its failure at the time it happened, so the last count to reach the
// store, for an earlier failure, did not see the later ones counted
// before it, and no replica saw the fleet's total.
func TestFleetCountsAFailureThatArrivesLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		newHost := func() *host {
			return &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 2, Window: 30 * time.Second, Trip: time.Minute})}}
		}
		ha, hb := newHost(), newHost()
		a, b, stop := runPair(t, mem, ha, hb)
		now := time.Now()
		a.Failure("weu", breaker.Outcome{Result: breaker.Failure, Cause: "503"}, now)
		synctest.Wait()
		// b's failure happened a second before a's, and reaches the store
		// after it.
		b.Failure("weu", breaker.Outcome{Result: breaker.Failure, Cause: "503"}, now.Add(-time.Second))
		synctest.Wait()
		if s := hb.breakers["weu"].Snapshot(); s.State != breaker.Open {
			t.Fatalf("b's breaker %+v after the fleet's second failure, want open", s)
		}
		stop()
	})
}

// TestTripFromALeaseLoserIsAdoptedAsItIs is the regression test for three
// replicas that tripped together and then none probed for ten seconds: a
// replica that lost the probe lease published its trip, and the winner,
// hearing it before its own lease was settled, put its probe off by the
// grace too. A trip whose sender holds no lease is adopted as it is.
func TestTripFromALeaseLoserIsAdoptedAsItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		// Someone else holds the lease: a loses the race.
		if ok, _ := mem.View().Acquire(t.Context(), "probe/weu", "x", time.Minute); !ok {
			t.Fatal("lease")
		}
		var trs []breaker.Transition
		ha := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 1, Trip: 10 * time.Second, OnTransition: func(t breaker.Transition) { trs = append(trs, t) }})}}
		hb := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 1, Trip: 10 * time.Second})}}
		a, _, stop := runPair(t, mem, ha, hb)
		done, _ := ha.breakers["weu"].Allow()
		done(breaker.Outcome{Result: breaker.Failure, Cause: "503"})
		end := ha.breakers["weu"].Snapshot().Until
		a.Transition(trs[0])
		synctest.Wait()
		if s := hb.breakers["weu"].Snapshot(); s.State != breaker.Open || !s.Until.Equal(end) {
			t.Fatalf("b's breaker %+v; want open until a's own end %v, not put off by the probe grace", s, end)
		}
		stop()
	})
}

// lostAnswer is a store whose next Count is recorded but answered with a
// timeout, as when the server counted and the answer came too late; while
// loseAll is set, every Count is.
type lostAnswer struct {
	fleet.Store
	lose, loseAll atomic.Bool
}

func (s *lostAnswer) Count(ctx context.Context, key, id string, now time.Time, window time.Duration) (int, error) {
	n, err := s.Store.Count(ctx, key, id, now, window)
	if err == nil && (s.lose.CompareAndSwap(true, false) || s.loseAll.Load()) {
		return 0, context.DeadlineExceeded
	}
	return n, err
}

// TestFleetOpensWhenTheThresholdCountsAnswerIsLost is the regression test
// for three replicas whose failures reached the fleet's threshold and
// none opened (seen under load): the count of the last failure was
// recorded, but its answer timed out, so no replica heard the total. The
// count is asked again, which records nothing new and gives the total.
func TestFleetOpensWhenTheThresholdCountsAnswerIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		st := &lostAnswer{Store: mem.View()}
		h := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 2, Window: 30 * time.Second, Trip: time.Minute})}}
		r, stop := runOne(t, fleet.Options{Store: st, Host: h, ID: "a"})
		// Another replica's failure is in the window already.
		if _, err := mem.View().Count(t.Context(), "fail/weu", "b:1", time.Now(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		st.lose.Store(true)
		r.Failure("weu", breaker.Outcome{Result: breaker.Failure, Cause: "503"}, time.Now())
		synctest.Wait()
		if s := h.breakers["weu"].Snapshot(); s.State != breaker.Open {
			t.Fatalf("breaker %+v after the fleet's second failure, whose count's answer was lost; want open", s)
		}
		stop()
	})
}

// TestFleetOpensWhenEveryTryOfACountIsLost is the regression test for
// gateway's TestFleetCountsFailuresAcrossReplicas failing under load: the
// store held the five failures of three replicas and none opened, because
// every try of the last count was recorded and its answer timed out. The
// count is asked again at the next heartbeat, until it is heard.
func TestFleetOpensWhenEveryTryOfACountIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		st := &lostAnswer{Store: mem.View()}
		h := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 2, Window: 30 * time.Second, Trip: time.Minute})}}
		r, stop := runOne(t, fleet.Options{Store: st, Host: h, ID: "a"})
		defer stop()
		// Another replica's failure is in the window already.
		if _, err := mem.View().Count(t.Context(), "fail/weu", "b:1", time.Now(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		st.loseAll.Store(true)
		r.Failure("weu", breaker.Outcome{Result: breaker.Failure, Cause: "503"}, time.Now())
		synctest.Wait()
		if s := h.breakers["weu"].Snapshot(); s.State != breaker.Closed {
			t.Fatalf("breaker %+v with every answer lost; the test needs it closed here", s)
		}
		st.loseAll.Store(false)
		time.Sleep(2*fleet.DefaultTimeout + fleet.DefaultHeartbeat) // the bubble's clock
		synctest.Wait()
		if s := h.breakers["weu"].Snapshot(); s.State != breaker.Open {
			t.Fatalf("breaker %+v a heartbeat after the store answers again; want open on the fleet's second failure", s)
		}
		n, err := mem.View().Count(t.Context(), "fail/weu", "test", time.Now(), 30*time.Second)
		if err != nil || n != 3 {
			t.Fatalf("the store counts %d, %v; want 3: a's failure once, b's and this one", n, err)
		}
	})
}

// TestFleetCountsAFailureSeenWhileTheStoreWasOut: a failure whose count
// was dropped because the store was out is counted when the store
// returns, while it is still in the breaker's window, and not after.
func TestFleetCountsAFailureSeenWhileTheStoreWasOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  time.Duration // how long the store is out
		want breaker.State
	}{
		{"back within the window", 5 * time.Second, breaker.Open},
		{"back after the window", 40 * time.Second, breaker.Closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := fleet.NewMemory()
				f := &flaky{Store: mem.View()}
				h := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Failures: 2, Window: 30 * time.Second, Trip: time.Minute})}}
				r, stop := runOne(t, fleet.Options{Store: f, Host: h, ID: "a"})
				defer stop()
				f.down.Store(true)
				time.Sleep(2 * fleet.DefaultHeartbeat)
				synctest.Wait()
				if r.Up() {
					t.Fatal("the store is down and the replica does not know")
				}
				r.Failure("weu", breaker.Outcome{Result: breaker.Failure, Cause: "503"}, time.Now())
				time.Sleep(tc.out)
				// Another replica's failure, counted when the store is back.
				if _, err := mem.View().Count(t.Context(), "fail/weu", "b:1", time.Now(), 30*time.Second); err != nil {
					t.Fatal(err)
				}
				f.down.Store(false)
				time.Sleep(5 * fleet.DefaultHeartbeat)
				synctest.Wait()
				if s := h.breakers["weu"].Snapshot(); s.State != tc.want {
					t.Fatalf("breaker %+v; want %s", s, tc.want)
				}
			})
		})
	}
}

// TestReplicaAdoptsATripsEjectionLevel: a trip of a backend benched again
// after it came back carries its level and partiality, so that another
// replica needs as many passing checks to end it and, when the probing
// replica closes it, brings the backend back as slowly (issue 22).
func TestReplicaAdoptsATripsEjectionLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		newHost := func() *host {
			return &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", breaker.Settings{Trip: 10 * time.Second})}}
		}
		ha, hb := newHost(), newHost()
		a, _, stop := runPair(t, mem, ha, hb)
		var trs []breaker.Transition
		br := breaker.New("weu", breaker.Settings{Trip: 10 * time.Second, OnTransition: func(t breaker.Transition) { trs = append(trs, t) }})
		ha.breakers["weu"] = br
		br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
		br.Checked(true, "pass")
		br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark again")
		a.Transition(trs[len(trs)-1])
		synctest.Wait()
		if s := hb.breakers["weu"].Snapshot(); s.State != breaker.Open || s.Level != 2 || s.PassesNeeded != 2 {
			t.Fatalf("b's breaker %+v; want open at level 2, two passes needed", s)
		}
		br.Checked(true, "pass")
		br.Checked(true, "pass")
		a.Transition(trs[len(trs)-1])
		synctest.Wait()
		if s := hb.breakers["weu"].Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
			t.Fatalf("b's breaker %+v after a's close; want closed in its slow start", s)
		}
		stop()
	})
}

// TestTripDecidedWhileTheStoreWasOutReachesTheFleet is the regression
// test for a trip whose publish was dropped while the store did not
// answer calls but the subscription held: no resubscription came to send
// it, and the other replicas never benched the backend. It goes out when
// the store answers again.
func TestTripDecidedWhileTheStoreWasOutReachesTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := fleet.NewMemory()
		f := &flaky{Store: mem.View()}
		settings := breaker.Settings{Failures: 1, Window: 30 * time.Second, Trip: 5 * time.Minute}
		ha := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", settings)}}
		hb := &host{breakers: map[string]*breaker.Breaker{"weu": breaker.New("weu", settings)}}
		a, err := fleet.New(fleet.Options{Store: f, Host: ha, ID: "a"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := fleet.New(fleet.Options{Store: mem.View(), Host: hb, ID: "b"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { a.Run(ctx) })
		wg.Go(func() { b.Run(ctx) })
		defer func() { cancel(); wg.Wait() }()
		synctest.Wait()

		f.down.Store(true) // calls fail; a's subscription holds
		time.Sleep(2 * fleet.DefaultHeartbeat)
		synctest.Wait()
		if a.Up() {
			t.Fatal("the store is down and replica a does not know")
		}
		br := ha.breakers["weu"]
		br.Force(breaker.Open, time.Now().Add(5*time.Minute), breaker.KindServerError, "503")
		s := br.Snapshot()
		a.Transition(breaker.Transition{Name: "weu", From: breaker.Closed, To: breaker.Open, At: time.Now(), Until: s.Until,
			Kind: breaker.KindServerError, Cause: "503"})
		time.Sleep(fleet.DefaultHeartbeat)
		synctest.Wait()
		if st := hb.breakers["weu"].Snapshot().State; st != breaker.Closed {
			t.Fatalf("b's breaker %s while a could not publish", st)
		}

		f.down.Store(false)
		time.Sleep(5 * fleet.DefaultHeartbeat)
		synctest.Wait()
		if !a.Up() {
			t.Fatal("the store is back but replica a does not share")
		}
		if st := hb.breakers["weu"].Snapshot().State; st != breaker.Open {
			t.Fatalf("b's breaker %s after the store came back, want open: a's trip never reached it", st)
		}
	})
}
