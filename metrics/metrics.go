// Package metrics exports switchover's Prometheus metrics. It is fed by the
// routing engine's Observer interface, by breaker transitions and by the
// gateway's per-request hook; it owns its registry, so several gateways in
// one process (tests, the game day) never share state.
package metrics

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

// Metrics holds the collectors. It is safe for concurrent use.
type Metrics struct {
	Registry *prometheus.Registry
	cache    cacheMetrics // cache.go

	requests           *prometheus.CounterVec
	requestDuration    *prometheus.HistogramVec
	requestFirstByte   *prometheus.HistogramVec
	attempts           *prometheus.CounterVec
	upstreamDuration   *prometheus.HistogramVec
	failovers          *prometheus.CounterVec
	streamErrors       *prometheus.CounterVec
	breakerState       *prometheus.GaugeVec
	breakerTransitions *prometheus.CounterVec
	backendInfo        *prometheus.GaugeVec
	backendModel       *prometheus.GaugeVec
	backendDrained     *prometheus.GaugeVec
	poolActive         *prometheus.GaugeVec
	probeUp            *prometheus.GaugeVec
	probes             *prometheus.CounterVec
	probeDuration      *prometheus.HistogramVec
	notifications      *prometheus.CounterVec
	reloads            *prometheus.CounterVec
	tlsReloads         *prometheus.CounterVec
	tlsExpiry          *prometheus.GaugeVec
	adminActions       *prometheus.CounterVec
	misconfigured      *prometheus.CounterVec
	unresponsive       *prometheus.CounterVec
	checks             *prometheus.CounterVec
	quotaHeld          *prometheus.CounterVec
	retryBudget        *prometheus.CounterVec
	hedges             *prometheus.CounterVec
	fleetUp            prometheus.Gauge
	tokens             *prometheus.CounterVec
	cost               *prometheus.CounterVec
	fleetDropped       prometheus.Counter
	budgetFallbacks    prometheus.Counter
	poolFallbacks      *prometheus.CounterVec
	queueLength        *prometheus.GaugeVec
	queueWait          *prometheus.HistogramVec
	abandoned          *prometheus.CounterVec
	logDropped         prometheus.Counter
	refused            *prometheus.CounterVec
	ten                tenancy

	// mu guards seqs and orders the updates of breakerState.
	mu        sync.Mutex
	fleetOnce sync.Once
	// seqs holds, for every backend declared or seen, the Seq of the
	// last transition applied to its breaker state gauge.
	seqs map[string]uint64
	// poolMembers holds, for each pool, the members Active last recorded
	// (guarded by mu).
	poolMembers map[string][]string
	// info holds each backend's region and type as last declared
	// (AddBackend; guarded by mu).
	info map[string][2]string
}

var _ route.Observer = (*Metrics)(nil)

// LatencyBuckets returns the classic histogram buckets, in seconds, chosen
// for LLM calls: from a fast refusal (tens of ms) to a long completion.
// Each call returns a new slice, so a caller may change it without
// changing the buckets of any histogram.
func LatencyBuckets() []float64 {
	return []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}
}

// New returns metrics registered in a new registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		seqs:     map[string]uint64{},
	}
	m.newRequestMetrics()
	m.newUpstreamMetrics()
	m.newBackendMetrics()
	m.newProbeMetrics()
	m.newPoolMetrics()
	m.newOperationsMetrics()
	m.newFleetMetrics()
	// Series that alerts read with increase() exist from the start, so
	// their first event is seen.
	for _, r := range []string{"ok", "invalid"} {
		m.reloads.WithLabelValues(r)
	}
	for _, c := range RefusalCodes() {
		m.refused.WithLabelValues(c)
	}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Registry.MustRegister(m.registered()...)
	// fleetUp, fleetDropped and budgetFallbacks are registered by FleetStore, once a replica
	// shares state; switchover_store_up by StoreUp, once a store is open.
	m.tenancy()
	m.newCacheMetrics()
	return m
}

