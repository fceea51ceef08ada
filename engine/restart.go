package engine

import (
	"reflect"
	"strings"

	"github.com/switchover-gw/switchover/config"
)

// RestartOnly names the settings that differ between old and cfg and that
// a reload does not apply (`switchover check -against` prints them): the listeners, the HTTP server's timeouts and
// limits, logging, tracing, the reload interval and notifications. The
// rest (backends, pools, keys, max_body, max_body_memory,
// max_concurrent_requests, their per-key shares, min_body_rate) take
// effect at once.
func RestartOnly(old, cfg *config.Config) []string {
	var names []string
	changed := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			names = append(names, name)
		}
	}
	changed("listen", old.Listen, cfg.Listen)
	changed("admin", old.Admin, cfg.Admin)
	was, now := old.Server, cfg.Server
	// Applied on reload: they are the handler's, not the HTTP server's.
	was.MaxBody, now.MaxBody = 0, 0
	was.MaxBodyMemory, now.MaxBodyMemory = 0, 0
	was.MaxConcurrentRequests, now.MaxConcurrentRequests = 0, 0
	was.MaxConcurrentRequestsPerKey, now.MaxConcurrentRequestsPerKey = 0, 0
	was.MaxBodyMemoryPerKey, now.MaxBodyMemoryPerKey = 0, 0
	was.MinBodyRate, now.MinBodyRate = 0, 0
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
