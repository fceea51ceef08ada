package rediscache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/cache/rediscache"
	"github.com/switchover-gw/switchover/internal/redistest"
	"github.com/switchover-gw/switchover/route"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newStore(t *testing.T, c redis.UniversalClient, o rediscache.Options) *rediscache.Store {
	t.Helper()
	o.Client = c
	s := rediscache.New(o)
	t.Cleanup(s.Close)
	return s
}

func entry(pool, scope, key, body string) *cache.Entry {
	return &cache.Entry{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body),
		Stored: t0, TTL: time.Hour, Pool: pool, Scope: scope, Key: key, Backend: "weu",
		Usage: route.Usage{Known: true, Prompt: 12, Completion: 34, Model: "gpt-4o"}}
}

func TestEncodeRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
	}{
		{"empty", ""},
		{"small", `{"id":"chatcmpl-1"}`},
		{"compressible", strings.Repeat(`{"choices":[{"delta":{"content":"hello"}}]}`+"\n\n", 200)},
		{"incompressible", string(func() []byte { // a byte sequence DEFLATE cannot shrink
			b := make([]byte, 4096)
			x := uint32(2463534242)
			for i := range b {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				b[i] = byte(x)
			}
			return b
		}())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entry("p", "t:red", "app", tc.body)
			v, err := rediscache.Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := rediscache.Decode(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, e.Body) || got.Status != e.Status || !got.Stored.Equal(e.Stored) || got.TTL != e.TTL ||
				got.Pool != e.Pool || got.Scope != e.Scope || got.Key != e.Key || got.Backend != e.Backend || got.Usage != e.Usage ||
				got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("decoded %+v, want %+v", got, e)
			}
			if tc.name == "compressible" && len(v) > len(tc.body)/4 {
				t.Errorf("a repetitive body of %d bytes is stored in %d: not compressed", len(tc.body), len(v))
			}
		})
	}
}

