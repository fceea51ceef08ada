// Package storetest is the conformance suite of fleet.Store: every
// implementation runs it (fleet.Memory with a fake clock, redisstore
// against a real server) so that they all keep the contract written on
// the interface.
//
// The suite never asserts how fast a store is: waits are bounded
// generously (failWait) only so that a broken store fails instead of
// hanging. Durations it passes to a store (TTLs) are a few hundred
// milliseconds, so a store on real time runs the suite in seconds.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet"
)

// NewStore returns two Stores that are views of one shared store (two
// replicas of a fleet) and a function that moves that store's time on by
// d: a fake clock's Advance, or for a store on real time a function that
// waits d. The stores are fresh: no keys, logs or subscriptions. The
// suite closes neither; NewStore arranges that with t.Cleanup.
type NewStore func(t *testing.T) (a, b fleet.Store, advance func(d time.Duration))

// failWait bounds every wait of the suite: longer means the store is
// broken (a message that never comes, a call that never returns). It is
// not a latency requirement.
const failWait = 5 * time.Second

// Lease and key lifetimes the suite uses: short enough for a store on
// real time, with a wide margin between "still alive" and "expired" (a
// check that a shortTTL key is still there fails only if the machine
// stalls for shortTTL between two calls).
const (
	shortTTL = 500 * time.Millisecond
	pastTTL  = 2 * shortTTL // advancing by this lets a shortTTL expire
	longTTL  = time.Minute
)

// Run runs the conformance suite against the stores newStore returns, one
// pair per subtest.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		f    func(*testing.T, NewStore)
	}{
		{"PublishReachesEverySubscriptionInOrder", testPublishInOrder},
		{"SubscribeGetsOnlyLaterMessages", testSubscribeOnlyLater},
		{"SubscribeClosesWhenContextEnds", testSubscribeClosesOnCancel},
		{"CloseEndsOwnSubscriptionsOnly", testCloseEndsSubscriptions},
		{"PutListByPrefix", testPutList},
		{"PutTTLExpires", testPutTTL},
		{"PutZeroTTLKeepsUntilDeleted", testPutZeroTTL},
		{"Delete", testDelete},
		{"CountSlidingWindow", testCount},
		{"CountDuplicateIDOnce", testCountDuplicate},
		{"CountIgnoresEventsAfterNow", testCountFuture},
		{"CountKeysIndependent", testCountKeys},
		{"CountConcurrent", testCountConcurrent},
		{"AcquireRefusesOtherHolder", testAcquire},
		{"AcquireExtends", testAcquireExtends},
		{"AcquireAfterExpiry", testAcquireExpiry},
		{"ReleaseOnlyByHolder", testRelease},
		{"AppendTailCapped", testAppendTail},
		{"TailMissingLog", testTailMissing},
		{"CancelledContext", testCancelled},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, newStore) })
	}
}

// call runs f and fails the test if it does not return within failWait.
func call[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(failWait):
		t.Fatalf("%s did not return within %v", what, failWait)
		panic("unreachable")
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func subscribe(t *testing.T, ctx context.Context, s fleet.Store, who string) <-chan []byte {
	t.Helper()
	ch, err := call(t, who+".Subscribe", func() result[<-chan []byte] {
		ch, err := s.Subscribe(ctx)
		return result[<-chan []byte]{ch, err}
	}).get()
	must(t, who+".Subscribe", err)
	return ch
}

type result[T any] struct {
	v   T
	err error
}

func (r result[T]) get() (T, error) { return r.v, r.err }

// recv returns the next message on ch, failing if none comes within
// failWait or ch closes.
func recv(t *testing.T, ch <-chan []byte, who string) []byte {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatalf("%s: subscription closed, want a message", who)
		}
		return m
	case <-time.After(failWait):
		t.Fatalf("%s: no message within %v", who, failWait)
		return nil
	}
}

// waitClosed drains ch until it closes, failing if that takes longer than
// failWait.
func waitClosed(t *testing.T, ch <-chan []byte, who string) {
	t.Helper()
	timeout := time.After(failWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s: subscription not closed within %v", who, failWait)
		}
	}
}

func publish(t *testing.T, s fleet.Store, who, msg string) {
	t.Helper()
	must(t, who+".Publish "+msg, call(t, who+".Publish", func() error { return s.Publish(t.Context(), []byte(msg)) }))
}

