package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
)

// withStoredKeys gives the gateway an admin API (adminKey, and a console
// viewer, signinViewerKey) and an SQLite key store, for keys made through
// the admin API.
func withStoredKeys(t *testing.T) func(string) string {
	db := filepath.Join(t.TempDir(), "switchover.db")
	return func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", viewers: [{name: oncall, key: "+signinViewerKey+"}]}\nstore: {sqlite: "+db+"}\nkeys:", 1)
	}
}

// noPoolCache takes withCache's cache off the pool: only keys' own
// caches are left.
func noPoolCache(y string) string { return strings.TrimSuffix(y, "    cache: {ttl: 10m}\n") }

// adminCall sends body to the admin API with key (none: "") and the
// headers hdr (name, value, …), and returns the status and answer.
// refusedButToTheAdmin checks that the admin API refuses method path
// with body to every caller but the admin: without a key, with a wrong
// one, with each of secrets (stored keys'), the configuration's API key
// and a console viewer's key (401), from another origin or by another
// Host (403), and as a form (415).
func (h *harness) refusedButToTheAdmin(method, path, body string, secrets ...string) {
	h.t.Helper()
	type caller struct {
		name, key string
		hdr       []string
		want      int
	}
	callers := []caller{
		{"no key", "", nil, http.StatusUnauthorized},
		{"a wrong key", "not-the-admin-key-0123", nil, http.StatusUnauthorized},
	}
	for i, s := range secrets {
		callers = append(callers, caller{fmt.Sprintf("stored key %d's secret", i+1), s, nil, http.StatusUnauthorized})
	}
	callers = append(callers,
		caller{"the configuration's API key", appKey, nil, http.StatusUnauthorized},
		caller{"a console viewer's key", signinViewerKey, nil, http.StatusUnauthorized},
		caller{"another origin", adminKey, []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		caller{"another host", adminKey, []string{"Host", "evil.example"}, http.StatusForbidden},
		caller{"a form", adminKey, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
	)
	for _, c := range callers {
		if st, b := h.adminCall(method, path, body, c.key, c.hdr...); st != c.want {
			h.t.Errorf("%s: %d %s, want %d", c.name, st, b, c.want)
		}
	}
}

func (h *harness) adminCall(method, path, body, key string, hdr ...string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.admin+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1] // net/http sends req.Host, not the header
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// storedKey makes a key through the admin API from body and returns its
// ID and secret; the gateway knows it when the call returns.
func (h *harness) storedKey(body string) (id, secret string) {
	h.t.Helper()
	st, b := h.adminCall(http.MethodPost, "/admin/keys", body, adminKey)
	var a struct {
		Key    struct{ ID string }
		Secret string
	}
	if err := json.Unmarshal(b, &a); st != http.StatusCreated || err != nil {
		h.t.Fatalf("creating a key %s: %d %s", body, st, b)
	}
	return a.Key.ID, a.Secret
}

// cached posts chat as the key secret, after any flight under way has
// landed (so that a repeat is a hit, not coalesced), and returns the
// answer's x-switchover-cache.
func (h *harness) cached(secret string) string {
	h.t.Helper()
	poll.Until(h.t, 30*time.Second, func() bool { return h.gw.CacheFlights() == 0 }, func() string { return "a flight has not landed" })
	resp, body := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+secret)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("chat as a stored key: %d %s", resp.StatusCode, body)
	}
	return resp.Header.Get("X-Switchover-Cache")
}

