package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/fleet/storetest"
	"github.com/switchover-gw/switchover/internal/redistest"
)

func TestClusterConformance(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	storetest.Run(t, func(t *testing.T) (a, b fleet.Store, advance func(time.Duration)) {
		opts := roomy(redisstore.Options{URL: c.URL(), Cluster: true, Prefix: fmt.Sprintf("test%d:", fleets.Add(1))})
		return newStore(t, opts), newStore(t, opts), wait
	})
}

// rawCluster returns a plain go-redis cluster client on c, to look at
// the cluster behind the Store's back.
func rawCluster(t *testing.T, c *redistest.Cluster) *redis.ClusterClient {
	t.Helper()
	raw := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = raw.Close() })
	return raw
}

// masterOf returns the address of the master serving key, from CLUSTER
// KEYSLOT and CLUSTER SHARDS.
func masterOf(t *testing.T, raw *redis.ClusterClient, key string) string {
	t.Helper()
	ctx := t.Context()
	slot, err := raw.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	shards, err := raw.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start <= slot && slot <= r.End {
				for _, n := range sh.Nodes {
					if n.Role == "master" {
						return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
					}
				}
			}
		}
	}
	t.Fatalf("no master serves slot %d of %s", slot, key)
	return ""
}

// TestClusterListSpansMasters: List finds keys wherever they live, and
// the keys it is given do live on every master (else the test proves
// nothing about a List that scans one node).
func TestClusterListSpansMasters(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"})
	other := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet2:"})
	raw := rawCluster(t, c)
	ctx := t.Context()
	want := map[string]string{}
	masters := map[string][]string{}
	for i := range 30 {
		k := fmt.Sprintf("trip/backend-%d", i)
		if err := s.Put(ctx, k, []byte(fmt.Sprint(i)), time.Minute); err != nil {
			t.Fatalf("Put %s: %v", k, err)
		}
		want[k] = fmt.Sprint(i)
		m := masterOf(t, raw, "fleet1:kv:"+k)
		masters[m] = append(masters[m], k)
	}
	if err := other.Put(ctx, "trip/elsewhere", []byte("x"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if len(masters) != len(c.Addrs()) {
		t.Fatalf("the keys live on %d masters (%v), want all %d", len(masters), slices.Sorted(maps.Keys(masters)), len(c.Addrs()))
	}
	m, err := s.List(ctx, "trip/")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range m {
		got[k] = string(v)
	}
	if !maps.Equal(got, want) {
		for addr, keys := range masters {
			var missing []string
			for _, k := range keys {
				if _, ok := got[k]; !ok {
					missing = append(missing, k)
				}
			}
			if len(missing) > 0 {
				t.Errorf("List misses the keys on master %s: %q", addr, missing)
			}
		}
		t.Fatalf("List = %v, want %v", got, want)
	}
}

// TestClusterKeysCarryPrefix: the layout on a cluster is the layout on
// one server, with plain keys (no hash tags).
func TestClusterKeysCarryPrefix(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"})
	raw := rawCluster(t, c)
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
	var (
		mu   sync.Mutex
		keys []string
	)
	err := raw.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		k, err := n.Keys(ctx, "*").Result()
		mu.Lock()
		keys = append(keys, k...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	want := []string{"fleet1:count:fail/eu", "fleet1:kv:lease/notify", "fleet1:kv:trip/eu", "fleet1:log:history"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys on the cluster = %q, want %q", keys, want)
	}
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

// TestClusterSubscriptionClosesWhenNodeStops: the subscription's node
// going away closes it, on a cluster as on one server.
func TestClusterSubscriptionClosesWhenNodeStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(*redistest.Server)
	}{
		{"stopped", (*redistest.Server).Stop},
		{"paused", (*redistest.Server).Pause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.StartCluster(t)
			s := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"})
			raw := rawCluster(t, c)
			ctx := t.Context()
			sub, err := s.Subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Subscriptions go to the master of the channel's slot.
			node := masterOf(t, raw, "fleet1:events")
			for _, srv := range c.Servers() {
				if srv.Addr() == node {
					tc.stop(srv)
				}
			}
			timeout := time.After(failWait)
			for open := true; open; {
				select {
				case _, open = <-sub:
				case <-timeout:
					t.Fatalf("subscription still open %v after its node %s was %s", failWait, node, tc.name)
				}
			}
		})
	}
}

// TestClusterDeadFailsFast: with every node stopped, every call fails,
// and promptly.
func TestClusterDeadFailsFast(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true})
	ctx := t.Context()
	for name, err := range every(ctx, s) {
		if err != nil {
			t.Fatalf("%s with the cluster up: %v", name, err)
		}
	}
	for _, srv := range c.Servers() {
		srv.Stop()
	}
	start := time.Now()
	done := make(chan map[string]error, 1)
	go func() { done <- every(ctx, s) }()
	select {
	case errs := <-done:
		for _, name := range slices.Sorted(maps.Keys(errs)) {
			if errs[name] == nil {
				t.Errorf("%s succeeded with the cluster stopped", name)
			}
		}
		t.Logf("every call failed in %v", time.Since(start))
	case <-time.After(failWait):
		t.Fatalf("calls to a stopped cluster did not return within %v", failWait)
	}
}

func TestNewClusterURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster bool
		ok      bool
	}{
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", true, true},
		{"redis://127.0.0.1:7000", true, true},
		{"rediss://u:p@127.0.0.1:7000/0?addr=127.0.0.1:7001", true, true},
		{"redis://127.0.0.1:7000/3", true, false},
		{"redis://127.0.0.1:7000?addr=nope", true, false},
		{"http://127.0.0.1:7000", true, false},
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001", false, false},
	} {
		s, err := redisstore.New(redisstore.Options{URL: tc.url, Cluster: tc.cluster})
		if (err == nil) != tc.ok {
			t.Errorf("New(%q, cluster %v): error %v, want ok %v", tc.url, tc.cluster, err, tc.ok)
		}
		if err == nil {
			_ = s.Close()
		} else if !strings.HasPrefix(err.Error(), "redisstore: ") {
			t.Errorf("New(%q): error %q lacks the package prefix", tc.url, err)
		}
	}
}

// TestClusterResubscribeAfterNodeRestart: a subscription closed by its
// node's restart is taken again with Subscribe, and messages flow.
func TestClusterResubscribeAfterNodeRestart(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, roomy(redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"}))
	other := newStore(t, roomy(redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"}))
	raw := rawCluster(t, c)
	ctx := t.Context()
	sub, err := s.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := masterOf(t, raw, "fleet1:events")
	var srv *redistest.Server
	for _, n := range c.Servers() {
		if n.Addr() == node {
			srv = n
		}
	}
	srv.Restart()
	timeout := time.After(failWait)
	for open := true; open; {
		select {
		case _, open = <-sub:
		case <-timeout:
			t.Fatalf("subscription still open %v after its node %s restarted", failWait, node)
		}
	}
	sub, err = s.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe after the node restarted: %v", err)
	}
	if err := other.Publish(ctx, []byte("back")); err != nil {
		t.Fatalf("Publish after the node restarted: %v", err)
	}
	select {
	case msg, ok := <-sub:
		if !ok || string(msg) != "back" {
			t.Errorf("after the restart got %q (open %v), want %q", msg, ok, "back")
		}
	case <-time.After(failWait):
		t.Errorf("no message within %v after the restart", failWait)
	}
}

// TestClusterOneMasterDown: with one master stopped, calls on keys of the
// others still work, and List, which needs every master, fails.
func TestClusterOneMasterDown(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, redisstore.Options{URL: c.URL(), Cluster: true, Prefix: "fleet1:"})
	raw := rawCluster(t, c)
	ctx := t.Context()
	if _, err := s.List(ctx, ""); err != nil {
		t.Fatalf("List with the cluster up: %v", err)
	}
	down := c.Servers()[0]
	var live, dead string
	for i := 0; live == "" || dead == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if masterOf(t, raw, "fleet1:kv:"+k) == down.Addr() {
			dead = k
		} else {
			live = k
		}
	}
	down.Stop()
	start := time.Now()
	defer func() { t.Logf("calls with a master down took %v", time.Since(start)) }()
	if err := s.Put(ctx, live, []byte("v"), time.Minute); err != nil {
		t.Errorf("Put %s on a live master: %v", live, err)
	}
	if err := s.Put(ctx, dead, []byte("v"), time.Minute); err == nil {
		t.Errorf("Put %s on the stopped master succeeded", dead)
	}
	if _, err := s.List(ctx, ""); err == nil {
		t.Error("List succeeded with a master stopped")
	}
}
