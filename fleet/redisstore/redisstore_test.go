package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/fleet/storetest"
	"github.com/switchover-gw/switchover/internal/redistest"
)

// failWait bounds how long a call may take to fail or a subscription to
// close; it is generous, so as not to test latency, only that calls return.
const failWait = 5 * time.Second

// callWait is the DialTimeout and IOTimeout of the stores of tests whose
// calls must succeed (roomy). The defaults, 200 and 100 ms, are the
// product's fail-fast budget: a replica whose call misses it carries on
// and tries again later. A test that needs the call to succeed the first
// time must not hold the machine to that budget, which a -race run on a
// loaded CI machine misses (a read stalled past 100 ms failed Subscribe
// and Publish in TestClusterResubscribeAfterNodeRestart and calls in the
// conformance suites). Tests of failing fast keep the defaults.
const callWait = 2 * time.Second

// roomy returns opts with callWait as its timeouts.
func roomy(opts redisstore.Options) redisstore.Options {
	opts.DialTimeout, opts.IOTimeout = callWait, callWait
	return opts
}

var fleets atomic.Int64

// newStore returns a Store on url with a prefix of its own, closed at
// t.Cleanup.
func newStore(t *testing.T, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	url := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) (a, b fleet.Store, advance func(time.Duration)) {
		// Each subtest is a fleet of its own on the one server.
		opts := roomy(redisstore.Options{URL: url, Prefix: fmt.Sprintf("test%d:", fleets.Add(1))})
		return newStore(t, opts), newStore(t, opts), wait
	})
}

// wait lets real time pass: the server's clock is the store's.
func wait(d time.Duration) { time.Sleep(d) }

