package engine

import (
	"slices"
	"testing"

	"github.com/switchover-gw/switchover/config"
)

// TestReloadNamesSettingsItDoesNotApply: a reload that changes a setting
// only a restart applies logs which one (the bug: server timeouts,
// trace_header, tracing, reload.interval, notification timing and storm
// settings were silently ignored).
func TestReloadNamesSettingsItDoesNotApply(t *testing.T) {
	base := `listen: 127.0.0.1:8080
backends: [{name: weu, type: openai, url: "http://127.0.0.1:1/v1"}]
pools: [{name: chat, members: [{backend: weu}]}]
`
	parse := func(y string) *config.Config {
		t.Helper()
		c, err := config.Parse("r.yaml", []byte(y), nil)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := parse(base)
	tests := []struct {
		name, add string
		want      []string
	}{
		{"nothing", "", nil},
		{"a server timeout and trace_header", "server: {read_timeout: 30s, trace_header: false}\n", []string{"server.read_timeout", "server.trace_header"}},
		{"tracing and reload interval", "tracing: {endpoint: \"http://127.0.0.1:4318\"}\nreload: {interval: 9s}\n", []string{"tracing", "reload.interval"}},
		{"notification timing", "notifications: {flap_window: 1m}\n", []string{"notifications"}},
		{"max_body applies", "server: {max_body: 1MiB}\n", nil},
		{"request limits apply, connections need a restart", "server: {max_body_memory: 512MiB, max_concurrent_requests: 10, max_connections: 10}\n", []string{"server.max_connections", "server.max_connections_per_address"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RestartOnly(old, parse(base+tc.add))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("restart-only changes %v, want %v", got, tc.want)
			}
		})
	}
}
