package metrics

import "github.com/prometheus/client_golang/prometheus"

// The metric families, by what they describe. Every name, help text,
// label and bucket here is what dashboards and alert rules read: change
// one only with them.

// latencyHist is a histogram of seconds over LatencyBuckets, also kept as
// a native histogram.
func latencyHist(name, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                        name,
		Help:                        help,
		Buckets:                     LatencyBuckets(),
		NativeHistogramBucketFactor: 1.1,
	}, labels)
}

// newRequestMetrics makes the collectors of the requests the gateway
// answered or refused, and their tokens and cost.
func (m *Metrics) newRequestMetrics() {
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_requests_total",
		Help: "Requests answered by the gateway, by pool, the backend that answered (\"none\" when none did) and status class (2xx, 4xx, 429, 5xx, or canceled when the client went away).",
	}, []string{"pool", "backend", "code"})
	m.requestDuration = latencyHist("switchover_request_duration_seconds",
		"End-to-end request time, from arrival to the last byte of the response, by pool.", "pool")
	m.requestFirstByte = latencyHist("switchover_request_first_byte_seconds",
		"Time from arrival until the response headers went to the client (failover time included), by pool.", "pool")
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_requests_refused_total",
		Help: "Requests refused with 503 at one of the gateway's own limits, their body unread, by code: request_body_memory_full (server.max_body_memory) or too_many_concurrent_requests (server.max_concurrent_requests).",
	}, []string{"code"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_tokens_total",
		Help: "Tokens the answers passed on said they used, by pool, backend, model (as the answer names it), gateway key and kind: prompt (cached included), completion (reasoning included), cached, reasoning.",
	}, []string{"pool", "backend", "model", "key", "kind"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_cost_total",
		Help: "What those tokens cost in US dollars, at the backend's configured price or the shipped list price of the model; answers of unpriced models are not counted. By pool, backend, model and gateway key.",
	}, []string{"pool", "backend", "model", "key"})
}

// newUpstreamMetrics makes the collectors of the attempts sent upstream and
// the failovers between them.
func (m *Metrics) newUpstreamMetrics() {
	m.attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_upstream_attempts_total",
		Help: "Upstream attempts by pool, backend and result: the status class (2xx, 4xx, 429, 5xx) or the failure (first_byte_timeout, timeout, connect_error, connection_error, client_canceled).",
	}, []string{"pool", "backend", "result"})
	m.upstreamDuration = latencyHist("switchover_upstream_duration_seconds",
		"Time from sending an attempt to its response headers (for streams, its first bytes) or its failure, by backend.", "backend")
	m.failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_failovers_total",
		Help: "Requests answered by a backend other than the one they would have gone to with every backend healthy: from the backend that failed or was benched, to the one that answered, and why.",
	}, []string{"pool", "from", "to", "reason"})
	m.streamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_upstream_stream_errors_total",
		Help: "Response bodies that failed after their headers reached the client (a stream that broke or stalled mid-way), by backend.",
	}, []string{"backend"})
	m.abandoned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_upstream_abandoned_total",
		Help: "Upstream calls given up after the request was sent, to fail over (first-byte or attempt timeout, retry budget, unresponsive backend), by backend and reason. The backend may still complete and bill them.",
	}, []string{"backend", "reason"})
}

// newBackendMetrics makes the collectors of each backend's configuration,
// breaker and health.
func (m *Metrics) newBackendMetrics() {
	m.breakerState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_breaker_state",
		Help: "Circuit breaker state per backend: 1 for the current state (closed, open, half_open), 0 for the others.",
	}, []string{"backend", "state"})
	m.breakerTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_breaker_transitions_total",
		Help: "Circuit breaker state changes per backend.",
	}, []string{"backend", "from", "to"})
	m.backendInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_backend_info",
		Help: "Configured backends: always 1, with the backend's region and type as labels.",
	}, []string{"backend", "region", "type"})
	m.backendModel = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_backend_model_info",
		Help: "The model version each backend last answered with (the response's model, or Gemini's modelVersion): 1 for the current one.",
	}, []string{"backend", "model"})
	m.backendDrained = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_backend_drained",
		Help: "1 while an operator has drained the backend (no new traffic), else 0.",
	}, []string{"backend"})
	m.misconfigured = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_backend_misconfigured_total",
		Help: "Upstream answers that say a backend's own key or deployment is wrong (401, 403, 404), by backend and status; the backend is benched and its requests fail over.",
	}, []string{"backend", "status"})
	m.unresponsive = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_backend_unresponsive_total",
		Help: "Times a backend was found not answering (a call waited past its slow threshold and a health check got no answer) and was benched, its waiting calls failed over.",
	}, []string{"backend"})
	m.checks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_backend_checks_total",
		Help: "The engine's own health checks of a backend that calls waited on past its slow threshold (no probe configuration needed; configured probes are switchover_probes_total), by backend and result: answered or failed. Each is a call no request made.",
	}, []string{"backend", "result"})
	m.quotaHeld = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_backend_quota_held_total",
		Help: "Requests that passed a backend over because its rate-limit headers said the call would be refused (quota_aware): no call was sent to find out. By pool and backend.",
	}, []string{"pool", "backend"})
}