func TestKeysCarryPrefix(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redisstore.Options{URL: url, Prefix: "fleet1:"})
	other := newStore(t, redisstore.Options{URL: url, Prefix: "fleet2:"})
	ctx := t.Context()
	if err := s.Put(ctx, "trip/eu", []byte("open"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(ctx, "fail/eu", "e1", time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "lease/notify", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "history", []byte("e"), 10); err != nil {
		t.Fatal(err)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(opt)
	defer raw.Close()
	keys, err := raw.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := []string{"fleet1:count:fail/eu", "fleet1:kv:lease/notify", "fleet1:kv:trip/eu", "fleet1:log:history"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys on the server = %q, want %q", keys, want)
	}
	// Another fleet's store sees none of it.
	if m, err := other.List(ctx, ""); err != nil || len(m) != 0 {
		t.Errorf("other fleet's List = %v, %v; want nothing", m, err)
	}
	// List returns keys without the store's prefix.
	m, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["trip/eu"]; !ok || len(m) != 2 {
		t.Errorf("List = %q, want trip/eu and lease/notify", m)
	}
	// The channel carries the prefix too.
	sub, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Publish(ctx, "fleet1:events", "raw").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-sub:
		if string(msg) != "raw" {
			t.Errorf("message on fleet1:events = %q, want %q", msg, "raw")
		}
	case <-time.After(failWait):
		t.Errorf("no message published on fleet1:events within %v", failWait)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, url := range []string{"http://localhost:6379", "redis://localhost:6379/notadb", "::"} {
		if _, err := redisstore.New(redisstore.Options{URL: url}); err == nil {
			t.Errorf("New(%q) succeeded, want an error", url)
		}
	}
}

// every calls each Store method but Close and reports its error by name.
func every(ctx context.Context, s fleet.Store) map[string]error {
	errs := map[string]error{}
	errs["Publish"] = s.Publish(ctx, []byte("m"))
	_, errs["Subscribe"] = s.Subscribe(ctx)
	errs["Put"] = s.Put(ctx, "k", []byte("v"), time.Minute)
	errs["Delete"] = s.Delete(ctx, "k")
	_, errs["List"] = s.List(ctx, "")
	_, errs["Count"] = s.Count(ctx, "c", "id", time.Now(), time.Minute)
	_, errs["Acquire"] = s.Acquire(ctx, "l", "h", time.Minute)
	errs["Release"] = s.Release(ctx, "l", "h")
	errs["Append"] = s.Append(ctx, "log", []byte("e"), 3)
	_, errs["Tail"] = s.Tail(ctx, "log", 3)
	return errs
}

func TestDeadServerFailsFast(t *testing.T) {
	srv := redistest.StartServer(t)
	s := newStore(t, redisstore.Options{URL: srv.URL()})
	ctx := t.Context()
	// Connections in the pool first, so that the server's death is seen
	// on an open connection as well as on a new one.
	for name, err := range every(ctx, s) {
		if err != nil {
			t.Fatalf("%s with the server up: %v", name, err)
		}
	}
	srv.Stop()
	for round := range 2 { // the broken pooled connections, then new dials
		done := make(chan map[string]error, 1)
		go func() { done <- every(ctx, s) }()
		select {
		case errs := <-done:
			for _, name := range slices.Sorted(maps.Keys(errs)) {
				if errs[name] == nil {
					t.Errorf("round %d: %s succeeded with the server stopped", round, name)
				}
			}
		case <-time.After(failWait):
			t.Fatalf("round %d: calls to a stopped server did not return within %v", round, failWait)
		}
	}
	// And it works again once the server is back.
	srv.Restart()
	if err := s.Put(ctx, "k", []byte("v"), 0); err != nil {
		t.Errorf("Put after Restart: %v", err)
	}
}

func TestSubscriptionClosesWhenServerStops(t *testing.T) {
	srv := redistest.StartServer(t)
	s := newStore(t, redisstore.Options{URL: srv.URL()})
	ctx := t.Context()
	sub, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	timeout := time.After(failWait)
	for open := true; open; {
		select {
		case _, open = <-sub:
		case <-timeout:
			t.Fatalf("subscription still open %v after the server stopped", failWait)
		}
	}
	if _, err := s.Subscribe(ctx); err == nil {
		t.Error("Subscribe succeeded with the server stopped")
	}
	srv.Restart()
	sub, err = s.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe after Restart: %v", err)
	}
	if err := s.Publish(ctx, []byte("back")); err != nil {
		t.Fatalf("Publish after Restart: %v", err)
	}
	select {
	case msg, ok := <-sub:
		if !ok || string(msg) != "back" {
			t.Errorf("after Restart got %q (open %v), want %q", msg, ok, "back")
		}
	case <-time.After(failWait):
		t.Errorf("no message within %v after Restart", failWait)
	}
}

func TestSlowSubscriberLosesSubscription(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redisstore.Options{URL: url})
	ctx := t.Context()
	sub, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads sub: once its buffer is full it is closed rather than
	// holding the rest back.
	for i := range 5000 {
		if err := s.Publish(ctx, []byte("m")); err != nil {
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	timeout := time.After(failWait)
	n := 0
	for open := true; open; {
		select {
		case _, open = <-sub:
			if open {
				n++
			}
		case <-timeout:
			t.Fatalf("subscription still open after %d messages", n)
		}
	}
	if n >= 5000 {
		t.Errorf("got all %d messages; want the subscription closed when its buffer filled", n)
	}
}

func TestContextDeadlineBoundsCall(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redisstore.Options{URL: url})
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	if err := s.Put(ctx, "k", []byte("v"), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put with an expired deadline: %v, want context.DeadlineExceeded", err)
	}
}

func TestHungServerFailsFast(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := newStore(t, redisstore.Options{URL: srv.URL()})
	ctx := t.Context()
	for name, err := range every(ctx, s) {
		if err != nil {
			t.Fatalf("%s with the server up: %v", name, err)
		}
	}
	sub, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause() // connections open, nothing answered
	done := make(chan map[string]error, 1)
	go func() { done <- every(ctx, s) }()
	select {
	case errs := <-done:
		for _, name := range slices.Sorted(maps.Keys(errs)) {
			if errs[name] == nil {
				t.Errorf("%s succeeded with the server paused", name)
			}
		}
	case <-time.After(failWait):
		t.Fatalf("calls to a paused server did not return within %v", failWait)
	}
	// The subscription notices the silence (its ping goes unanswered)
	// and closes.
	timeout := time.After(failWait)
	for open := true; open; {
		select {
		case _, open = <-sub:
		case <-timeout:
			t.Fatalf("subscription still open %v after the server hung", failWait)
		}
	}
	srv.Resume()
	if err := s.Put(ctx, "k", []byte("v"), 0); err != nil {
		t.Errorf("Put after Resume: %v", err)
	}
}

// TestSubscribeRacingClose: a Subscribe concurrent with Close either
// fails or returns a channel that Close closes (fleet.Memory has this
// race; see fleet's TestMemorySubscribeRacingClose).
func TestSubscribeRacingClose(t *testing.T) {
	url := redistest.Start(t)
	for round := range 100 {
		s, err := redisstore.New(redisstore.Options{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			ch    <-chan []byte
			serr  error
			start = make(chan struct{})
		)
		wg.Go(func() { <-start; ch, serr = s.Subscribe(context.Background()) })
		wg.Go(func() { <-start; _ = s.Close() })
		close(start)
		wg.Wait()
		if serr != nil {
			if !errors.Is(serr, fleet.ErrClosed) {
				t.Errorf("round %d: Subscribe racing Close: %v, want fleet.ErrClosed", round, serr)
			}
			continue
		}
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatalf("round %d: a message nobody published", round)
			}
		case <-time.After(failWait):
			t.Fatalf("round %d: subscription still open %v after Close", round, failWait)
		}
	}
}

func TestDefaults(t *testing.T) {
	url := redistest.Start(t)
	ctx := t.Context()
	s := newStore(t, redisstore.Options{URL: url})
	custom := newStore(t, redisstore.Options{URL: url, Prefix: "p:", Channel: "shared-events"})
	if err := s.Put(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(opt)
	defer raw.Close()
	if v, err := raw.Get(ctx, "switchover:kv:k").Result(); err != nil || v != "v" {
		t.Errorf("raw GET switchover:kv:k = %q, %v; want the default prefix", v, err)
	}
	for _, tc := range []struct {
		name    string
		s       *redisstore.Store
		channel string
	}{{"default", s, "switchover:events"}, {"custom", custom, "shared-events"}} {
		sub, err := tc.s.Subscribe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Publish(ctx, tc.channel, tc.name).Err(); err != nil {
			t.Fatal(err)
		}
		select {
		case msg := <-sub:
			if string(msg) != tc.name {
				t.Errorf("%s: got %q on %s, want %q", tc.name, msg, tc.channel, tc.name)
			}
		case <-time.After(failWait):
			t.Errorf("%s: nothing received from channel %s within %v", tc.name, tc.channel, failWait)
		}
	}
}
