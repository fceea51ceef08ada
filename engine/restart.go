package engine

import (
	"reflect"
	"strings"

	"github.com/switchover-gw/switchover/config"
)

// RestartOnly names the settings that differ between old and cfg and that
// a reload does not apply (`switchover check -against` prints them): the
// listeners (listen, admin.listen, admin.tls, or an admin listener added
// or removed), the HTTP server's timeouts and limits, logging, tracing,
// the reload interval, notifications, the state and the store. The rest
// (backends, pools, keys, the admin API's keys and viewers,
// max_body, max_body_memory, max_concurrent_requests, their per-key
// shares, min_body_rate) take effect at once.
func RestartOnly(old, cfg *config.Config) []string {
	var names []string
	changed := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			names = append(names, name)
		}
	}
	changed("listen", old.Listen, cfg.Listen)
	switch {
	case (old.Admin == nil) != (cfg.Admin == nil):
		names = append(names, "admin") // the admin listener starts or stops with the process
	case old.Admin != nil:
		changed("admin.listen", old.Admin.Listen, cfg.Admin.Listen)
		changed("admin.tls", old.Admin.TLS, cfg.Admin.TLS)
	}
	was, now := old.Server, cfg.Server
	// Applied on reload: they are the handler's, not the HTTP server's.
	reloadedServer(&was, config.Server{})
	reloadedServer(&now, config.Server{})
	st := reflect.TypeOf(was)
	ov, nv := reflect.ValueOf(was), reflect.ValueOf(now)
	for i := range st.NumField() {
		changed("server."+strings.Split(st.Field(i).Tag.Get("yaml"), ",")[0], ov.Field(i).Interface(), nv.Field(i).Interface())
	}
	changed("log", old.Log, cfg.Log)
	changed("tracing", old.Tracing, cfg.Tracing)
	changed("reload.interval", old.Reload.Interval, cfg.Reload.Interval)
	changed("notifications", old.Notifications, cfg.Notifications)
	changed("state", old.State, cfg.State)
	changed("store", old.Store, cfg.Store)
	storms := map[string]config.Storm{}
	for _, p := range old.Pools {
		storms[p.Name] = p.Storm
	}
	for _, p := range cfg.Pools {
		if was, ok := storms[p.Name]; ok {
			changed("pools."+p.Name+".storm", was, p.Storm)
		}
	}
	return names
}

// reloadedServer sets the server settings a reload applies (the request
// handler's, not the HTTP server's) in dst to src's.
func reloadedServer(dst *config.Server, src config.Server) {
	dst.MaxBody = src.MaxBody
	dst.MaxBodyMemory = src.MaxBodyMemory
	dst.MaxConcurrentRequests = src.MaxConcurrentRequests
	dst.MaxConcurrentRequestsPerKey = src.MaxConcurrentRequestsPerKey
	dst.MaxBodyMemoryPerKey = src.MaxBodyMemoryPerKey
	dst.MinBodyRate = src.MinBodyRate
}

// InForce is the configuration a reload of file puts in force where
// running is in force: file's, except for the settings a reload does not
// apply (RestartOnly), which keep running's values until a restart. So
// RestartOnly(running, file) names what of file waits for a restart, and
// RestartOnly(InForce(running, file), file) still does after the reload.
// file is not changed; the result shares what it does not change with
// file and running.
func InForce(running, file *config.Config) *config.Config {
	c := *file
	c.Listen = running.Listen
	switch {
	case (running.Admin == nil) != (file.Admin == nil):
		c.Admin = running.Admin
	case file.Admin != nil:
		a := *file.Admin
		a.Listen, a.TLS = running.Admin.Listen, running.Admin.TLS
		c.Admin = &a
	}
	c.Server = running.Server
	reloadedServer(&c.Server, file.Server)
	c.Log = running.Log
	c.Tracing = running.Tracing
	c.Reload.Interval = running.Reload.Interval
	c.Notifications = running.Notifications
	c.State = running.State
	c.Store = running.Store
	storms := map[string]config.Storm{}
	for _, p := range running.Pools {
		storms[p.Name] = p.Storm
	}
	c.Pools = make([]config.Pool, len(file.Pools))
	for i, p := range file.Pools {
		if s, ok := storms[p.Name]; ok {
			p.Storm = s
		}
		c.Pools[i] = p
	}
	return &c
}
