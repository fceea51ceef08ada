package route

import (
	"net/url"
	"strconv"
	"testing"
)

// TestTargetsBuiltOncePerKey: a key's URL is built and parsed once, and
// each key has its own.
func TestTargetsBuiltOncePerKey(t *testing.T) {
	base := parseURL(t, "https://api.example.com/v1")
	var c targets
	builds := 0
	build := func(path string) func() *url.URL {
		return func() *url.URL {
			builds++
			u := *base
			u.Path += "/" + path
			return &u
		}
	}
	a1, _ := c.get(base, "", "sk-1", targetKey{op: ChatCompletions}, build("chat/completions"))
	a2, _ := c.get(base, "", "sk-1", targetKey{op: ChatCompletions}, build("chat/completions"))
	e, _ := c.get(base, "", "sk-1", targetKey{op: Embeddings}, build("embeddings"))
	if a1 != a2 || builds != 2 {
		t.Errorf("same key: targets %p and %p, %d builds; want one target, 2 builds", a1, a2, builds)
	}
	if got := e.url.String(); got != "https://api.example.com/v1/embeddings" {
		t.Errorf("embeddings target %s", got)
	}
	if got := a1.bearer("sk-1"); got != "Bearer sk-1" {
		t.Errorf("bearer %q", got)
	}
	if got := a1.bearer("sk-2"); got != "Bearer sk-2" {
		t.Errorf("bearer of another key %q", got)
	}
}

// TestTargetsNewBaseStartsANewCache: a provider given a new base URL or
// API version does not send to the old one's URLs.
func TestTargetsNewBaseStartsANewCache(t *testing.T) {
	var c targets
	key := targetKey{op: ChatCompletions}
	get := func(base *url.URL, version string) string {
		tg, err := c.get(base, version, "", key, func() *url.URL {
			u := *base
			u.Path += "/" + version
			return &u
		})
		if err != nil {
			t.Fatal(err)
		}
		return tg.url.String()
	}
	old, next := parseURL(t, "https://old.example.com"), parseURL(t, "https://new.example.com")
	for _, tc := range []struct {
		name    string
		base    *url.URL
		version string
		want    string
	}{
		{"first", old, "v1", "https://old.example.com/v1"},
		{"new base", next, "v1", "https://new.example.com/v1"},
		{"new version", next, "v2", "https://new.example.com/v2"},
	} {
		if got := get(tc.base, tc.version); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestTargetsBounded: past maxTargets keys, targets are built per call
// and the cache stops growing.
func TestTargetsBounded(t *testing.T) {
	base := parseURL(t, "https://api.example.com")
	var c targets
	builds := 0
	for i := range maxTargets + 2 {
		key := targetKey{op: ChatCompletions, model: strconv.Itoa(i)}
		for range 2 {
			c.get(base, "", "", key, func() *url.URL { builds++; u := *base; return &u })
		}
	}
	if n := len(c.m.Load().m); n != maxTargets {
		t.Errorf("%d targets cached, want %d", n, maxTargets)
	}
	if want := maxTargets + 2*2; builds != want {
		t.Errorf("%d builds, want %d", builds, want)
	}
}

// TestTargetsObjectPathNeverCached: a call on an object builds its URL,
// with its query, for itself alone.
func TestTargetsObjectPathNeverCached(t *testing.T) {
	base := parseURL(t, "https://api.example.com/v1")
	var c targets
	builds := 0
	o := &Outgoing{Op: Responses, Path: "responses/resp_1", RawQuery: "a=1"}
	for range 2 {
		tg, err := c.lookup(o, base, "", "", targetKey{op: Responses}, func() *url.URL { builds++; u := *base; u.Path += "/" + o.Path; return &u })
		if err != nil {
			t.Fatal(err)
		}
		if got := tg.url.String(); got != "https://api.example.com/v1/responses/resp_1?a=1" {
			t.Errorf("URL %s", got)
		}
	}
	if builds != 2 || c.m.Load() != nil {
		t.Errorf("%d builds, cache %v; want 2 builds and no cache", builds, c.m.Load())
	}
}
