package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// tenancy is the metrics of keys' limits and the usage store. The store's
// gauge is registered by the first StoreUp, so that a gateway without a
// store does not report one down.
type tenancy struct {
	once     sync.Once
	upOnce   sync.Once
	limited  *prometheus.CounterVec
	budget   *prometheus.CounterVec
	dropped  prometheus.Counter
	storeUp  prometheus.Gauge
	failures *prometheus.CounterVec
	pruned   prometheus.Counter
	// endUsers and evicted read endSource (EndUsers); 0 until it is set.
	endUsers  prometheus.GaugeFunc
	evicted   prometheus.CounterFunc
	endSource atomic.Pointer[EndUserSource]
}

// EndUserSource is what the end-user metrics read: tenant.EndUsers.
// Its methods are called at each scrape, so they must be safe for
// concurrent use and cheap.
type EndUserSource interface {
	// Len returns the end users kept.
	Len() int
	// Evicted returns how many end users were forgotten to make room,
	// since start.
	Evicted() int64
}

func (m *Metrics) tenancy() *tenancy {
	t := &m.ten
	t.once.Do(func() {
		t.limited = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchover_key_refused_total",
			Help: "Requests refused at a key's or team's own limits before reaching a backend, by key, code (rate_limit_exceeded, budget_exceeded, model_not_allowed) and limit (requests per minute, tokens per minute, concurrent requests, request body memory, budget, pool, model).",
		}, []string{"key", "code", "limit"})
		t.budget = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchover_budget_alerts_total",
			Help: "Budgets that reached a share of their amount in their period (threshold 0.8 or 1), by subject (key or team).",
		}, []string{"subject", "threshold"})
		t.dropped = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchover_usage_dropped_total",
			Help: "Usage records not stored: the usage buffer (store.buffer) was full while the store was slow or down, the store refused them, or they were unwritten when the shutdown grace ended and no spool (store.spool) kept them. Metrics and the request log still have them.",
		})
		t.storeUp = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchover_store_up",
			Help: "1 while the store of keys and usage works, 0 from a failed write until a write succeeds (reads that work meanwhile do not count) and from a failed read until a read succeeds: known keys keep working from memory and usage waits in the buffer (and the spool).",
		})
		t.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchover_store_errors_total",
			Help: "Failed calls to the store of keys and usage, by operation (write, refresh, spool: a write or fsync of the local usage spool, retention: a delete of old usage records).",
		}, []string{"op"})
		t.pruned = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchover_usage_pruned_total",
			Help: "Per-request usage records deleted by store.retention (older than it); the daily sums stay.",
		})
		t.endUsers = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchover_end_users",
			Help: "End users whose limits this replica keeps (rates, requests in flight, spend): those met in the last 10 minutes or with requests in flight, at most 20,000.",
		}, func() float64 {
			if src := t.endSource.Load(); src != nil {
				return float64((*src).Len())
			}
			return 0
		})
		t.evicted = prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "switchover_end_users_evicted_total",
			Help: "End users forgotten to make room for others while the table was full (20,000): their rate limits start afresh, and their spend is read again from the store when they come back.",
		}, func() float64 {
			if src := t.endSource.Load(); src != nil {
				return float64((*src).Evicted())
			}
			return 0
		})
		m.Registry.MustRegister(t.limited, t.budget, t.dropped, t.failures, t.pruned, t.endUsers, t.evicted)
	})
	return t
}

// tenancyCollectors are the tenancy metrics, for Names.
func (m *Metrics) tenancyCollectors() []prometheus.Collector {
	t := m.tenancy()
	return []prometheus.Collector{t.limited, t.budget, t.dropped, t.storeUp, t.failures, t.pruned, t.endUsers, t.evicted}
}

// EndUsers makes switchover_end_users and
// switchover_end_users_evicted_total read src (nil: 0 again).
func (m *Metrics) EndUsers(src EndUserSource) {
	t := m.tenancy()
	if src == nil {
		t.endSource.Store(nil)
		return
	}
	t.endSource.Store(&src)
}

// KeyRefused counts a request refused at a key's or team's limit.
func (m *Metrics) KeyRefused(key, code, limit string) {
	m.tenancy().limited.WithLabelValues(key, code, limit).Inc()
}

// BudgetAlert counts a budget reaching a threshold.
func (m *Metrics) BudgetAlert(subject, threshold string) {
	m.tenancy().budget.WithLabelValues(subject, threshold).Inc()
}

// UsageDropped counts usage records that were not stored.
func (m *Metrics) UsageDropped(n int) { m.tenancy().dropped.Add(float64(n)) }

// StoreUp records whether the store of keys and usage answers.
func (m *Metrics) StoreUp(up bool) {
	v := 0.0
	if up {
		v = 1
	}
	t := m.tenancy()
	t.upOnce.Do(func() { m.Registry.MustRegister(t.storeUp) })
	t.storeUp.Set(v)
}

// UsagePruned counts per-request usage records deleted by the retention.
func (m *Metrics) UsagePruned(n int) { m.tenancy().pruned.Add(float64(n)) }

// StoreError counts a failed call to the store of keys and usage.
func (m *Metrics) StoreError(op string) { m.tenancy().failures.WithLabelValues(op).Inc() }
