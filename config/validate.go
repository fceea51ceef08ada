package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// StrategyNames returns the names pools[].strategy takes, the default
// first (route.Strategies has the same list; a gateway test checks they
// agree).
func StrategyNames() []string {
	return []string{"priority", "least_busy", "latency", "affinity", "headroom"}
}

// neverRetry are the caller's own errors, which another backend would
// answer the same way (and bill again).
var neverRetry = []int{400, 401, 403, 404, 413, 422}

// explicitZeros reports fields written as 0 where 0 is not allowed; they
// would otherwise be taken as unset and silently defaulted. set tells
// whether a path was written in the file.
func (c *Config) explicitZeros(set func(string) bool) []Problem {
	var ps []Problem
	check := func(path string, v int, msg string) {
		if v == 0 && set(path) {
			ps = append(ps, Problem{Path: path, Msg: msg})
		}
	}
	check("backend_defaults.breaker.failures", c.BackendDefaults.Breaker.Failures, "must be 1 or more")
	for i, b := range c.Backends {
		check(fmt.Sprintf("backends[%d].breaker.failures", i), b.Breaker.Failures, "must be 1 or more")
	}
	for i, p := range c.Pools {
		check(fmt.Sprintf("pools[%d].retry.attempts", i), p.Retry.Attempts, "must be 1 or more (1 means no retry)")
		for j, m := range p.Members {
			check(fmt.Sprintf("pools[%d].members[%d].priority", i, j), m.Priority, "must be 1 or more (1 is tried first)")
			check(fmt.Sprintf("pools[%d].members[%d].weight", i, j), m.Weight, "must be 1 or more")
		}
	}
	return ps
}

// Validate runs the semantic checks Load runs on a configuration changed
// after loading (serve -listen overrides listen), so that a change made on
// the command line meets the same rules as the file; file names it in the
// problems, which carry no line. It returns Problems, or nil.
func (c *Config) Validate(file string) error {
	ps := c.validate()
	if len(ps) == 0 {
		return nil
	}
	for i := range ps {
		ps[i].File = file
	}
	return Problems(ps)
}

