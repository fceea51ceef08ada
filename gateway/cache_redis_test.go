package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
)

// withRedis puts the gateway in the fleet of the Redis at url
// (state.redis), whose response cache it then shares.
func withRedis(url string) func(string) string {
	return func(y string) string {
		return strings.Replace(y, "keys:", "state: {redis: {url: \""+url+"\", timeout: 1s}}\nkeys:", 1)
	}
}

// entries is how many entries the index idx ("all", "team:red"…) lists.
func entries(c *redis.Client, idx string) int64 {
	return c.ZCard(context.Background(), "switchover:cache:i:"+idx).Val()
}

// stored waits until the index idx lists n entries: the cache writes to
// Redis in the background.
func stored(t *testing.T, c *redis.Client, idx string, n int64) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() bool { return entries(c, idx) == n },
		func() string { return "the cache's index " + idx + " does not list the entries" })
}

// shutdown stops h's gateway and waits for it to end (its cache writes
// in flight included); the test's cleanup finds it stopped.
func (h *harness) shutdown() {
	h.stop()
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for h.clock.BlockUntilTimer(wctx, 5*time.Second) == nil {
			h.clock.Advance(5 * time.Second)
		}
	}()
	err := <-h.done
	h.done <- err
}

// TestCacheRedisSharesHitsAcrossReplicas: with state.redis, an answer one
// replica stored is a hit on another, byte for byte, and a team's entry
// is never another team's, on either replica.
func TestCacheRedisSharesHitsAcrossReplicas(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	mods := []func(string) string{withRedis(url), withCache("{ttl: 10m}")}
	a := startAnswering(t, mods...)
	b := startAnswering(t, mods...)
	first, body1 := a.post("/v1/chat/completions", chat)
	if result(first) != "miss" {
		t.Fatalf("first call on a: %q, want miss", result(first))
	}
	stored(t, c, "team:red", 1)
	second, body2 := b.post("/v1/chat/completions", chat)
	if second.StatusCode != 200 || result(second) != "hit" {
		t.Fatalf("the same call on b: %d %q, want a hit", second.StatusCode, result(second))
	}
	if body1 != body2 {
		t.Errorf("b's hit differs from a's answer:\n%s\n%s", body1, body2)
	}
	if n := b.weu.Calls() + b.sec.Calls(); n != 0 {
		t.Errorf("b called its backends %d times for a hit", n)
	}
	// Team blue, on b then a: never red's entry.
	if blue, _ := b.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); result(blue) != "miss" {
		t.Fatalf("team blue on b: %q, want miss (red's entry is red's)", result(blue))
	}
	stored(t, c, "team:blue", 1)
	if blue, _ := a.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); result(blue) != "hit" {
		t.Fatalf("team blue on a: %q, want a hit on blue's own entry", result(blue))
	}
	if n := b.weu.Calls(); n != 1 {
		t.Errorf("b called weu %d times, want once (blue's miss)", n)
	}
	if n := entries(c, "all"); n != 2 {
		t.Errorf("Redis holds %d entries, want 2 (one per team)", n)
	}
}

// TestCacheRedisPurgeClearsEveryReplica: a purge on one replica removes
// the entries every replica reads.
func TestCacheRedisPurgeClearsEveryReplica(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	mods := []func(string) string{withRedis(url), withCache("{ttl: 10m}"), withAdmin}
	a := startAnswering(t, mods...)
	b := startAnswering(t, mods...)
	a.post("/v1/chat/completions", chat)
	a.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey)
	stored(t, c, "all", 2)
	if resp, _ := b.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Fatalf("b before the purge: %q, want hit", result(resp))
	}
	code, out := b.adminDo(http.MethodPost, "/admin/cache/purge", `{"team":"red"}`, adminKey)
	if code != 200 || out["purged"] != float64(1) {
		t.Fatalf("purge of team red on b: %d %v", code, out)
	}
	if resp, _ := a.post("/v1/chat/completions", chat); result(resp) != "miss" {
		t.Errorf("a after b purged team red: %q, want miss", result(resp))
	}
	if resp, _ := a.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); result(resp) != "hit" {
		t.Errorf("a, team blue, after b purged team red: %q, want hit", result(resp))
	}
	stored(t, c, "team:red", 1) // a's miss stored red's entry again
	if code, out := a.adminDo(http.MethodPost, "/admin/cache/purge", `{}`, adminKey); code != 200 || out["purged"] != float64(2) {
		t.Fatalf("purge of everything on a: %d %v", code, out)
	}
	if resp, _ := b.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); result(resp) != "miss" {
		t.Errorf("b, team blue, after a purged everything: %q, want miss", result(resp))
	}
}

