package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// validateServer checks the gateway's listener, its log and its server
// limits.
func (c *Config) validateServer(ps *Problems) {
	if c.Server.MaxBody > MaxMaxBody {
		ps.add("server.max_body", "%d bytes is over 1GiB; each request body is held in memory while it is routed", c.Server.MaxBody)
	}
	c.validateListen(ps)
	c.validateTLS(ps)
	for i, o := range c.AllowedOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			ps.add(fmt.Sprintf("allowed_origins[%d]", i), "%q is not an origin such as https://app.example.com", o)
		}
	}
	if m := c.Server.MetricsListen; m != "" {
		if _, _, err := net.SplitHostPort(m); err != nil {
			ps.add("server.metrics_listen", "%q is not host:port: %v", m, err)
		} else if (m == c.Listen || (c.Admin != nil && m == c.Admin.Listen)) && !strings.HasSuffix(m, ":0") {
			ps.add("server.metrics_listen", "the metrics need a listener of their own, not %s", m)
		}
	}
	c.Log.validate(ps)
	c.Server.validateLimits(ps)
}

// validateListen checks listen: a host:port, on loopback unless callers
// authenticate or allow_unauthenticated says otherwise.
func (c *Config) validateListen(ps *Problems) {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		ps.add("listen", "%q is not host:port: %v", c.Listen, err)
	} else if len(c.Keys) == 0 && !c.Store.Enabled() && !c.AllowUnauthenticated && !isLoopback(host) {
		ps.add("listen", "no keys are configured, so the gateway only listens on loopback; add keys, or set allow_unauthenticated: true to serve %s without authentication", c.Listen)
	}
}

func (l Log) validate(ps *Problems) {
	switch l.Format {
	case "text", "json":
	default:
		ps.add("log.format", "must be text or json, not %q", l.Format)
	}
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		ps.add("log.level", "must be debug, info, warn or error, not %q", l.Level)
	}
}

// validateLimits checks the server's bounds on bodies, connections and
// requests.
func (s Server) validateLimits(ps *Problems) {
	if s.MaxBody < 0 {
		ps.add("server.max_body", "must not be negative")
	} else if s.MaxBodyMemory < s.MaxBody {
		ps.add("server.max_body_memory", "%d is under max_body (%d): a body of max_body could never be read", s.MaxBodyMemory, s.MaxBody)
	}
	if s.MaxConnections < 0 {
		ps.add("server.max_connections", "must not be negative")
	}
	if s.MaxConnectionsPerAddress < 0 {
		ps.add("server.max_connections_per_address", "must not be negative")
	} else if s.MaxConnectionsPerAddress > s.MaxConnections && s.MaxConnections > 0 {
		ps.add("server.max_connections_per_address", "%d is over max_connections (%d); set it to max_connections to turn the per-address bound off", s.MaxConnectionsPerAddress, s.MaxConnections)
	}
	if s.IdleTimeoutUnderPressure > s.IdleTimeout {
		ps.add("server.idle_timeout_under_pressure", "%s is over idle_timeout (%s): under pressure idle connections are closed sooner, not later", s.IdleTimeoutUnderPressure, s.IdleTimeout)
	}
	if s.MaxConcurrentRequests < 0 {
		ps.add("server.max_concurrent_requests", "must not be negative")
	}
	if s.MaxConcurrentRequestsPerKey < 0 {
		ps.add("server.max_concurrent_requests_per_key", "must not be negative")
	}
	if s.MaxBody >= 0 && s.MaxBodyMemoryPerKey < s.MaxBody {
		ps.add("server.max_body_memory_per_key", "%d is under max_body (%d): a key's body of max_body could never be read", s.MaxBodyMemoryPerKey, s.MaxBody)
	}
}

// validateAdmin checks the admin API's listener and key; the console's
// viewers are validateConsole's.
func (c *Config) validateAdmin(ps *Problems) {
	a := c.Admin
	if a == nil {
		return
	}
	host, _, err := net.SplitHostPort(a.Listen)
	switch {
	case err != nil:
		ps.add("admin.listen", "%q is not host:port: %v", a.Listen, err)
	case a.Listen == c.Listen && !strings.HasSuffix(a.Listen, ":0"):
		ps.add("admin.listen", "the admin API needs a listener of its own, not %s", c.Listen)
	case a.Key == "" && !isLoopback(host):
		ps.add("admin.key", "the admin API on %s needs a key; without one it may only listen on loopback", a.Listen)
	case a.Key == "" && !a.AllowNoKey:
		ps.add("admin.key", "the admin API needs a key (any local process or user could drain backends); set one, or allow_no_key: true to serve it on loopback without one")
	case a.Key != "" && a.AllowNoKey:
		ps.add("admin.allow_no_key", "a key is set, so allow_no_key has no effect; remove one of them")
	case a.Key != "" && len(a.Key) < 16:
		ps.add("admin.key", "key is shorter than 16 characters; use a long random value")
	}
}

func (c *Config) validateReload(ps *Problems) {
	if c.Reload.Interval < Duration(time.Second) {
		ps.add("reload.interval", "must be at least 1s")
	}
}

func (t Tracing) validate(ps *Problems) {
	if t.Endpoint != "" && !isHTTPURL(t.Endpoint) {
		ps.add("tracing.endpoint", "%q is not an http(s) URL", t.Endpoint)
	}
	if r := *t.SampleRatio; r < 0 || r > 1 {
		ps.add("tracing.sample_ratio", "must be between 0 and 1")
	}
}