// TestCacheStoredKeyOwnSettings: a key made through the admin API with a
// cache of its own, on a pool that caches nothing (and a configuration
// in which no pool or key caches), gets its second identical call from
// the cache: one upstream call. A stored key without one is not cached,
// and its own cache's TTL is its own.
func TestCacheStoredKeyOwnSettings(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"), noPoolCache, withStoredKeys(t))
	_, own := h.storedKey(`{"name":"own","team":"red","cache":{"ttl":"1m","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}}`)
	_, plain := h.storedKey(`{"name":"plain","team":"blue"}`)
	if got := []string{h.cached(own), h.cached(own)}; strings.Join(got, ",") != "miss,hit" {
		t.Fatalf("the stored key's call and its repeat: %v, want miss,hit", got)
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 1 {
		t.Fatalf("%d upstream calls for a call and its repeat, want 1", n)
	}
	for i := range 2 {
		if got := h.cached(plain); got != "" {
			t.Errorf("a stored key without a cache, call %d: x-switchover-cache %q, want none", i, got)
		}
	}
	h.clock.Advance(61 * time.Second) // past the key's ttl, well within the 10m of withCache
	if got := h.cached(own); got != "miss" {
		t.Errorf("past the key's own ttl: %q, want miss", got)
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 4 {
		t.Errorf("%d upstream calls, want 4", n)
	}
}

// TestCacheStoredKeySharedOnlyByThePool: a stored key's own cache is
// scoped to its team, even on a pool that shares its cache: a key of the
// same team reads its entries, a key of another team never does, nor do
// the keys that follow the pool's shared cache; those share the pool's
// entries between teams, as the pool asks.
func TestCacheStoredKeySharedOnlyByThePool(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m, shared: true}"), withStoredKeys(t))
	_, red := h.storedKey(`{"name":"red-own","team":"red","cache":{"ttl":"10m"}}`)
	_, red2 := h.storedKey(`{"name":"red-own-2","team":"red","cache":{"ttl":"10m"}}`)
	_, blue := h.storedKey(`{"name":"blue-own","team":"blue","cache":{"ttl":"10m"}}`)
	_, loner := h.storedKey(`{"name":"no-team","cache":{"ttl":"10m"}}`)
	_, poolRed := h.storedKey(`{"name":"red-pool","team":"red"}`)
	_, poolBlue := h.storedKey(`{"name":"blue-pool","team":"blue"}`)
	steps := []struct {
		who, secret, want string
	}{
		{"red's key", red, "miss"},
		{"another key of red", red2, "hit"},
		{"blue's key, same prompt", blue, "miss"},
		{"blue's key again", blue, "hit"},
		{"a key of no team", loner, "miss"},
		{"red's key following the shared pool", poolRed, "miss"},
		{"blue's key following the shared pool", poolBlue, "hit"},
		{"the configuration's key of red, following the pool", appKey, "hit"},
		{"red's key, after all that", red, "hit"},
	}
	for _, s := range steps {
		if got := h.cached(s.secret); got != s.want {
			t.Errorf("%s: %q, want %q", s.who, got, s.want)
		}
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 4 {
		t.Errorf("%d upstream calls, want 4 (red's, blue's, the lone key's, the shared pool's)", n)
	}
}

// TestCacheStoredKeySettingsNeedTheAdmin: a stored key's cache is changed
// only with the admin key: without a key, with a wrong one, with the key's
// own secret or the configuration's API key, with a console viewer's key,
// from another origin, by another Host and as a form, the change is
// refused and the key stays uncached; with the admin key it takes effect.
func TestCacheStoredKeySettingsNeedTheAdmin(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"), noPoolCache, withStoredKeys(t))
	id, secret := h.storedKey(`{"name":"target","team":"red"}`)
	path, body := "/admin/keys/"+id, `{"cache":{"ttl":"10m"}}`
	h.refusedButToTheAdmin(http.MethodPatch, path, body, secret)
	if st, b := h.adminCall(http.MethodPost, "/admin/keys", `{"name":"mallory","cache":{"ttl":"1h"}}`, secret); st != http.StatusUnauthorized {
		t.Errorf("a key with a cache made with a stored key's secret: %d %s", st, b)
	}
	if ks, err := h.gw.Ledger().Keys(t.Context()); err != nil || len(ks) != 1 || ks[0].Cache != nil {
		t.Fatalf("after the refusals the store has %+v (%v); want the one key, without a cache", ks, err)
	}
	for i := range 2 {
		if got := h.cached(secret); got != "" {
			t.Fatalf("call %d after the refusals: x-switchover-cache %q, want none", i, got)
		}
	}
	if st, b := h.adminCall(http.MethodPatch, path, body, adminKey); st != http.StatusOK || !strings.Contains(string(b), `"ttl": "10m0s"`) {
		t.Fatalf("with the admin key: %d %s", st, b)
	}
	if got := []string{h.cached(secret), h.cached(secret)}; strings.Join(got, ",") != "miss,hit" {
		t.Fatalf("after the admin's change: %v, want miss,hit", got)
	}
}
