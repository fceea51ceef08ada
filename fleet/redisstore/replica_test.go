package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
	"github.com/switchover-gw/switchover/route"
)

// bareHost is a Host with no backends.
type bareHost struct{}

func (bareHost) Breaker(string) *breaker.Breaker  { return nil }
func (bareHost) Quota(string) *route.LocalQuota   { return nil }
func (bareHost) Apply(fleet.Action) error         { return nil }
func (bareHost) Failovers(string, int, time.Time) {}
func (bareHost) InFlight() map[string]int         { return nil }
func (bareHost) Backends() []string               { return nil }

// counted is a Store that counts the calls that failed and answered.
type counted struct {
	fleet.Store
	failed, answered atomic.Int64
}

func (c *counted) note(err error) error {
	if err != nil {
		c.failed.Add(1)
	} else {
		c.answered.Add(1)
	}
	return err
}

func (c *counted) Put(ctx context.Context, k string, v []byte, ttl time.Duration) error {
	return c.note(c.Store.Put(ctx, k, v, ttl))
}

func (c *counted) Acquire(ctx context.Context, k, h string, ttl time.Duration) (bool, error) {
	ok, err := c.Store.Acquire(ctx, k, h, ttl)
	return ok, c.note(err)
}

// TestReplicaSaysTheStoreIsBackOnce is the regression test for replicas
// that, right after Redis returned, said the store was back, then
// unreachable, then back again within a second (store_up 1, 0, 1): a new
// subscription got through while the Redis client's pool still refused
// to dial. A replica now says the store is back once, when it answers
// calls in a row, and stays so.
func TestReplicaSaysTheStoreIsBackOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	type member struct {
		store  *counted
		mu     sync.Mutex
		health []bool
	}
	var ms []*member
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 3 {
		m := &member{store: &counted{Store: newStore(t, redisstore.Options{URL: srv.URL(), IOTimeout: time.Second})}}
		r, err := fleet.New(fleet.Options{Store: m.store, Host: bareHost{}, ID: fmt.Sprintf("r%d", i), Timeout: time.Second,
			Heartbeat: 100 * time.Millisecond, OnHealth: func(up bool) {
				m.mu.Lock()
				m.health = append(m.health, up)
				m.mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
		wg.Go(func() { r.Run(ctx) })
	}
	calls := func(f func(*counted) int64, n int64) func() bool {
		return func() bool {
			for _, m := range ms {
				if f(m.store) < n {
					return false
				}
			}
			return true
		}
	}
	answered := func(c *counted) int64 { return c.answered.Load() }
	failed := func(c *counted) int64 { return c.failed.Load() }
	poll.Until(t, 10*time.Second, calls(answered, 4), nil)
	srv.Stop()
	// Long enough for the client's pool to give up dialing (more failed
	// dials than its size), as in an outage of seconds.
	poll.Until(t, 20*time.Second, calls(failed, 40), nil)
	srv.Restart()
	base := make([]int64, len(ms))
	for i, m := range ms {
		base[i] = m.store.answered.Load()
	}
	// Back, and on for a while: a second at least, at 2 calls a beat.
	poll.Until(t, 20*time.Second, func() bool {
		for i, m := range ms {
			if m.store.answered.Load()-base[i] < 20 {
				return false
			}
		}
		return true
	}, nil)
	for i, m := range ms {
		m.mu.Lock()
		h := fmt.Sprint(m.health)
		m.mu.Unlock()
		if h != "[false true]" {
			t.Errorf("replica r%d reported the store %s, want [false true]: out once, back once", i, h)
		}
	}
}
