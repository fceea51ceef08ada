package route

import (
	"maps"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// target is a request URL as http.NewRequest parses it: the URL and the
// request's Host. A provider builds it once per operation (see targets).
type target struct {
	url  *url.URL
	host string

	apiKey, bearerKey string // the key bearerKey was built from, and "Bearer "+apiKey
}

// newTarget parses u's string form as http.NewRequest would: the URL an
// attempt sends is exactly the one it sent when it built the string
// itself.
// apiKey, if set, is the key whose bearer header it keeps.
func newTarget(u *url.URL, apiKey string) (*target, error) {
	req, err := http.NewRequest(http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	t := &target{url: req.URL, host: req.Host}
	if apiKey != "" {
		t.apiKey, t.bearerKey = apiKey, "Bearer "+apiKey
	}
	return t, nil
}

// bearer returns "Bearer "+key, built once for the key the target was
// first asked for.
func (t *target) bearer(key string) string {
	if t.bearerKey != "" && t.apiKey == key {
		return t.bearerKey
	}
	return "Bearer " + key
}

// targetKey names a cached target: the operation, and for an Azure
// deployment path the deployment.
type targetKey struct {
	op    Operation
	model string
}

// maxTargets bounds a provider's cached targets; past it, targets are
// built per request as before.
const maxTargets = 64

// targets caches a provider's request URLs, so that an attempt neither
// builds nor parses its URL. The cache belongs to one base URL (by
// pointer) and API version: a provider given a new base URL or version
// starts a new cache. It is safe for concurrent use; lookups take no lock.
type targets struct {
	mu sync.Mutex
	m  atomic.Pointer[targetMap]
}

type targetMap struct {
	base    *url.URL
	version string
	m       map[targetKey]*target
}

// get returns the target for key under base and version, building its
// URL with build the first time, and keeping the bearer header of apiKey.
func (c *targets) get(base *url.URL, version, apiKey string, key targetKey, build func() *url.URL) (*target, error) {
	if tm := c.m.Load(); tm != nil && tm.base == base && tm.version == version {
		if t, ok := tm.m[key]; ok {
			return t, nil
		}
	}
	t, err := newTarget(build(), apiKey)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil && (old.base != base || old.version != version) {
		old = nil
	}
	if old != nil && len(old.m) >= maxTargets {
		return t, nil
	}
	next := &targetMap{base: base, version: version, m: make(map[targetKey]*target, 1)}
	if old != nil {
		maps.Copy(next.m, old.m)
	}
	next.m[key] = t
	c.m.Store(next)
	return t, nil
}

// lookup returns o's target: from c, built once per key, for an
// operation; built for this call alone for an object path.
func (c *targets) lookup(o *Outgoing, base *url.URL, version, apiKey string, key targetKey, build func() *url.URL) (*target, error) {
	if o.Path != "" {
		u := build()
		u.RawQuery = o.RawQuery
		return newTarget(u, apiKey)
	}
	return c.get(base, version, apiKey, key, build)
}
