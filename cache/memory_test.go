package cache

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func entry(pool, scope, key string, size int) *Entry {
	return &Entry{Status: 200, Body: bytes.Repeat([]byte("x"), size), Stored: t0, TTL: time.Hour, Pool: pool, Scope: scope, Key: key}
}

func TestMemoryGetIsFreshOnly(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	defer m.Close()
	k := Key{1}
	m.Set(k, entry("p", "", "", 10))
	if _, ok := m.Get(k, t0.Add(59*time.Minute)); !ok {
		t.Fatal("a fresh entry was not found")
	}
	if _, ok := m.Get(k, t0.Add(time.Hour)); ok {
		t.Fatal("an entry past its TTL was found")
	}
	if _, ok := m.Get(Key{2}, t0); ok {
		t.Fatal("a key never set was found")
	}
}

// TestMemoryStaysUnderItsBound: a store of 1 MiB given 4 MiB of entries
// keeps at most its bound, and reports the evictions.
func TestMemoryStaysUnderItsBound(t *testing.T) {
	var mu sync.Mutex
	evicted := 0
	m := NewMemory(MemoryOptions{MaxBytes: 1 << 20, OnEvict: func(cause string, e *Entry) {
		if cause == "size" {
			mu.Lock()
			evicted++
			mu.Unlock()
		}
	}})
	defer m.Close()
	for i := range 256 {
		m.Set(Key{byte(i), byte(i >> 8)}, entry("p", "", "", 16<<10))
	}
	m.c.CleanUp()
	if b := m.Bytes(); b > 1<<20 {
		t.Fatalf("%d bytes held, over the 1 MiB bound", b)
	}
	poll.Until(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return evicted > 0 }, func() string { return "no eviction reported" })
}

func TestMemoryPurgeSelects(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	defer m.Close()
	m.Set(Key{1}, entry("a", "t:red", "k1", 1))
	m.Set(Key{2}, entry("a", "t:blue", "k2", 1))
	m.Set(Key{3}, entry("b", "t:red", "k3", 1))
	m.Set(Key{4}, entry("b", "k:k4", "k4", 1))
	if n := m.Purge(Filter{Team: "red", Pool: "b"}); n != 1 {
		t.Fatalf("purge team red of pool b: %d, want 1", n)
	}
	if _, ok := m.Get(Key{1}, t0); !ok {
		t.Fatal("the purge took team red's entry of pool a")
	}
	if n := m.Purge(Filter{Key: "k4"}); n != 1 {
		t.Fatalf("purge key k4: %d", n)
	}
	if n := m.Purge(Filter{}); n != 2 {
		t.Fatalf("purge all: %d, want the 2 left", n)
	}
}

func TestStreamComplete(t *testing.T) {
	cases := []struct {
		name, op, format, body string
		want                   bool
	}{
		{"openai whole", "chat/completions", "openai", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", true},
		{"openai cut", "chat/completions", "openai", "data: {\"choices\":[]}\n\n", false},
		{"openai error event", "chat/completions", "openai", "data: {\"choices\":[]}\n\nevent: error\ndata: {}\n\ndata: [DONE]\n\n", false},
		{"anthropic whole", "messages", "anthropic", "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", true},
		{"anthropic cut", "messages", "anthropic", "event: message_start\ndata: {}\n\n", false},
		{"responses whole", "responses", "openai", "event: response.created\ndata: {}\n\nevent: response.completed\ndata: {}\n\n", true},
		{"responses failed", "responses", "openai", "event: response.created\ndata: {}\n\nevent: response.failed\ndata: {}\n\n", false},
		{"gemini whole", "chat/completions", "gemini", "data: {\"candidates\":[]}\n\ndata: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\n", true},
		{"gemini cut", "chat/completions", "gemini", "data: {\"candidates\":[{\"finishReason\":\"STOP\"}]}\n\ndata: {\"candidates\":[]}\n\n", false},
	}
	for _, c := range cases {
		if got := StreamComplete(c.op, c.format, []byte(c.body)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestStoredHeaderDropsWhatBelongsToOneResponse(t *testing.T) {
	h := map[string][]string{"Content-Type": {"application/json"}, "X-Request-Id": {"a"}, "X-Ratelimit-Remaining-Requests": {"5"},
		"Anthropic-Ratelimit-Tokens-Remaining": {"1"}, "Set-Cookie": {"s=1"}, "Openai-Model": {"gpt-4o"}, "Retry-After": {"1"}, "Date": {"x"},
		"X-Switchover-Attempts": {"2"}, "X-Switchover-Failover": {"true"}, "X-Switchover-Hedge": {"won"}, "X-Switchover-Queue-Wait-Ms": {"40"},
		"X-Switchover-Backend": {"aoai-sec"}, "X-Switchover-Region": {"swedencentral"}}
	got := StoredHeader(h)
	if len(got) != 4 || got.Get("Content-Type") == "" || got.Get("Openai-Model") == "" ||
		got.Get("X-Switchover-Backend") != "aoai-sec" || got.Get("X-Switchover-Region") != "swedencentral" {
		t.Fatalf("stored %v, want Content-Type, Openai-Model and who made the answer (backend, region)", got)
	}
}

func TestNoStore(t *testing.T) {
	for v, want := range map[string]bool{"no-store": true, "private, max-age=0": true, "No-Store": true, "no-cache": false, "max-age=60": false, "": false} {
		if got := NoStore([]string{v}); got != want {
			t.Errorf("NoStore(%q) = %v", v, got)
		}
	}
}