// validate reports every semantic problem, by path.
func (c *Config) validate() []Problem {
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}

	if c.Server.MaxBody > MaxMaxBody {
		add("server.max_body", "%d bytes is over 1GiB; each request body is held in memory while it is routed", c.Server.MaxBody)
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		add("listen", "%q is not host:port: %v", c.Listen, err)
	} else if len(c.Keys) == 0 && !c.Store.Enabled() && !c.AllowUnauthenticated && !isLoopback(host) {
		add("listen", "no keys are configured, so the gateway only listens on loopback; add keys, or set allow_unauthenticated: true to serve %s without authentication", c.Listen)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log.format", "must be text or json, not %q", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "must be debug, info, warn or error, not %q", c.Log.Level)
	}

	if s := c.Server; s.MaxBody < 0 {
		add("server.max_body", "must not be negative")
	} else if s.MaxBodyMemory < s.MaxBody {
		add("server.max_body_memory", "%d is under max_body (%d): a body of max_body could never be read", s.MaxBodyMemory, s.MaxBody)
	}
	if c.Server.MaxConnections < 0 {
		add("server.max_connections", "must not be negative")
	}
	if c.Server.MaxConcurrentRequests < 0 {
		add("server.max_concurrent_requests", "must not be negative")
	}

	keyNames := map[string]bool{}
	keyValues := map[Secret]string{}
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Name == "" {
			add(p+".name", "a key needs a name (it identifies the caller in logs)")
		} else if keyNames[k.Name] {
			add(p+".name", "key name %q is used twice", k.Name)
		}
		keyNames[k.Name] = true
		if k.Key == "" {
			add(p+".key", "empty key")
		} else if len(k.Key) < 16 {
			add(p+".key", "key is shorter than 16 characters; use a long random value")
		} else if other, dup := keyValues[k.Key]; dup {
			add(p+".key", "same key as %q", other)
		}
		keyValues[k.Key] = k.Name
	}

	backends := map[string]bool{}
	for i, b := range c.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" {
			add(p+".name", "a backend needs a name")
		} else if backends[b.Name] {
			add(p+".name", "backend name %q is used twice", b.Name)
		}
		backends[b.Name] = true
		const types = "openai, openai_compatible, azure, anthropic or gemini"
		switch b.Type {
		case TypeOpenAI, TypeOpenAICompatible, TypeAzure, TypeAnthropic, TypeGemini:
		case "":
			add(p+".type", "missing type: use %s", types)
		default:
			add(p+".type", "unknown type %q: use %s", b.Type, types)
		}
		if e := b.Entra; e != nil {
			n := 0
			for _, set := range []bool{e.ClientSecret != "", e.FederatedTokenFile != "", e.ManagedIdentity} {
				if set {
					n++
				}
			}
			switch {
			case b.Type != TypeAzure:
				add(p+".entra", "Entra ID tokens are for azure backends")
			case n != 1:
				add(p+".entra", "give exactly one of client_secret, federated_token_file and managed_identity")
			case !e.ManagedIdentity && (e.TenantID == "" || e.ClientID == ""):
				add(p+".entra", "tenant_id and client_id are needed with client_secret or federated_token_file")
			}
			if b.APIKey != "" {
				add(p+".api_key", "give api_key or entra, not both")
			}
		}
		if b.AnthropicVersion != "" && b.Type != TypeAnthropic {
			add(p+".anthropic_version", "only for anthropic backends")
		}
		if b.ResponsesAPI != nil && b.Type != TypeOpenAI && b.Type != TypeOpenAICompatible && b.Type != TypeAzure {
			add(p+".responses_api", "only for openai, openai_compatible and azure backends (anthropic and gemini are always reached through translation)")
		}
		openai := b.Type == TypeOpenAI || b.Type == TypeOpenAICompatible
		if b.Organization != "" && !openai {
			add(p+".organization", "only for openai and openai_compatible backends")
		}
		if b.Project != "" && !openai {
			add(p+".project", "only for openai and openai_compatible backends")
		}
		for _, f := range []struct{ name, v string }{{"organization", b.Organization}, {"project", b.Project}} {
			if strings.ContainsAny(f.v, "\r\n") || strings.TrimSpace(f.v) != f.v {
				add(p+"."+f.name, "%q is not a header value", f.v)
			}
		}
		if u, err := url.Parse(b.URL); b.URL == "" {
			add(p+".url", "missing url")
		} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(p+".url", "%q is not an http(s) URL", b.URL)
		} else if u.RawQuery != "" {
			add(p+".url", "the url must not have a query; use api_version for azure")
		}
		if b.Type == TypeAzure && strings.Contains(b.URL, "/openai/deployments") {
			add(p+".url", "give the resource endpoint (https://NAME.openai.azure.com); the deployment comes from the pool member's model")
		}
		for k := range b.Headers {
			switch strings.ToLower(k) {
			case "authorization", "api-key", "host", "content-length":
				add(p+".headers", "header %q is set by switchover itself", k)
			}
		}
		ps = append(ps, b.Breaker.validate(p+".breaker")...)
		if pr := b.Probe; pr != nil {
			if pr.Interval != 0 && pr.Interval < Duration(10*time.Second) {
				add(p+".probe.interval", "must be at least 10s (a probe may cost quota), or 0 for no probes while healthy")
			}
			if pr.Interval != 0 && pr.Timeout > pr.Interval {
				add(p+".probe.timeout", "must not be longer than the interval")
			}
			if pr.RecoveryInterval < Duration(time.Second) {
				add(p+".probe.recovery_interval", "must be at least 1s")
			}
			if pr.Kind != "chat" && pr.Kind != "models" {
				add(p+".probe.kind", "must be chat or models, not %q", pr.Kind)
			}
			if pr.Failures < 1 {
				add(p+".probe.failures", "must be 1 or more")
			}
		}
		if b.StreamFirstByteTimeout > b.Timeout || b.FirstByteTimeout > b.Timeout {
			add(p+".timeout", "timeout (%s) is shorter than a first-byte timeout", b.Timeout)
		}
	}

	if a := c.Admin; a != nil {
		host, _, err := net.SplitHostPort(a.Listen)
		switch {
		case err != nil:
			add("admin.listen", "%q is not host:port: %v", a.Listen, err)
		case a.Listen == c.Listen && !strings.HasSuffix(a.Listen, ":0"):
			add("admin.listen", "the admin API needs a listener of its own, not %s", c.Listen)
		case a.Key == "" && !isLoopback(host):
			add("admin.key", "the admin API on %s needs a key; without one it may only listen on loopback", a.Listen)
		case a.Key == "" && !a.AllowNoKey:
			add("admin.key", "the admin API needs a key (any local process or user could drain backends); set one, or allow_no_key: true to serve it on loopback without one")
		case a.Key != "" && a.AllowNoKey:
			add("admin.allow_no_key", "a key is set, so allow_no_key has no effect; remove one of them")
		case a.Key != "" && len(a.Key) < 16:
			add("admin.key", "key is shorter than 16 characters; use a long random value")
		}
	}
	for i, b := range c.Backends {
		if p := b.Price; p != nil && (p.Input < 0 || p.CachedInput < 0 || p.Output < 0) {
			add(fmt.Sprintf("backends[%d].price", i), "prices must not be negative")
		}
	}
	if r := c.State.Redis; r != nil {
		if r.URL == "" {
			add("state.redis.url", "set the server: redis://host:6379 (or ${REDIS_URL})")
		} else if u, err := url.Parse(r.URL.Value()); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			add("state.redis.url", "must be redis://host:port or rediss://host:port")
		} else if seeds := u.Query()["addr"]; !r.Cluster && len(seeds) > 0 {
			add("state.redis.url", "addr parameters name Redis Cluster nodes; set state.redis.cluster: true, or give one server")
		} else if r.Cluster {
			// The URL is a secret: say which part is wrong, never its text.
			for i, a := range seeds {
				if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
					add("state.redis.url", "addr parameter %d is not host:port", i+1)
				}
			}
			if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
				add("state.redis.url", "a Redis Cluster has database 0 only; remove the /%s", db)
			}
		}
		if r.Timeout < 0 {
			add("state.redis.timeout", "must not be negative")
		}
	}
	if c.Reload.Interval < Duration(time.Second) {
		add("reload.interval", "must be at least 1s")
	}
	n := c.Notifications
	if n.Attempts < 1 {
		add("notifications.attempts", "must be 1 or more")
	}
	for i, w := range n.Webhooks {
		if !isHTTPURL(w.URL.Value()) {
			add(fmt.Sprintf("notifications.webhooks[%d].url", i), "not an http(s) URL")
		}
	}
	for kind, sinks := range map[string][]URLSink{"slack": n.Slack, "teams": n.Teams} {
		for i, w := range sinks {
			if !isHTTPURL(w.URL.Value()) {
				add(fmt.Sprintf("notifications.%s[%d].url", kind, i), "not an http(s) URL")
			}
		}
	}
	for i, e := range n.Exec {
		if len(e.Command) == 0 || e.Command[0] == "" {
			add(fmt.Sprintf("notifications.exec[%d].command", i), "give the command as a list: [program, arg, …]")
		}
	}
	if t := c.Tracing; t.Endpoint != "" {
		if !isHTTPURL(t.Endpoint) {
			add("tracing.endpoint", "%q is not an http(s) URL", t.Endpoint)
		}
	}
	if r := *c.Tracing.SampleRatio; r < 0 || r > 1 {
		add("tracing.sample_ratio", "must be between 0 and 1")
	}

	backendType := map[string]string{}
	for _, b := range c.Backends {
		backendType[b.Name] = b.Type
	}
	poolNames := map[string]bool{}
	for _, pl := range c.Pools {
		poolNames[pl.Name] = true
	}
	ps = append(ps, c.validatePinned(backendType, poolNames)...)
	ps = append(ps, c.validateTenancy(poolNames)...)
	ps = append(ps, c.validateConsole()...)

	models := map[string]string{}
	for i, pl := range c.Pools {
		p := fmt.Sprintf("pools[%d]", i)
		if pl.Name == "" {
			add(p+".name", "a pool needs a name (the model callers ask for)")
		}
		for j, n := range append([]string{pl.Name}, pl.Aliases...) {
			if n == "" {
				continue
			}
			path := p + ".name"
			if j > 0 {
				path = fmt.Sprintf("%s.aliases[%d]", p, j-1)
			}
			if other, dup := models[n]; dup {
				add(path, "model name %q already selects pool %q", n, other)
			}
			models[n] = pl.Name
		}
		if len(pl.Members) == 0 {
			add(p+".members", "a pool needs at least one member")
		}
		inPool := map[string]bool{}
		for j, m := range pl.Members {
			mp := fmt.Sprintf("%s.members[%d]", p, j)
			if m.Backend == "" {
				add(mp+".backend", "missing backend name")
			} else if !backends[m.Backend] {
				add(mp+".backend", "no backend is named %q", m.Backend)
			} else if inPool[m.Backend] {
				add(mp+".backend", "backend %q is in this pool twice", m.Backend)
			}
			inPool[m.Backend] = true
			if m.Priority < 1 {
				add(mp+".priority", "must be 1 or more (1 is tried first)")
			}
			if m.Weight < 1 {
				add(mp+".weight", "must be 1 or more")
			}
			if m.MaxTokens < 0 {
				add(mp+".max_tokens", "must not be negative")
			}
		}
		if pl.Storm.Failovers < 1 || pl.Storm.Window <= 0 {
			add(p+".storm", "failovers and window must be positive")
		}
		if pl.Retry.Attempts < 1 {
			add(p+".retry.attempts", "must be 1 or more (1 means no retry)")
		}
		if pl.Strategy != "" && !slices.Contains(StrategyNames(), pl.Strategy) {
			add(p+".strategy", "%q is not a strategy: use one of %s", pl.Strategy, strings.Join(StrategyNames(), ", "))
		}
		if h := pl.Hedge; h != nil && (h.Share < 0 || h.Share > 1) {
			add(p+".hedge.share", "%g is not a share in (0, 1]", h.Share)
		}
		if q := pl.Queue; q.MaxWait < 0 || q.MaxWaitLimit < 0 || q.MaxLength < 0 {
			add(p+".queue", "max_wait, max_wait_limit and max_length must not be negative")
		} else if q.MaxWaitLimit > 0 && q.MaxWait > q.MaxWaitLimit {
			add(p+".queue.max_wait", "%s is over max_wait_limit (%s)", q.MaxWait.D(), q.MaxWaitLimit.D())
		}
		if rb := pl.RetryBudget; rb.Ratio < 0 || rb.MinPerSecond < 0 || rb.Window < 0 {
			add(p+".retry_budget", "ratio, min_per_second and window must not be negative")
		}
		for _, f := range []struct{ key, name string }{{"fallback", pl.Fallback}, {"context_fallback", pl.ContextFallback}} {
			switch {
			case f.name == "":
			case f.name == pl.Name:
				add(p+"."+f.key, "a pool cannot fall back to itself")
			case !poolNames[f.name]:
				add(p+"."+f.key, "no pool is named %q", f.name)
			}
		}
		for _, code := range neverRetry {
			if pl.Retry.On.Has(code) {
				add(p+".retry.on", "%d is the caller's own error and is never retried: another backend answers the same and bills again", code)
			}
		}
	}
	return ps
}

func (b Breaker) validate(p string) []Problem {
	var ps []Problem
	if b.Failures < 1 {
		ps = append(ps, Problem{Path: p + ".failures", Msg: "must be 1 or more"})
	}
	if b.MaxRetryAfter < b.Trip {
		ps = append(ps, Problem{Path: p + ".max_retry_after", Msg: fmt.Sprintf("(%s) is shorter than trip (%s)", b.MaxRetryAfter, b.Trip)})
	}
	return ps
}

// isHTTPURL reports whether s is an absolute http or https URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
