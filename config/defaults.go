package config

import "time"

// Built-in defaults.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultAzureAPIVersion = "2024-10-21"
	DefaultMaxBody         = 32 << 20
	// MaxMaxBody bounds server.max_body: each body is held in memory
	// while it is routed, so a larger bound is a mistake, not a limit.
	MaxMaxBody                   = 1 << 30
	DefaultMaxBodyMemory         = 256 << 20
	DefaultMaxConnections        = 10000
	DefaultMaxConcurrentRequests = 2048
	// DefaultMinBodyRate is server.min_body_rate, in bytes a second.
	DefaultMinBodyRate            = 4 << 10
	DefaultConnectTimeout         = 5 * time.Second
	DefaultFirstByteTimeout       = 120 * time.Second
	DefaultStreamFirstByteTimeout = 30 * time.Second
	// DefaultRetryBudget is a pool's retry.budget.
	DefaultRetryBudget = 90 * time.Second
	DefaultTimeout     = 10 * time.Minute
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultIdleTimeoutUnderPressure is server.idle_timeout_under_pressure.
	DefaultIdleTimeoutUnderPressure = 10 * time.Second
	// DefaultMaxTrip and DefaultSlowStart are a breaker's max_trip and
	// slow_start.
	DefaultMaxTrip   = 5 * time.Minute
	DefaultSlowStart = 30 * time.Second
	// DefaultDrainDelay is server.drain_delay.
	DefaultDrainDelay = 5 * time.Second
)

// DefaultBreakerStatuses returns the statuses that count as failures when
// a breaker lists none: 429 and 500-599. Each call returns a new list, so
// a caller may change it without changing the default.
func DefaultBreakerStatuses() StatusList {
	return StatusList{{429, 429}, {500, 599}}
}

// DefaultRetryOn returns the statuses retried when a pool lists none: 429,
// 500, 502-504 and 529. Each call returns a new list, so a caller may
// change it without changing the default.
func DefaultRetryOn() StatusList {
	return StatusList{{429, 429}, {500, 500}, {502, 504}, {529, 529}}
}

// setDur sets *d, when it is 0, to fallback, and when that is 0 too, to
// builtin.
func setDur(d *Duration, fallback Duration, builtin time.Duration) {
	if *d == 0 {
		*d = fallback
	}
	if *d == 0 {
		*d = Duration(builtin)
	}
}

// setDefault sets *v, when it is the zero value, to the first of defaults
// that is not.
func setDefault[T comparable](v *T, defaults ...T) {
	var zero T
	for _, d := range defaults {
		if *v != zero {
			return
		}
		*v = d
	}
}

// applyDefaults fills every unset field with its default: the
// backend_defaults' for backends, notifications.storm for pools, else the
// built-in one. Notifications are defaulted before pools, which inherit
// their storm threshold.
func (c *Config) applyDefaults() {
	setDefault(&c.Listen, DefaultListen)
	setDefault(&c.Log.Format, "text")
	setDefault(&c.Log.Level, "info")
	// With one key and no store, that key carries all the traffic: a
	// per-key share of the whole would only halve the gateway.
	c.Server.applyDefaults(len(c.Keys) <= 1 && c.Store == nil)
	if a := c.Admin; a != nil {
		setDefault(&a.Listen, "127.0.0.1:8081")
		a.TLS.applyDefaults()
	}
	setDefault(&c.Reload.Watch, new(true))
	setDur(&c.Reload.Interval, 0, 5*time.Second)
	c.Notifications.applyDefaults()
	setDefault(&c.Tracing.ServiceName, "switchover")
	setDefault(&c.Tracing.SampleRatio, new(1.0))
	for i := range c.Backends {
		c.Backends[i].applyDefaults(c.BackendDefaults)
	}
	c.applyVertexDefaults()
	for i := range c.Pools {
		c.Pools[i].applyDefaults(c.Notifications.Storm)
	}
}

func (s *Server) applyDefaults(oneKey bool) {
	setDefault(&s.MaxBody, DefaultMaxBody)
	setDefault(&s.MaxBodyMemory, max(DefaultMaxBodyMemory, s.MaxBody))
	setDefault(&s.MaxConnections, DefaultMaxConnections)
	setDefault(&s.MaxConnectionsPerAddress, max(1, s.MaxConnections/2))
	setDefault(&s.MaxConcurrentRequests, DefaultMaxConcurrentRequests)
	if oneKey {
		setDefault(&s.MaxConcurrentRequestsPerKey, s.MaxConcurrentRequests)
		setDefault(&s.MaxBodyMemoryPerKey, s.MaxBodyMemory)
	}
	setDefault(&s.MaxConcurrentRequestsPerKey, max(s.MaxConcurrentRequests/2, 1))
	setDefault(&s.MaxBodyMemoryPerKey, max(s.MaxBodyMemory/2, s.MaxBody))
	setDefault(&s.MinBodyRate, DefaultMinBodyRate)
	setDur(&s.ReadHeaderTimeout, 0, 10*time.Second)
	setDur(&s.ReadTimeout, 0, 60*time.Second)
	setDur(&s.IdleTimeout, 0, 120*time.Second)
	setDur(&s.IdleTimeoutUnderPressure, 0, min(DefaultIdleTimeoutUnderPressure, s.IdleTimeout.D()))
	setDur(&s.ShutdownGrace, 0, 30*time.Second)
	setDefault(&s.DrainDelay, new(Duration(DefaultDrainDelay)))
	setDefault(&s.TraceHeader, new(true))
	setDefault(&s.HTTP2, new(true))
	s.TLS.applyDefaults()
	s.MetricsTLS.applyDefaults()
}