// TestDecodeRefusesCorruptValues: a value that is not an entry, or a
// truncated or altered one, does not decode (Get reads it as a miss).
func TestDecodeRefusesCorruptValues(t *testing.T) {
	v, err := rediscache.Encode(entry("p", "", "", strings.Repeat("abc", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(v)
	flipped[len(flipped)-10] ^= 0xff
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"another program": []byte(`{"hello":"world"}`),
		"truncated head":  v[:8],
		"truncated body":  v[:len(v)-20],
		"flipped body":    flipped,
		"bad flag":        append([]byte("swc1\x07"), v[5:]...),
	} {
		if _, err := rediscache.Decode(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestStoreSharesEntriesThroughRedis(t *testing.T) {
	url := redistest.Start(t)
	a := newStore(t, redistest.Client(t, url), rediscache.Options{})
	b := newStore(t, redistest.Client(t, url), rediscache.Options{})
	k := cache.Key{1, 2, 3}
	if _, ok := b.Get(k, t0); ok {
		t.Fatal("an entry never set was found")
	}
	a.Set(k, entry("p", "t:red", "app", `{"x":1}`))
	a.Flush()
	e, ok := b.Get(k, t0.Add(time.Minute))
	if !ok || string(e.Body) != `{"x":1}` {
		t.Fatalf("the other store's Get = %v, %v; want the entry", e, ok)
	}
	if _, ok := b.Get(k, t0.Add(time.Hour)); ok {
		t.Error("an entry past its TTL was found")
	}
	ttl := redistest.Client(t, url).PTTL(context.Background(), a.EntryKey(k)).Val()
	if ttl <= 0 || ttl > time.Hour {
		t.Errorf("the entry's expiry in Redis is %v, want its TTL (1h)", ttl)
	}
}

// TestStoreCorruptValueIsAMiss: a value in an entry's place that does not
// read back is a miss, and the next Set replaces it.
func TestStoreCorruptValueIsAMiss(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	errs := &opCounts{}
	s := newStore(t, c, rediscache.Options{OnError: errs.add})
	k := cache.Key{9}
	if err := c.Set(context.Background(), s.EntryKey(k), "swc1\x01garbage", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(k, t0); ok {
		t.Fatal("a corrupt value was a hit")
	}
	if got := errs.get(); got != "corrupt:1" {
		t.Errorf("errors counted %q, want corrupt:1", got)
	}
	s.Set(k, entry("p", "", "", "fine"))
	s.Flush()
	if e, ok := s.Get(k, t0); !ok || string(e.Body) != "fine" {
		t.Fatalf("after a Set, Get = %v, %v", e, ok)
	}
}

// TestStoreRedisDownIsAMiss: with Redis stopped, a Get is a miss and a
// Set is dropped, each within the timeout, and the health hook hears the
// failure once and the recovery once.
func TestStoreRedisDownIsAMiss(t *testing.T) {
	srv := redistest.StartServer(t)
	var mu sync.Mutex
	var heard []error
	errs := &opCounts{}
	s := newStore(t, redistest.Client(t, srv.URL()), rediscache.Options{OnError: errs.add, OnHealth: func(err error) {
		mu.Lock()
		heard = append(heard, err)
		mu.Unlock()
	}})
	k := cache.Key{4}
	s.Set(k, entry("p", "", "", "one"))
	s.Flush()
	srv.Stop()
	for range 3 {
		if _, ok := s.Get(k, t0); ok {
			t.Fatal("a Get with Redis stopped was a hit")
		}
		s.Set(k, entry("p", "", "", "two"))
		s.Flush()
	}
	srv.Restart()
	s.Set(k, entry("p", "", "", "three"))
	s.Flush()
	if e, ok := s.Get(k, t0); !ok || string(e.Body) != "three" {
		t.Fatalf("after Redis came back, Get = %v, %v", e, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || heard[0] == nil || heard[1] != nil {
		t.Errorf("the health hook heard %v, want one failure then one recovery", heard)
	}
	if got := errs.get(); got != "get:3 set:3" {
		t.Errorf("errors counted %q, want every failed call: get:3 set:3", got)
	}
}

// TestStoreRedisSilentIsAMissWithinTheTimeout: a server that stops
// answering (paused) makes Gets misses, not hangs.
func TestStoreRedisSilentIsAMissWithinTheTimeout(t *testing.T) {
	// Mostly waiting on servers and timeouts: beside the package's others.
	t.Parallel()
	srv := redistest.StartServer(t)
	s := newStore(t, redistest.Client(t, srv.URL()), rediscache.Options{Timeout: 20 * time.Millisecond})
	k := cache.Key{5}
	s.Set(k, entry("p", "", "", "one"))
	s.Flush()
	srv.Pause()
	defer srv.Resume()
	done := make(chan bool)
	go func() {
		_, ok := s.Get(k, t0)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("a Get of a paused server was a hit")
		}
	case <-time.After(30 * time.Second): // a hang, not a latency bound
		t.Fatal("a Get of a paused server did not return")
	}
}

// TestStoreWritesPastMaxWritesAreDropped: past MaxWrites writes in
// flight, a Set is dropped, never queued without bound.
func TestStoreWritesPastMaxWritesAreDropped(t *testing.T) {
	srv := redistest.StartServer(t)
	var mu sync.Mutex
	var heard []error
	s := newStore(t, redistest.Client(t, srv.URL()), rediscache.Options{MaxWrites: 1, OnHealth: func(err error) {
		mu.Lock()
		heard = append(heard, err)
		mu.Unlock()
	}})
	srv.Pause() // the first write hangs until its timeout
	s.Set(cache.Key{1}, entry("p", "", "", "one"))
	s.Set(cache.Key{2}, entry("p", "", "", "two"))
	srv.Resume()
	s.Flush()
	mu.Lock()
	defer mu.Unlock()
	if len(heard) == 0 || !errors.Is(heard[0], rediscache.ErrBusy) {
		t.Errorf("the health hook heard %v, want ErrBusy first", heard)
	}
}

func TestStorePurge(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	entries := map[cache.Key]*cache.Entry{
		{1}: entry("chat", "t:red", "app", "1"),
		{2}: entry("chat", "t:blue", "blue", "2"),
		{3}: entry("embed", "t:red", "app", "3"),
		{4}: entry("embed", "k:solo", "solo", "4"),
		{5}: entry("chat", "", "solo", "5"),
	}
	for _, tc := range []struct {
		name string
		f    cache.Filter
		gone []cache.Key
	}{
		{"pool", cache.Filter{Pool: "chat"}, []cache.Key{{1}, {2}, {5}}},
		{"team", cache.Filter{Team: "red"}, []cache.Key{{1}, {3}}},
		{"key", cache.Filter{Key: "solo"}, []cache.Key{{4}, {5}}},
		{"team and pool", cache.Filter{Team: "red", Pool: "embed"}, []cache.Key{{3}}},
		{"key and pool", cache.Filter{Key: "app", Pool: "chat"}, []cache.Key{{1}}},
		{"all", cache.Filter{}, []cache.Key{{1}, {2}, {3}, {4}, {5}}},
		{"nothing", cache.Filter{Team: "green"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.FlushAll(context.Background())
			a := newStore(t, c, rediscache.Options{})
			b := newStore(t, redistest.Client(t, url), rediscache.Options{})
			for k, e := range entries {
				a.Set(k, e)
			}
			a.Flush()
			n, err := b.PurgeContext(context.Background(), tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tc.gone) {
				t.Errorf("purged %d, want %d", n, len(tc.gone))
			}
			for k := range entries {
				_, ok := a.Get(k, t0)
				if want := !contains(tc.gone, k); ok != want {
					t.Errorf("entry %d present = %v after the purge, want %v", k[0], ok, want)
				}
			}
		})
	}
}

// TestStorePurgeByKeyChecksWhoMadeTheEntry: an entry of a team made by
// one key, then made again by another key of the team, is not purged as
// the first key's.
func TestStorePurgeByKeyChecksWhoMadeTheEntry(t *testing.T) {
	url := redistest.Start(t)
	s := newStore(t, redistest.Client(t, url), rediscache.Options{})
	k := cache.Key{7}
	s.Set(k, entry("chat", "t:red", "app", "first"))
	s.Flush()
	s.Set(k, entry("chat", "t:red", "other", "second"))
	s.Flush()
	if n := s.Purge(cache.Filter{Key: "app"}); n != 0 {
		t.Errorf("a purge of key app removed %d entries made by key other", n)
	}
	if n := s.Purge(cache.Filter{Key: "other"}); n != 1 {
		t.Errorf("a purge of key other removed %d, want 1", n)
	}
}

// TestStoreIndexesDropExpiredMembers: an index keeps no member past its
// entry's expiry once another entry is written to it.
func TestStoreIndexesDropExpiredMembers(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	s := newStore(t, c, rediscache.Options{})
	old := entry("chat", "", "", "old")
	old.TTL = time.Minute
	s.Set(cache.Key{1}, old)
	s.Flush()
	late := entry("chat", "", "", "late")
	late.Stored = t0.Add(2 * time.Minute)
	s.Set(cache.Key{2}, late)
	s.Flush()
	n := c.ZCard(context.Background(), "switchover:cache:i:pool:chat").Val()
	if n != 1 {
		t.Errorf("the pool's index has %d members, want 1 (the expired one dropped)", n)
	}
	if ttl := c.PTTL(context.Background(), "switchover:cache:i:pool:chat").Val(); ttl <= 0 {
		t.Errorf("the pool's index has no expiry (%v)", ttl)
	}
}

func contains(ks []cache.Key, k cache.Key) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// chatAnswer is a chat completion of about 1.5 KB, as a hit replays it.
var chatAnswer = `{"id":"chatcmpl-AbCdEf0123456789","object":"chat.completion","created":1764680000,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"` +
	strings.Repeat("The gateway answers a repeated question from its cache instead of a backend. ", 16) +
	`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":260,"total_tokens":302}}`

func BenchmarkEncode(b *testing.B) {
	e := entry("chat", "t:red", "app", chatAnswer)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		v, _ := rediscache.Encode(e)
		n = len(v)
	}
	b.ReportMetric(float64(n), "stored-bytes")
	b.ReportMetric(float64(len(chatAnswer)), "body-bytes")
}

func BenchmarkDecode(b *testing.B) {
	v, _ := rediscache.Encode(entry("chat", "t:red", "app", chatAnswer))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rediscache.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetHit is a hit through a real Redis on loopback.
func BenchmarkGetHit(b *testing.B) {
	url := redistest.Start(b)
	c := redistest.Client(b, url)
	s := rediscache.New(rediscache.Options{Client: c})
	k := cache.Key{1}
	s.Set(k, entry("chat", "t:red", "app", chatAnswer))
	s.Flush()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Get(k, t0); !ok {
			b.Fatal("miss")
		}
	}
}

// TestStoreOnACluster: on Redis Cluster, entries written through one
// client are read through another, and purges by pool, team and key
// reach entries spread over the masters (every command on one key).
func TestStoreOnACluster(t *testing.T) {
	// Mostly waiting on servers and timeouts: beside the package's others.
	t.Parallel()
	cl := redistest.StartCluster(t)
	newClient := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := newStore(t, newClient(), rediscache.Options{Timeout: time.Second})
	b := newStore(t, newClient(), rediscache.Options{Timeout: time.Second})
	teams := []string{"red", "blue"}
	for i := range 40 {
		a.Set(cache.Key{byte(i)}, entry("chat", "t:"+teams[i%2], "app-"+teams[i%2], "body"))
	}
	a.Flush()
	for i := range 40 {
		if _, ok := b.Get(cache.Key{byte(i)}, t0); !ok {
			t.Fatalf("entry %d not read through the other client", i)
		}
	}
	for _, tc := range []struct {
		f    cache.Filter
		want int
	}{
		{cache.Filter{Team: "red"}, 20},
		{cache.Filter{Key: "app-blue", Pool: "chat"}, 20},
		{cache.Filter{}, 0},
	} {
		n, err := b.PurgeContext(context.Background(), tc.f)
		if err != nil || n != tc.want {
			t.Errorf("purge %+v: %d, %v; want %d", tc.f, n, err, tc.want)
		}
	}
	for i := range 40 {
		if _, ok := a.Get(cache.Key{byte(i)}, t0); ok {
			t.Errorf("entry %d is still there after the purges", i)
		}
	}
}

// opCounts counts the ops an OnError hook hears.
type opCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounts) add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[op]++
}

// get is the counts as "op:n" in op order.
func (c *opCounts) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := make([]string, 0, len(c.n))
	for op, n := range c.n {
		ops = append(ops, fmt.Sprintf("%s:%d", op, n))
	}
	sort.Strings(ops)
	return strings.Join(ops, " ")
}
