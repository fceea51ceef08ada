package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchover-gw/switchover/proxy"
)

// cacheMetrics are the response cache's (proxy.CacheObserver).
type cacheMetrics struct {
	requests *prometheus.CounterVec
	replayed *prometheus.CounterVec
	stored   *prometheus.CounterVec
	evicted  *prometheus.CounterVec
	storeErr *prometheus.CounterVec
	saved    *prometheus.CounterVec
}

var _ proxy.CacheObserver = (*Metrics)(nil)

func (m *Metrics) newCacheMetrics() {
	c := &m.cache
	c.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_requests_total",
		Help: "Cacheable calls of pools and keys with a cache: section, by pool and result: hit (answered from the cache), coalesced (answered by an identical call in flight), miss (sent to a backend), bypass (the caller's Cache-Control: no-store or x-switchover-cache: bypass).",
	}, []string{"pool", "result"})
	c.replayed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_replayed_bytes_total",
		Help: "Bytes of answers replayed from the cache or an identical call in flight, by pool.",
	}, []string{"pool"})
	c.stored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_stored_bytes_total",
		Help: "Bytes of answers stored in the response cache, by pool (their size as the memory bound counts it).",
	}, []string{"pool"})
	c.evicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_evictions_total",
		Help: "Entries that left the in-process response cache, by pool and cause: size (the cache.max_memory bound) or expired (their ttl).",
	}, []string{"pool", "cause"})
	c.saved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_saved_usd_total",
		Help: "What the answers replayed from the cache or an identical call in flight had cost when they were made, in US dollars at list price, by pool: the spend the cache saved.",
	}, []string{"pool"})
	c.storeErr = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cache_store_errors_total",
		Help: "Failed calls of the response cache to its shared store (Redis, with state.redis), by op: get (a lookup that failed or timed out: a miss), set (a write that failed: not stored), busy (a write dropped, too many in flight), corrupt (a stored value that did not read back: a miss). Never an error to a caller.",
	}, []string{"op"})
	m.Registry.MustRegister(m.cacheCollectors()...)
}

// cacheCollectors are the response cache's collectors.
func (m *Metrics) cacheCollectors() []prometheus.Collector {
	c := &m.cache
	return []prometheus.Collector{c.requests, c.replayed, c.stored, c.evicted, c.saved, c.storeErr}
}

// CacheResult implements proxy.CacheObserver.
func (m *Metrics) CacheResult(pool, result string, bytes int) {
	m.cache.requests.WithLabelValues(pool, result).Inc()
	if bytes > 0 {
		m.cache.replayed.WithLabelValues(pool).Add(float64(bytes))
	}
}

// CacheStored implements proxy.CacheObserver.
func (m *Metrics) CacheStored(pool string, bytes int) {
	m.cache.stored.WithLabelValues(pool).Add(float64(bytes))
}

// CacheEvicted implements proxy.CacheObserver.
func (m *Metrics) CacheEvicted(pool, cause string) {
	m.cache.evicted.WithLabelValues(pool, cause).Inc()
}

// CacheSaved counts what a replayed answer of pool had cost, in US
// dollars.
func (m *Metrics) CacheSaved(pool string, usd float64) {
	m.cache.saved.WithLabelValues(pool).Add(usd)
}

// CacheStoreError counts a failed call of the response cache to its
// shared store (op: get, set, busy, corrupt).
func (m *Metrics) CacheStoreError(op string) {
	m.cache.storeErr.WithLabelValues(op).Inc()
}