// registered are the collectors New registers, the Go and process
// collectors and those registered later (fleet, tenancy) aside.
func (m *Metrics) registered() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.requestDuration, m.requestFirstByte, m.attempts, m.upstreamDuration,
		m.failovers, m.streamErrors, m.breakerState, m.breakerTransitions, m.backendInfo, m.backendModel,
		m.backendDrained, m.poolActive, m.probeUp, m.probes, m.probeDuration, m.notifications, m.reloads, m.tlsReloads, m.tlsExpiry, m.adminActions,
		m.misconfigured, m.unresponsive, m.checks, m.abandoned, m.logDropped, m.refused,
		m.quotaHeld, m.retryBudget, m.poolFallbacks, m.queueLength, m.queueWait, m.hedges, m.tokens, m.cost}
}

// Names returns the name of every metric family switchover defines (Go
// and process collectors excluded), for checking dashboards and alert
// rules against.
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range append(m.registered(), m.fleetUp, m.fleetDropped, m.budgetFallbacks) {
			c.Describe(ch)
		}
		for _, c := range append(m.tenancyCollectors(), m.cacheCollectors()...) {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		// A Desc prints as Desc{fqName: "name", ...}.
		s := d.String()
		if i := strings.Index(s, `fqName: "`); i >= 0 {
			rest := s[i+len(`fqName: "`):]
			names = append(names, rest[:strings.IndexByte(rest, '"')])
		}
	}
	sort.Strings(names)
	return names
}

// Drained records whether an operator drained a backend.
func (m *Metrics) Drained(backend string, drained bool) {
	v := 0.0
	if drained {
		v = 1
	}
	m.backendDrained.WithLabelValues(backend).Set(v)
}

// Active records a pool's active set among its members. The series of
// members a reload removed from the pool go; those are found from the
// members it was last given, since a partial match walks every pool's
// series, and a reload records every pool (O(pools²) with 10,000 pools).
func (m *Metrics) Active(pool string, members []string, active map[string]bool) {
	m.mu.Lock()
	old := m.poolMembers[pool]
	if m.poolMembers == nil {
		m.poolMembers = map[string][]string{}
	}
	m.poolMembers[pool] = slices.Clone(members)
	m.mu.Unlock()
	if len(old) > 0 {
		now := make(map[string]bool, len(members))
		for _, b := range members {
			now[b] = true
		}
		for _, b := range old {
			if !now[b] {
				m.poolActive.DeleteLabelValues(pool, b)
			}
		}
	}
	for _, b := range members {
		v := 0.0
		if active[b] {
			v = 1
		}
		m.poolActive.WithLabelValues(pool, b).Set(v)
	}
}

// Probe records a health probe; result is "ok" or the failure.
func (m *Metrics) Probe(backend, result string, d time.Duration) {
	up := 0.0
	if result == "ok" || result == "429" {
		up = 1 // a 429 is an answer: the backend is up, out of quota
	}
	m.probeUp.WithLabelValues(backend).Set(up)
	m.probes.WithLabelValues(backend, result).Inc()
	m.probeDuration.WithLabelValues(backend).Observe(d.Seconds())
}

// Notification records a notification delivery.
func (m *Metrics) Notification(sink, kind, result string) {
	m.notifications.WithLabelValues(sink, kind, result).Inc()
}

// Reload records a configuration reload; result is "ok" or "invalid".
func (m *Metrics) Reload(result string) { m.reloads.WithLabelValues(result).Inc() }

// TLSCertificate records the certificate a listener (api, admin,
// metrics) serves from now on, by when it expires; result is "ok" for a
// new certificate loaded from changed files, "invalid" for changed files
// that did not load (notAfter is then the certificate still served), ""
// for the first load.
func (m *Metrics) TLSCertificate(listener, result string, notAfter time.Time) {
	if result == "" {
		for _, r := range []string{"ok", "invalid"} {
			m.tlsReloads.WithLabelValues(listener, r)
		}
	} else {
		m.tlsReloads.WithLabelValues(listener, result).Inc()
	}
	m.tlsExpiry.WithLabelValues(listener).Set(float64(notAfter.Unix()))
}

// RefusalCodes are the codes of switchover_requests_refused_total: the
// error codes of the gateway's 503s at its own limits.
func RefusalCodes() []string {
	return []string{"request_body_memory_full", "too_many_concurrent_requests"}
}

