package config

import (
	"fmt"
	"time"
)

// RequestLog is what the request log keeps of a pool's requests
// (pools[].request_log) or a key's (keys[].request_log), beyond the row
// every request gets. A key's fields, where set, win over its pools'.
// Unset: no bodies, the default. See docs/operations.md ("The request
// log").
type RequestLog struct {
	// Bodies keeps each request's body and its answer's (a stream's
	// events as they passed), each up to MaxBodyBytes, in the store,
	// their secrets redacted (docs/operations.md lists what is), for
	// store.body_retention. Headers are never kept. Default false.
	// Risk: bodies hold the end users' prompts and the models' answers;
	// only the admin key (and the console's admins) can read them.
	// Needs a store.
	Bodies *bool `yaml:"bodies"`
	// MaxBodyBytes bounds each body kept, in bytes: a longer one keeps
	// its first MaxBodyBytes, marked truncated. Default 16KiB, at most
	// 1MiB. Cost: the store's bytes per request (see
	// docs/operations.md), and memory while records wait to be written
	// (at most 32 MiB of bodies; past it records are kept without).
	MaxBodyBytes Size `yaml:"max_body_bytes"`
}

// Request log defaults and bounds.
const (
	DefaultMaxBodyBytes  = 16 << 10
	MaxMaxBodyBytes      = 1 << 20
	DefaultBodyRetention = 7 * 24 * time.Hour
)

// BodiesOn reports whether l keeps bodies (false for a nil l).
func (l *RequestLog) BodiesOn() bool { return l != nil && l.Bodies != nil && *l.Bodies }

// BodyLimit is l's bound of a kept body, the default when unset.
func (l *RequestLog) BodyLimit() int64 {
	if l == nil || l.MaxBodyBytes == 0 {
		return DefaultMaxBodyBytes
	}
	return int64(l.MaxBodyBytes)
}

// BodyRetentionAge returns store.body_retention as a duration:
// DefaultBodyRetention when unset, 0 for "0" (the bodies go with their
// rows, store.retention).
func (s *Store) BodyRetentionAge() time.Duration {
	switch {
	case s == nil || s.BodyRetention == "":
		return DefaultBodyRetention
	case s.BodyRetention == "0":
		return 0
	}
	d, err := parseRetention(s.BodyRetention)
	if err != nil {
		return DefaultBodyRetention
	}
	return d
}

// validateRequestLog checks the request_log sections of the pools and
// keys, and store.body_retention.
func (c *Config) validateRequestLog(ps *Problems) {
	check := func(p string, l *RequestLog) {
		if l == nil {
			return
		}
		if l.MaxBodyBytes < 0 || l.MaxBodyBytes > MaxMaxBodyBytes {
			ps.add(p+".max_body_bytes", "%d bytes is out of range: 1 to 1MiB (default 16KiB)", l.MaxBodyBytes)
		}
		if l.BodiesOn() && c.Store == nil {
			ps.add(p+".bodies", "needs a store (store.sqlite or store.postgres) to keep them in")
		}
	}
	for i := range c.Pools {
		check(fmt.Sprintf("pools[%d].request_log", i), c.Pools[i].RequestLog)
	}
	for i := range c.Keys {
		check(fmt.Sprintf("keys[%d].request_log", i), c.Keys[i].RequestLog)
	}
	s := c.Store
	if s == nil || s.BodyRetention == "" || s.BodyRetention == "0" {
		return
	}
	d, err := parseRetention(s.BodyRetention)
	if err != nil {
		ps.add("store.body_retention", "%v (or 0: as long as their requests' rows)", err)
		return
	}
	if rows := s.RetentionAge(); rows > 0 && d > rows {
		ps.add("store.body_retention", "%s is longer than store.retention (%s): bodies go with their requests' rows", s.BodyRetention, s.Retention)
	}
}