// newProbeMetrics makes the collectors of the health probes.
func (m *Metrics) newProbeMetrics() {
	m.probeUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_probe_up",
		Help: "Result of the backend's last health probe: 1 passed, 0 failed.",
	}, []string{"backend"})
	m.probes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_probes_total",
		Help: "Health probes by backend and result (ok, or the failure: a status class or first_byte_timeout, timeout, connect_error…).",
	}, []string{"backend", "result"})
	m.probeDuration = latencyHist("switchover_probe_duration_seconds", "Health probe latency, by backend.", "backend")
}

// newPoolMetrics makes the collectors of each pool's active set, retries,
// hedges, fallbacks and queue.
func (m *Metrics) newPoolMetrics() {
	m.poolActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_pool_active_backend",
		Help: "1 for each backend in the pool's active set (the usable members of its best usable tier), 0 for the other members.",
	}, []string{"pool", "backend"})
	m.retryBudget = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_retry_budget_exhausted_total",
		Help: "Retries refused because the pool's retry budget was spent: the request was answered with its last failure at once. By pool.",
	}, []string{"pool"})
	m.hedges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_hedges_total",
		Help: "Hedged requests (pools[].hedge), by pool and result: primary (the first attempt answered first), hedge (the hedge did), neither (both failed), refused (a hedge was due but the hedge share was spent).",
	}, []string{"pool", "result"})
	m.poolFallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_pool_fallbacks_total",
		Help: "Requests sent on to a fallback pool, by pool, fallback pool and cause (exhausted, context_window).",
	}, []string{"pool", "to", "cause"})
	m.queueLength = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_queue_length",
		Help: "Requests waiting in the pool's queue for quota, by pool.",
	}, []string{"pool"})
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "switchover_queue_wait_seconds",
		Help:    "How long requests waited in the pool's queue for quota, by pool (answered, refused past their deadline, or gone).",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
	}, []string{"pool"})
}

// newOperationsMetrics makes the collectors of the gateway's own operation:
// notifications, reloads, operator actions and its log.
func (m *Metrics) newOperationsMetrics() {
	m.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_notifications_total",
		Help: "Notification deliveries by sink, kind (failover, failback, change, flapping, storm, admin) and result (sent, failed, dropped).",
	}, []string{"sink", "kind", "result"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_config_reloads_total",
		Help: "Configuration reloads by result (ok, or invalid: the old configuration stays).",
	}, []string{"result"})
	m.adminActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_admin_actions_total",
		Help: "Operator actions through the admin API, by action.",
	}, []string{"action"})
	m.tlsReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchover_tls_certificate_reloads_total",
		Help: "New content of a listener's certificate and key files (api, admin, metrics) by result: ok (served from the next handshake), or invalid (the certificate in force stays).",
	}, []string{"listener", "result"})
	m.tlsExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "switchover_tls_certificate_expiry_timestamp_seconds",
		Help: "When the certificate a listener (api, admin, metrics) serves expires (its NotAfter), in Unix seconds.",
	}, []string{"listener"})
	m.logDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchover_log_lines_dropped_total",
		Help: "Log lines dropped because the log's buffer was full: its output (stderr, or what reads it) was not keeping up.",
	})
}

// newFleetMetrics makes the collectors of the shared state store of a fleet
// of replicas (registered by FleetStore).
func (m *Metrics) newFleetMetrics() {
	m.fleetUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "switchover_fleet_store_up",
		Help: "1 while the shared state store (state.redis) answers this replica, 0 while it does not and the replica decides alone; absent without shared state.",
	})
	m.fleetDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchover_fleet_dropped_total",
		Help: "Updates for the shared state store dropped because it was not keeping up (a slow or unreachable store): the other replicas did not hear of them.",
	})
	m.budgetFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "switchover_budget_shared_fallbacks_total",
		Help: "Calls to the budgets shared through the state store (a request's hold, or its settling) that failed: the request was held against this replica's view of its budgets alone, which other replicas' requests in flight do not reach.",
	})
}