// Refused counts a request refused at one of the gateway's limits, by
// the error code it was answered.
func (m *Metrics) Refused(code string) { m.refused.WithLabelValues(code).Inc() }

// LogLineDropped counts a log line dropped because the log's buffer was
// full.
func (m *Metrics) LogLineDropped() { m.logDropped.Inc() }

// Admin records an operator action.
func (m *Metrics) Admin(action string) { m.adminActions.WithLabelValues(action).Inc() }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// AddBackend declares a backend, so that its info and breaker state are
// exported before its first request: the state gauge reads closed from the
// start (not 0 for every state, which the benched alert takes for a
// backend that has not been closed). A backend declared before (a reload)
// keeps its state.
func (m *Metrics) AddBackend(name, region, typ string) {
	// The info series of other labels (a reload changed the region or
	// type) goes: found from the labels last set, since a partial match
	// walks every backend's series and a reload declares every backend.
	info := [2]string{region, typ}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.info[name]; ok && old != info {
		m.backendInfo.DeleteLabelValues(name, old[0], old[1])
	}
	if m.info == nil {
		m.info = map[string][2]string{}
	}
	m.info[name] = info
	m.backendInfo.WithLabelValues(name, region, typ).Set(1)
	if _, ok := m.seqs[name]; ok {
		return
	}
	m.seqs[name] = 0
	m.setBreakerState(name, breaker.Closed)
}

// RemoveBackend drops the series of a backend a reload removed, so that
// dashboards and alerts do not see it forever. A backend added again later
// starts closed, with a breaker numbering its transitions afresh.
func (m *Metrics) RemoveBackend(name string) {
	l := prometheus.Labels{"backend": name}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seqs, name)
	delete(m.info, name)
	for _, v := range []*prometheus.GaugeVec{m.backendInfo, m.breakerState, m.backendDrained, m.backendModel, m.probeUp} {
		v.DeletePartialMatch(l)
	}
}

// RemovePool drops the series of a pool a reload removed.
func (m *Metrics) RemovePool(name string) {
	m.mu.Lock()
	old := m.poolMembers[name]
	delete(m.poolMembers, name)
	m.mu.Unlock()
	for _, b := range old {
		m.poolActive.DeleteLabelValues(name, b)
	}
}

// Observe implements route.Observer.
func (m *Metrics) Observe(e route.Event) {
	switch e.Kind {
	case route.EventAttempt:
		a := e.Attempt
		m.attempts.WithLabelValues(e.Pool, a.Backend, attemptResult(a)).Inc()
		m.upstreamDuration.WithLabelValues(a.Backend).Observe(a.Duration.Seconds())
		if a.Abandoned {
			m.abandoned.WithLabelValues(a.Backend, string(a.Reason)).Inc()
		}
	case route.EventFailover:
		m.failovers.WithLabelValues(e.Pool, e.From, e.To, string(e.Reason)).Inc()
	case route.EventBodyError:
		m.streamErrors.WithLabelValues(e.Backend.Name).Inc()
	case route.EventModel:
		m.backendModel.DeletePartialMatch(prometheus.Labels{"backend": e.Backend.Name})
		m.backendModel.WithLabelValues(e.Backend.Name, e.Model).Set(1)
	case route.EventMisconfigured:
		m.misconfigured.WithLabelValues(e.Backend.Name, strconv.Itoa(e.Attempt.Status)).Inc()
	case route.EventUnresponsive:
		m.unresponsive.WithLabelValues(e.Backend.Name).Inc()
	case route.EventProbe:
		// The engine's own checks; the gateway's probers count theirs in
		// Probe (they are told to Options.Observer, not here).
		result := "answered"
		if e.Err != nil {
			result = "failed"
		}
		m.checks.WithLabelValues(e.Backend.Name, result).Inc()
	case route.EventQuotaHeld:
		m.quotaHeld.WithLabelValues(e.Pool, e.Backend.Name).Inc()
	case route.EventRetryBudget:
		m.retryBudget.WithLabelValues(e.Pool).Inc()
	case route.EventHedge:
		m.hedges.WithLabelValues(e.Pool, string(e.Hedge)).Inc()
	case route.EventFallback:
		m.poolFallbacks.WithLabelValues(e.Pool, e.To, string(e.Cause)).Inc()
	case route.EventQueued:
		m.queueLength.WithLabelValues(e.Pool).Set(float64(e.Queue))
	case route.EventDequeued:
		m.queueLength.WithLabelValues(e.Pool).Set(float64(e.Queue))
		m.queueWait.WithLabelValues(e.Pool).Observe(e.Waited.Seconds())
	}
}

