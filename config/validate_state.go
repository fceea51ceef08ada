package config

import (
	"net"
	"net/url"
	"strings"
)

func (s State) validate(ps *Problems) {
	if r := s.Redis; r != nil {
		r.validate(ps)
	}
}

// validate checks state.redis. The URL is a secret: a problem says which
// part is wrong, never its text.
func (r *Redis) validate(ps *Problems) {
	if r.URL == "" {
		ps.add("state.redis.url", "set the server: redis://host:6379 (or ${REDIS_URL})")
	} else if u, err := url.Parse(r.URL.Value()); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		ps.add("state.redis.url", "must be redis://host:port or rediss://host:port")
	} else if seeds := u.Query()["addr"]; !r.Cluster && len(seeds) > 0 {
		ps.add("state.redis.url", "addr parameters name Redis Cluster nodes; set state.redis.cluster: true, or give one server")
	} else if r.Cluster {
		validateClusterURL(ps, u, seeds)
	}
	if r.Timeout < 0 {
		ps.add("state.redis.timeout", "must not be negative")
	}
}

// validateClusterURL checks a Redis Cluster URL u: its addr seeds are
// host:port, and it names database 0 or none.
func validateClusterURL(ps *Problems, u *url.URL, seeds []string) {
	for i, a := range seeds {
		if h, p, err := net.SplitHostPort(a); err != nil || h == "" || p == "" {
			ps.add("state.redis.url", "addr parameter %d is not host:port", i+1)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		ps.add("state.redis.url", "a Redis Cluster has database 0 only; remove the /%s", db)
	}
}