// TestCacheRedisDownIsAMiss: with Redis stopped mid-test, cacheable calls
// are answered (misses, from the backend), never errors; a purge says it
// failed; once Redis is back, answers are stored and hit again.
func TestCacheRedisDownIsAMiss(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.URL())
	h := startAnswering(t,
		withRedis(srv.URL()), withCache("{ttl: 10m}"), withAdmin)
	h.post("/v1/chat/completions", chat)
	stored(t, c, "all", 1)
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Fatalf("before Redis stops: %q, want hit", result(resp))
	}
	srv.Stop()
	for i := range 3 {
		resp, body := h.post("/v1/chat/completions", chat)
		if resp.StatusCode != 200 || result(resp) != "miss" {
			t.Fatalf("call %d with Redis stopped: %d %q %s, want 200 miss", i, resp.StatusCode, result(resp), body)
		}
	}
	if n := h.weu.Calls(); n != 4 {
		t.Errorf("weu called %d times, want 4 (the first call and the three with Redis stopped)", n)
	}
	if code, _ := h.adminDo(http.MethodPost, "/admin/cache/purge", `{}`, adminKey); code != http.StatusServiceUnavailable {
		t.Errorf("a purge with Redis stopped: %d, want 503", code)
	}
	if !strings.Contains(h.logs.String(), "response cache: the shared state store (Redis) does not answer") {
		t.Error("the outage was not logged")
	}
	srv.Restart()
	h.post("/v1/chat/completions", chat)
	stored(t, c, "all", 1)
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Fatalf("after Redis came back: %q, want hit", result(resp))
	}
}

// TestCacheRedisEntryOverTheCapIsNotStored: an answer larger than
// max_entry is passed on and never written to Redis.
func TestCacheRedisEntryOverTheCapIsNotStored(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	h := startAnswering(t,
		withRedis(url), withCache("{ttl: 10m, max_entry: 16}"))
	for range 2 {
		if resp, _ := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 || result(resp) != "miss" {
			t.Fatalf("a call whose answer is over max_entry: %d %q, want 200 miss", resp.StatusCode, result(resp))
		}
	}
	h.shutdown() // the writes in flight, if any, end
	keys, err := c.Keys(context.Background(), "switchover:cache:*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("Redis holds %v (%v), want no cache key", keys, err)
	}
}

// TestCacheRedisCorruptValueIsAMiss: a value in Redis that does not read
// back as an entry is a miss, answered by the backend, and replaced.
func TestCacheRedisCorruptValueIsAMiss(t *testing.T) {
	url := redistest.Start(t)
	c := redistest.Client(t, url)
	h := startAnswering(t,
		withRedis(url), withCache("{ttl: 10m}"))
	h.post("/v1/chat/completions", chat)
	stored(t, c, "all", 1)
	keys, err := c.Keys(context.Background(), "switchover:cache:e:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("entries in Redis: %v %v", keys, err)
	}
	if err := c.Set(context.Background(), keys[0], "swc1\x01not an entry", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != 200 || result(resp) != "miss" || !strings.Contains(body, "chatcmpl") {
		t.Fatalf("a call over a corrupt entry: %d %q %s, want the backend's answer", resp.StatusCode, result(resp), body)
	}
	poll.Until(t, 10*time.Second, func() bool {
		v, _ := c.Get(context.Background(), keys[0]).Result()
		return strings.HasPrefix(v, "swc1") && !strings.Contains(v, "not an entry")
	}, func() string { return "the corrupt entry was not replaced" })
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Errorf("after the entry was replaced: %q, want hit", result(resp))
	}
}

// TestCacheRedisSilentIsAMiss: a Redis that stops answering (paused, its
// connections open) costs a miss, never an error or a hang.
func TestCacheRedisSilentIsAMiss(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.URL())
	h := startAnswering(t,
		withRedis(srv.URL()), withCache("{ttl: 10m}"))
	h.post("/v1/chat/completions", chat)
	stored(t, c, "all", 1)
	srv.Pause()
	defer srv.Resume()
	for i := range 2 {
		resp, body := h.post("/v1/chat/completions", chat)
		if resp.StatusCode != 200 || result(resp) != "miss" {
			t.Fatalf("call %d with Redis silent: %d %q %s, want 200 miss", i, resp.StatusCode, result(resp), body)
		}
	}
}

// BenchmarkGatewayChatCacheHitRedis is BenchmarkGatewayChatCacheHit with
// the entries in a Redis on loopback (state.redis): every call is a hit
// read from Redis. Compare with BenchmarkGatewayChatCacheHit, in process.
func BenchmarkGatewayChatCacheHitRedis(b *testing.B) {
	url := redistest.Start(b)
	h := startAnswering(b,
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) }, withRedis(url), withCache("{ttl: 1h}"))
	h.post("/v1/chat/completions", chat)
	c := redistest.Client(b, url)
	poll.Until(b, 10*time.Second, func() bool { return entries(c, "all") == 1 }, nil)
	benchPost(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
	if n := h.weu.Calls(); n != 1 {
		b.Errorf("%d upstream calls, want 1", n)
	}
}
