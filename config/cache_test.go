package config

import (
	"strings"
	"testing"
	"time"
)

func TestCacheBadConfigNamesLines(t *testing.T) {
	_, err := Load("testdata/cache.bad.yaml")
	if err == nil {
		t.Fatal("cache.bad.yaml loaded")
	}
	want := []string{
		`cache.bad.yaml:5: keys[0].cache.shared: a key's cache cannot be shared: share a pool's (pools[].cache.shared)`,
		`cache.bad.yaml:15: duration "-1s" is negative`,
		`cache.bad.yaml:19: pools[1].cache: stores nothing (no ttl) and coalesces nothing (coalesce: false): set a ttl, or remove it`,
		`cache.bad.yaml:24: pools[2].cache.max_entry: 2097152 bytes is over cache.max_memory (1048576): no answer would be kept`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

func TestCacheOffByDefaultAndCoalescesWhenOn(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`
backends:
  - {name: b, type: openai, url: "http://127.0.0.1:1", api_key: x}
pools:
  - {name: off, members: [{backend: b}]}
  - {name: on, members: [{backend: b}], cache: {ttl: 10m}}
  - {name: flights, members: [{backend: b}], cache: {coalesce: true}}
  - {name: nocoalesce, members: [{backend: b}], cache: {ttl: 1m, coalesce: false}}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	off, on, flights, nc := c.Pools[0].Cache, c.Pools[1].Cache, c.Pools[2].Cache, c.Pools[3].Cache
	if off.On() || off.CoalesceOn() {
		t.Error("a pool without cache: caches or coalesces")
	}
	if !on.On() || !on.CoalesceOn() || on.TTL.D() != 10*time.Minute {
		t.Errorf("cache {ttl: 10m} = %+v, want on and coalescing", on)
	}
	if !flights.On() || flights.TTL != 0 {
		t.Errorf("cache {coalesce: true} = %+v, want coalescing without a TTL", flights)
	}
	if nc.CoalesceOn() || !nc.On() {
		t.Errorf("coalesce: false = %+v", nc)
	}
}