func testPublishInOrder(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	subA := subscribe(t, t.Context(), a, "a")
	subB := subscribe(t, t.Context(), b, "b")
	var want []string
	for i := range 5 {
		m := fmt.Sprintf("from-a-%d", i)
		publish(t, a, "a", m)
		want = append(want, m)
	}
	publish(t, b, "b", "from-b")
	want = append(want, "from-b")
	for _, sub := range []struct {
		name string
		ch   <-chan []byte
	}{{"a's subscription", subA}, {"b's subscription", subB}} {
		var got []string
		for range want {
			got = append(got, string(recv(t, sub.ch, sub.name)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s got %q, want %q", sub.name, got, want)
		}
	}
}

func testSubscribeOnlyLater(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	publish(t, a, "a", "before")
	sub := subscribe(t, t.Context(), b, "b")
	publish(t, a, "a", "after")
	if got := string(recv(t, sub, "b")); got != "after" {
		t.Errorf("first message = %q, want %q (published after Subscribe returned)", got, "after")
	}
	// A message published the moment Subscribe returns is delivered: the
	// subscription is in place by then. Repeated, since a store that
	// returns early loses the race only now and then.
	for i := range 50 {
		ctx, cancel := context.WithCancel(t.Context())
		sub := subscribe(t, ctx, b, "b")
		m := fmt.Sprintf("round %d", i)
		publish(t, a, "a", m)
		if got := string(recv(t, sub, "b")); got != m {
			t.Fatalf("first message = %q, want %q", got, m)
		}
		cancel()
	}
}

func testSubscribeClosesOnCancel(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	sub := subscribe(t, ctx, a, "a")
	other := subscribe(t, t.Context(), a, "a")
	cancel()
	waitClosed(t, sub, "a's cancelled subscription")
	// The store and its other subscriptions carry on.
	publish(t, b, "b", "still here")
	if got := string(recv(t, other, "a's other subscription")); got != "still here" {
		t.Errorf("other subscription got %q, want %q", got, "still here")
	}
}

func testCloseEndsSubscriptions(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	subA := subscribe(t, t.Context(), a, "a")
	subB := subscribe(t, t.Context(), b, "b")
	must(t, "a.Close", call(t, "a.Close", a.Close))
	waitClosed(t, subA, "a's subscription after a.Close")
	publish(t, b, "b", "b lives")
	if got := string(recv(t, subB, "b")); got != "b lives" {
		t.Errorf("b's subscription got %q, want %q", got, "b lives")
	}
}

func put(t *testing.T, s fleet.Store, who, key, value string, ttl time.Duration) {
	t.Helper()
	must(t, who+".Put "+key, call(t, who+".Put", func() error { return s.Put(t.Context(), key, []byte(value), ttl) }))
}

func list(t *testing.T, s fleet.Store, who, prefix string) map[string]string {
	t.Helper()
	m, err := call(t, who+".List", func() result[map[string][]byte] {
		m, err := s.List(t.Context(), prefix)
		return result[map[string][]byte]{m, err}
	}).get()
	must(t, who+".List "+prefix, err)
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func wantList(t *testing.T, s fleet.Store, who, prefix string, want map[string]string) {
	t.Helper()
	if got := list(t, s, who, prefix); !maps.Equal(got, want) {
		t.Errorf("%s.List(%q) = %v, want %v", who, prefix, got, want)
	}
}

func testPutList(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	put(t, a, "a", "trip/eu", "open", 0)
	put(t, b, "b", "trip/us", "closed", longTTL)
	put(t, a, "a", "quota/eu", "12", 0)
	// Characters a store might treat specially in a key pattern.
	put(t, a, "a", "odd/*?[x]\\", "glob", 0)
	put(t, a, "a", "odd/plain", "plain", 0)
	wantTrips := map[string]string{"trip/eu": "open", "trip/us": "closed"}
	wantList(t, a, "a", "trip/", wantTrips)
	wantList(t, b, "b", "trip/", wantTrips)
	wantList(t, b, "b", "quota/", map[string]string{"quota/eu": "12"})
	wantList(t, a, "a", "", map[string]string{
		"trip/eu": "open", "trip/us": "closed", "quota/eu": "12",
		"odd/*?[x]\\": "glob", "odd/plain": "plain",
	})
	wantList(t, a, "a", "odd/*", map[string]string{"odd/*?[x]\\": "glob"})
	wantList(t, a, "a", "nothing/", map[string]string{})
	put(t, b, "b", "trip/eu", "half-open", 0)
	wantList(t, a, "a", "trip/eu", map[string]string{"trip/eu": "half-open"})
	put(t, a, "a", "empty", "", 0)
	wantList(t, b, "b", "empty", map[string]string{"empty": ""})
}

func testPutTTL(t *testing.T, newStore NewStore) {
	a, b, advance := newStore(t)
	put(t, a, "a", "k/short", "s", shortTTL)
	put(t, a, "a", "k/long", "l", longTTL)
	put(t, a, "a", "k/forever", "f", 0)
	wantList(t, b, "b", "k/", map[string]string{"k/short": "s", "k/long": "l", "k/forever": "f"})
	advance(pastTTL)
	wantList(t, b, "b", "k/", map[string]string{"k/long": "l", "k/forever": "f"})
	wantList(t, a, "a", "k/", map[string]string{"k/long": "l", "k/forever": "f"})
}

func testPutZeroTTL(t *testing.T, newStore NewStore) {
	a, b, advance := newStore(t)
	put(t, a, "a", "k", "1", shortTTL)
	put(t, b, "b", "k", "2", 0) // replaces the value and its ttl
	advance(pastTTL)
	wantList(t, a, "a", "k", map[string]string{"k": "2"})
}

func testDelete(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	put(t, a, "a", "k/1", "1", 0)
	put(t, a, "a", "k/2", "2", longTTL)
	must(t, "b.Delete k/1", call(t, "b.Delete", func() error { return b.Delete(t.Context(), "k/1") }))
	wantList(t, a, "a", "k/", map[string]string{"k/2": "2"})
	must(t, "b.Delete k/2", call(t, "b.Delete", func() error { return b.Delete(t.Context(), "k/2") }))
	wantList(t, a, "a", "k/", map[string]string{})
	must(t, "a.Delete missing", call(t, "a.Delete", func() error { return a.Delete(t.Context(), "missing") }))
}

// base is the time the Count tests start from; Count takes its now from
// the caller, so any instant will do.
var base = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func count(t *testing.T, s fleet.Store, who, key, id string, at time.Duration, window time.Duration) int {
	t.Helper()
	r := call(t, who+".Count", func() result[int] {
		n, err := s.Count(t.Context(), key, id, base.Add(at), window)
		return result[int]{n, err}
	})
	must(t, fmt.Sprintf("%s.Count(%s, %s, +%v)", who, key, id, at), r.err)
	return r.v
}

func wantCount(t *testing.T, s fleet.Store, who, key, id string, at, window time.Duration, want int) {
	t.Helper()
	if got := count(t, s, who, key, id, at, window); got != want {
		t.Errorf("%s.Count(%s, id %s, now +%v, window %v) = %d, want %d", who, key, id, at, window, got, want)
	}
}

func testCount(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	const w = 10 * time.Second
	s := time.Second
	wantCount(t, a, "a", "fail/eu", "e1", 0, w, 1)
	wantCount(t, b, "b", "fail/eu", "e2", 1*s, w, 2)
	wantCount(t, a, "a", "fail/eu", "e3", 3*s, w, 3)
	// (0.5s, 10.5s]: e1 at 0 has fallen out.
	wantCount(t, b, "b", "fail/eu", "e4", 10*s+s/2, w, 3)
	// (1s, 11s]: e2 at exactly now-window is out; the window is open at
	// its old end.
	wantCount(t, a, "a", "fail/eu", "e5", 11*s, w, 3)
	// (13s, 23s]: everything before has fallen out.
	wantCount(t, b, "b", "fail/eu", "e6", 23*s, w, 1)
}

func testCountDuplicate(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	const w = 10 * time.Second
	s := time.Second
	wantCount(t, a, "a", "k", "x", 0, w, 1)
	wantCount(t, a, "a", "k", "x", 0, w, 1)
	wantCount(t, b, "b", "k", "x", 1*s, w, 1) // the same event seen by both replicas
	wantCount(t, b, "b", "k", "y", 2*s, w, 2)
	wantCount(t, a, "a", "k", "x", 3*s, w, 2)
	// An id counted again keeps the time it was first counted: a count
	// asked again after a lost answer does not move its failure later.
	// (0.5s, 10.5s]: x at 0 has fallen out, y at 2s is in.
	wantCount(t, b, "b", "k", "z", 10*s+s/2, w, 2)
}

func testCountFuture(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	const w = 10 * time.Second
	s := time.Second
	// A replica whose clock runs ahead records at +20s.
	wantCount(t, a, "a", "k", "ahead", 20*s, w, 1)
	// At +5s that event has not happened yet.
	wantCount(t, b, "b", "k", "now", 5*s, w, 1)
	wantCount(t, b, "b", "k", "now2", 6*s, w, 2)
	// At +20s the window is (10s, 20s]: ahead and late are in it, now and
	// now2 have fallen out.
	wantCount(t, a, "a", "k", "late", 20*s, w, 2)
}

func testCountKeys(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	const w = 10 * time.Second
	wantCount(t, a, "a", "k1", "x", 0, w, 1)
	wantCount(t, b, "b", "k2", "x", 0, w, 1)
	wantCount(t, b, "b", "k2", "y", 0, w, 2)
	wantCount(t, a, "a", "k1", "z", 0, w, 2)
}

func testCountConcurrent(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	const w = time.Minute
	const per = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*per)
	for i := range per {
		for j, s := range []fleet.Store{a, b} {
			wg.Go(func() {
				_, err := s.Count(t.Context(), "k", fmt.Sprintf("%d-%d", j, i), base.Add(time.Duration(i)*time.Millisecond), w)
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "concurrent Count", err)
	}
	wantCount(t, a, "a", "k", "last", per*time.Millisecond, w, 2*per+1)
}

func acquire(t *testing.T, s fleet.Store, who, key, holder string, ttl time.Duration) bool {
	t.Helper()
	r := call(t, who+".Acquire", func() result[bool] {
		ok, err := s.Acquire(t.Context(), key, holder, ttl)
		return result[bool]{ok, err}
	})
	must(t, who+".Acquire "+key, r.err)
	return r.v
}

func wantAcquire(t *testing.T, s fleet.Store, who, key, holder string, ttl time.Duration, want bool) {
	t.Helper()
	if got := acquire(t, s, who, key, holder, ttl); got != want {
		t.Errorf("%s.Acquire(%s, holder %s) = %v, want %v", who, key, holder, got, want)
	}
}

func release(t *testing.T, s fleet.Store, who, key, holder string) {
	t.Helper()
	must(t, who+".Release "+key, call(t, who+".Release", func() error { return s.Release(t.Context(), key, holder) }))
}

func testAcquire(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	wantAcquire(t, a, "a", "lease/notify", "A", longTTL, true)
	wantAcquire(t, b, "b", "lease/notify", "B", longTTL, false)
	wantAcquire(t, a, "a", "lease/notify", "A", longTTL, true) // already has it
	wantAcquire(t, b, "b", "lease/other", "B", longTTL, true)  // leases are independent
	wantAcquire(t, a, "a", "lease/other", "A", longTTL, false)
}

func testAcquireExtends(t *testing.T, newStore NewStore) {
	a, b, advance := newStore(t)
	wantAcquire(t, a, "a", "lease", "A", shortTTL, true)
	// Extending with a longer ttl keeps the lease past the first ttl.
	wantAcquire(t, a, "a", "lease", "A", longTTL, true)
	advance(pastTTL)
	wantAcquire(t, b, "b", "lease", "B", longTTL, false)
}

func testAcquireExpiry(t *testing.T, newStore NewStore) {
	a, b, advance := newStore(t)
	wantAcquire(t, a, "a", "lease", "A", shortTTL, true)
	wantAcquire(t, b, "b", "lease", "B", shortTTL, false)
	advance(pastTTL)
	wantAcquire(t, b, "b", "lease", "B", longTTL, true)
	wantAcquire(t, a, "a", "lease", "A", longTTL, false)
}

func testRelease(t *testing.T, newStore NewStore) {
	a, b, advance := newStore(t)
	wantAcquire(t, a, "a", "lease", "A", longTTL, true)
	release(t, b, "b", "lease", "B") // not the holder: no effect
	wantAcquire(t, b, "b", "lease", "B", longTTL, false)
	release(t, a, "a", "lease", "A")
	wantAcquire(t, b, "b", "lease", "B", shortTTL, true)
	release(t, a, "a", "lease", "A") // A no longer holds it
	wantAcquire(t, a, "a", "lease", "A", longTTL, false)
	// A lease that expired and was taken by another is not released by
	// the old holder.
	advance(pastTTL)
	wantAcquire(t, a, "a", "lease", "A", longTTL, true)
	release(t, b, "b", "lease", "B")
	wantAcquire(t, b, "b", "lease", "B", longTTL, false)
	release(t, a, "a", "missing", "A") // releasing a lease nobody has is no error
}

func appendLog(t *testing.T, s fleet.Store, who, key, entry string, max int) {
	t.Helper()
	must(t, who+".Append "+entry, call(t, who+".Append", func() error { return s.Append(t.Context(), key, []byte(entry), max) }))
}

func tail(t *testing.T, s fleet.Store, who, key string, n int) []string {
	t.Helper()
	r := call(t, who+".Tail", func() result[[][]byte] {
		l, err := s.Tail(t.Context(), key, n)
		return result[[][]byte]{l, err}
	})
	must(t, who+".Tail "+key, r.err)
	out := []string{}
	for _, e := range r.v {
		out = append(out, string(e))
	}
	return out
}

func wantTail(t *testing.T, s fleet.Store, who, key string, n int, want []string) {
	t.Helper()
	if got := tail(t, s, who, key, n); !slices.Equal(got, want) {
		t.Errorf("%s.Tail(%s, %d) = %q, want %q", who, key, n, got, want)
	}
}

func testAppendTail(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	appendLog(t, a, "a", "events", "e1", 3)
	appendLog(t, b, "b", "events", "e2", 3)
	wantTail(t, a, "a", "events", 10, []string{"e1", "e2"})
	appendLog(t, a, "a", "events", "e3", 3)
	appendLog(t, b, "b", "events", "e4", 3)
	appendLog(t, a, "a", "events", "e5", 3)
	// Capped at the newest 3, oldest first.
	wantTail(t, a, "a", "events", 10, []string{"e3", "e4", "e5"})
	wantTail(t, b, "b", "events", 3, []string{"e3", "e4", "e5"})
	wantTail(t, b, "b", "events", 2, []string{"e4", "e5"})
	wantTail(t, a, "a", "events", 1, []string{"e5"})
	appendLog(t, a, "a", "other", "o1", 3)
	wantTail(t, a, "a", "other", 10, []string{"o1"})
	wantTail(t, a, "a", "events", 10, []string{"e3", "e4", "e5"})
	// Binary entries come back as they went in.
	bin := []byte{0, 1, 0xff, '\n', 0}
	must(t, "Append binary", a.Append(t.Context(), "bin", bin, 3))
	l, err := b.Tail(t.Context(), "bin", 1)
	must(t, "Tail binary", err)
	if len(l) != 1 || !bytes.Equal(l[0], bin) {
		t.Errorf("Tail(bin) = %q, want [%q]", l, bin)
	}
}

func testTailMissing(t *testing.T, newStore NewStore) {
	a, _, _ := newStore(t)
	wantTail(t, a, "a", "nothing", 10, []string{})
}

// methods calls every Store method but Close with ctx and reports each
// one's error by name.
func methods(ctx context.Context, s fleet.Store) map[string]error {
	errs := map[string]error{}
	errs["Publish"] = s.Publish(ctx, []byte("m"))
	ch, err := s.Subscribe(ctx)
	errs["Subscribe"] = err
	if err == nil && ch == nil {
		errs["Subscribe"] = errors.New("nil channel and nil error")
	}
	errs["Put"] = s.Put(ctx, "k", []byte("v"), 0)
	errs["Delete"] = s.Delete(ctx, "k")
	_, errs["List"] = s.List(ctx, "")
	_, errs["Count"] = s.Count(ctx, "c", "id", base, time.Second)
	_, errs["Acquire"] = s.Acquire(ctx, "l", "h", time.Second)
	errs["Release"] = s.Release(ctx, "l", "h")
	errs["Append"] = s.Append(ctx, "log", []byte("e"), 3)
	_, errs["Tail"] = s.Tail(ctx, "log", 3)
	return errs
}

func testCancelled(t *testing.T, newStore NewStore) {
	a, _, _ := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	errs := call(t, "the methods with a cancelled context", func() map[string]error { return methods(ctx, a) })
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		if err := errs[name]; !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: error %v, want one that is context.Canceled", name, err)
		}
	}
	// The store still works after.
	put(t, a, "a", "k", "v", 0)
	wantList(t, a, "a", "k", map[string]string{"k": "v"})
}

func testClosed(t *testing.T, newStore NewStore) {
	a, b, _ := newStore(t)
	put(t, a, "a", "k", "v", 0)
	must(t, "a.Close", call(t, "a.Close", a.Close))
	errs := call(t, "the methods after Close", func() map[string]error { return methods(t.Context(), a) })
	for _, name := range slices.Sorted(maps.Keys(errs)) {
		if err := errs[name]; !errors.Is(err, fleet.ErrClosed) {
			t.Errorf("%s after Close: error %v, want one that is fleet.ErrClosed", name, err)
		}
	}
	// Closing one replica leaves the shared store to the other.
	wantList(t, b, "b", "k", map[string]string{"k": "v"})
	call(t, "a second a.Close", a.Close)
}