// applyDefaults sets client_auth (require with a client CA, else none)
// and min_version; nothing when t is nil.
func (t *TLS) applyDefaults() {
	if t == nil {
		return
	}
	if t.ClientCAFile != "" {
		setDefault(&t.ClientAuth, ClientAuthRequire)
	}
	setDefault(&t.ClientAuth, ClientAuthNone)
	setDefault(&t.MinVersion, "1.2")
}

func (n *Notifications) applyDefaults() {
	setDur(&n.FlapWindow, 0, 2*time.Minute)
	setDur(&n.Timeout, 0, 5*time.Second)
	setDefault(&n.Attempts, 3)
	setDefault(&n.Storm.Failovers, 50)
	setDur(&n.Storm.Window, 0, 5*time.Minute)
	for i := range n.Exec {
		setDur(&n.Exec[i].Timeout, 0, 10*time.Second)
	}
}

// DefaultFoundryAPIVersion is a foundry backend's default api_version: the
// Azure AI model inference API's.
const DefaultFoundryAPIVersion = "2024-05-01-preview"

// applyDefaults fills the backend's unset fields from d, then from the
// built-in defaults.
func (b *Backend) applyDefaults(d BackendDefaults) {
	b.applyPreset()
	switch b.Type {
	case TypeAzure:
		setDefault(&b.APIVersion, DefaultAzureAPIVersion)
	case TypeGemini:
		setDefault(&b.APIVersion, "v1beta")
	case TypeAnthropic:
		setDefault(&b.AnthropicVersion, "2023-06-01")
	case TypeFoundry:
		setDefault(&b.APIVersion, DefaultFoundryAPIVersion)
	case TypeBedrock:
		b.applyBedrockDefaults()
	}
	setDefault(&b.URL, defaultURLs[b.Type])
	setDefault(&b.QuotaAware, d.QuotaAware, new(true))
	setDur(&b.QuotaSlice, d.QuotaSlice, 10*time.Second)
	b.Timeouts.applyDefaults(d.Timeouts)
	b.Breaker.applyDefaults(d.Breaker)
	b.applyProbeDefaults(d.Probe)
}

func (t *Timeouts) applyDefaults(d Timeouts) {
	setDur(&t.ConnectTimeout, d.ConnectTimeout, DefaultConnectTimeout)
	setDur(&t.FirstByteTimeout, d.FirstByteTimeout, DefaultFirstByteTimeout)
	setDur(&t.StreamFirstByteTimeout, d.StreamFirstByteTimeout, DefaultStreamFirstByteTimeout)
	setDur(&t.Timeout, d.Timeout, DefaultTimeout)
	setDur(&t.IdleTimeout, d.IdleTimeout, DefaultIdleTimeout)
}

// applyDefaults fills the breaker's unset fields from d (backend_defaults'
// breaker), then from the built-in defaults; either one disabling it
// disables it.
func (br *Breaker) applyDefaults(d Breaker) {
	setDefault(&br.Failures, d.Failures, 5)
	setDur(&br.Window, d.Window, 30*time.Second)
	setDur(&br.Trip, d.Trip, 60*time.Second)
	setDur(&br.MaxRetryAfter, d.MaxRetryAfter, 5*time.Minute)
	setDur(&br.MaxTrip, d.MaxTrip, DefaultMaxTrip)
	setDefault(&br.SlowStart, d.SlowStart, new(Duration(DefaultSlowStart)))
	if br.Statuses == nil {
		br.Statuses = d.Statuses
	}
	if br.Statuses == nil {
		br.Statuses = DefaultBreakerStatuses()
	}
	setDefault(&br.AcceptRetryAfter, d.AcceptRetryAfter, new(true))
	setDefault(&br.FollowRetryAfter, d.FollowRetryAfter, new(true))
	br.Disabled = br.Disabled || d.Disabled
}

// applyProbeDefaults gives the backend its own copy of d (backend_defaults'
// probe) when it sets none, or else a recovery-only probe, and fills the
// probe's unset fields; a disabled probe is removed.
func (b *Backend) applyProbeDefaults(d *Probe) {
	switch {
	case b.Probe != nil:
	case d != nil:
		pr := *d
		b.Probe = &pr
	default:
		b.Probe = &Probe{}
	}
	pr := b.Probe
	if pr.Disabled {
		b.Probe = nil
		return
	}
	setDur(&pr.RecoveryInterval, 0, 5*time.Second)
	setDefault(&pr.EndTrip, new(true))
	setDefault(&pr.Kind, "chat")
	setDefault(&pr.Failures, 2)
	setDefault(&pr.MarkUnavailable, new(true))
}

// applyDefaults fills the pool's unset fields; its storm threshold comes
// from storm (notifications.storm, already defaulted).
func (p *Pool) applyDefaults(storm Storm) {
	for j := range p.Members {
		m := &p.Members[j]
		setDefault(&m.Priority, 1)
		setDefault(&m.Weight, 1)
	}
	setDefault(&p.Retry.Attempts, 3)
	if p.Retry.On == nil {
		p.Retry.On = DefaultRetryOn()
	}
	setDur(&p.Retry.Budget, 0, DefaultRetryBudget)
	setDefault(&p.Storm.Failovers, storm.Failovers)
	setDefault(&p.Storm.Window, storm.Window)
}
