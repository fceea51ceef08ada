package config

import (
	"fmt"
	"net"
	"net/url"
)

// add appends a problem at path, its message formatted from format and
// args.
func (ps *Problems) add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

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
		if l := p.RequestLog; l != nil {
			check(fmt.Sprintf("pools[%d].request_log.max_body_bytes", i), int(l.MaxBodyBytes), "must be 1 or more (default 16KiB)")
		}
	}
	for i, k := range c.Keys {
		if l := k.RequestLog; l != nil {
			check(fmt.Sprintf("keys[%d].request_log.max_body_bytes", i), int(l.MaxBodyBytes), "must be 1 or more (default 16KiB)")
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

// validate reports every semantic problem of a defaulted configuration,
// by path. The order of the checks is the order of the problems (Load
// then sorts them by line, stably).
func (c *Config) validate() []Problem {
	var ps Problems
	c.validateServer(&ps)
	c.validateKeys(&ps)
	c.validateBackends(&ps)
	c.validateAdmin(&ps)
	c.validatePrices(&ps)
	c.State.validate(&ps)
	c.validateReload(&ps)
	c.Notifications.validate(&ps)
	c.Tracing.validate(&ps)

	backendType := map[string]string{}
	for _, b := range c.Backends {
		backendType[b.Name] = b.Type
	}
	poolNames := map[string]bool{}
	for _, pl := range c.Pools {
		poolNames[pl.Name] = true
	}
	c.validatePinned(&ps, backendType, poolNames)
	c.validateTenancy(&ps, poolNames)
	c.validateConsole(&ps)
	c.validatePools(&ps, backendType, poolNames)
	c.validateCache(&ps)
	c.validateRequestLog(&ps)
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