// Tokens records an answer's tokens and, when priced, their cost.
func (m *Metrics) Tokens(pool, backend, model, key string, prompt, completion, cached, reasoning int64, cost float64, priced bool) {
	if key == "" {
		key = "none"
	}
	for _, k := range []struct {
		kind string
		n    int64
	}{{"prompt", prompt}, {"completion", completion}, {"cached", cached}, {"reasoning", reasoning}} {
		if k.n > 0 {
			m.tokens.WithLabelValues(pool, backend, model, key, k.kind).Add(float64(k.n))
		}
	}
	if priced {
		m.cost.WithLabelValues(pool, backend, model, key).Add(cost)
	}
}

// FleetStore records whether the shared state store answers; the first
// call registers the fleet's metrics.
func (m *Metrics) FleetStore(up bool) {
	m.fleetOnce.Do(func() { m.Registry.MustRegister(m.fleetUp, m.fleetDropped, m.budgetFallbacks) })
	v := 0.0
	if up {
		v = 1
	}
	m.fleetUp.Set(v)
}

// FleetDropped counts an update the shared store did not take in time.
func (m *Metrics) FleetDropped() { m.fleetDropped.Inc() }

// BudgetFallback counts a call to the fleet's shared budgets (state.redis)
// that failed, so that the request was held against this replica's
// budgets alone.
func (m *Metrics) BudgetFallback() { m.budgetFallbacks.Inc() }

// Transition records a breaker state change. Every transition is counted,
// in whatever order it arrives (each is one change that happened); the
// state gauge moves only for a transition newer (by Seq) than the last
// it applied for that backend, since transitions are delivered outside the
// breaker's lock and may arrive out of order. A Seq of 0 (a breaker that
// does not number its transitions) is always applied.
func (m *Metrics) Transition(t breaker.Transition) {
	m.breakerTransitions.WithLabelValues(t.Name, t.From.String(), t.To.String()).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	last, ok := m.seqs[t.Name]
	if ok && t.Seq != 0 && t.Seq <= last {
		return // stale: a newer state is already shown
	}
	if t.Seq != 0 || !ok {
		m.seqs[t.Name] = t.Seq
	}
	m.setBreakerState(t.Name, t.To)
}

// setBreakerState sets the state gauge of backend to s. Requires m.mu held.
func (m *Metrics) setBreakerState(backend string, s breaker.State) {
	for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		v := 0.0
		if st == s {
			v = 1
		}
		m.breakerState.WithLabelValues(backend, st.String()).Set(v)
	}
}

// Request records a request the gateway answered. backend is "" when no
// backend answered; status 0 means the client went away first.
func (m *Metrics) Request(pool, backend string, status int, total, firstByte time.Duration) {
	if backend == "" {
		backend = "none"
	}
	m.requests.WithLabelValues(pool, backend, CodeClass(status)).Inc()
	m.requestDuration.WithLabelValues(pool).Observe(total.Seconds())
	if status != 0 {
		m.requestFirstByte.WithLabelValues(pool).Observe(firstByte.Seconds())
	}
}

// CodeClass is the label value for a status: 429 on its own (it is the
// quota signal), otherwise 2xx, 3xx, 4xx or 5xx; 0 is "canceled".
func CodeClass(status int) string {
	switch {
	case status == 0:
		return "canceled"
	case status == 429:
		return "429"
	case status >= 100 && status < 600:
		return codeClasses[status/100-1] // a constant: no string built per call
	}
	return "other"
}

var codeClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

func attemptResult(a *route.Attempt) string {
	if a.Status == 0 {
		return string(a.Reason)
	}
	return CodeClass(a.Status)
}
