package engine

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/testpki"
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

// TestInForceKeepsWhatWaitsForARestart: after a reload of a file that
// changes settings a reload does not apply, the configuration in force
// keeps their running values and takes the rest from the file (the bug:
// the console showed the file's notifications.flap_window and webhooks as
// running, and said a reload would change nothing).
func TestInForceKeepsWhatWaitsForARestart(t *testing.T) {
	base := `listen: 127.0.0.1:8080
admin: {listen: 127.0.0.1:8081, key: admin-key-0123456789}
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
	tests := []struct {
		name, file string
		waits      []string
		check      func(in *config.Config) bool
	}{
		{"flap window", base + "notifications: {flap_window: 7m}\n", []string{"notifications"},
			func(in *config.Config) bool { return in.Notifications.FlapWindow.D() != 7*time.Minute }},
		{"a webhook added", base + "notifications: {webhooks: [{url: \"http://127.0.0.1:9/hook\"}]}\n", []string{"notifications"},
			func(in *config.Config) bool { return len(in.Notifications.Webhooks) == 0 }},
		{"admin listen waits, its key applies", strings.Replace(base, "listen: 127.0.0.1:8081, key: admin-key-0123456789", "listen: 127.0.0.1:9091, key: other-admin-key-0123456789", 1), []string{"admin.listen"},
			func(in *config.Config) bool {
				return in.Admin.Listen == "127.0.0.1:8081" && in.Admin.Key.Value() == "other-admin-key-0123456789"
			}},
		{"admin tls", strings.Replace(base, "key: admin-key-0123456789}", "key: admin-key-0123456789, tls: {cert_file: c.pem, key_file: k.pem}}", 1), []string{"admin.tls"},
			func(in *config.Config) bool { return in.Admin.TLS == nil }},
		{"a server timeout waits, max_body applies", base + "server: {read_timeout: 31s, max_body: 1MiB}\n", []string{"server.read_timeout"},
			func(in *config.Config) bool {
				return in.Server.ReadTimeout.D() != 31*time.Second && in.Server.MaxBody == 1<<20
			}},
		{"a pool's storm", strings.Replace(base, "members: [{backend: weu}]", "members: [{backend: weu}], storm: {failovers: 3}", 1), []string{"pools.chat.storm"},
			func(in *config.Config) bool { return in.Pools[0].Storm.Failovers != 3 }},
		{"only what applies", strings.Replace(base, "type: openai,", "type: openai, timeout: 700s,", 1), nil,
			func(in *config.Config) bool { return in.Backends[0].Timeout.D() == 700*time.Second }},
	}
	running := parse(base)
	dir := t.TempDir()
	cert, key := testpki.NewCA(t, "admin-ca").Server(t, "127.0.0.1", "127.0.0.1")
	pem := strings.NewReplacer("c.pem", testpki.Write(t, dir, "c.pem", cert), "k.pem", testpki.Write(t, dir, "k.pem", key))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := parse(pem.Replace(tc.file))
			if got := RestartOnly(running, file); !slices.Equal(got, tc.waits) {
				t.Fatalf("waits %v, want %v", got, tc.waits)
			}
			in := InForce(running, file)
			if !tc.check(in) {
				t.Fatalf("in force: %+v", in)
			}
			if got := RestartOnly(running, in); got != nil {
				t.Errorf("the configuration in force changes %v, which wait for a restart", got)
			}
			if got := RestartOnly(in, file); !slices.Equal(got, tc.waits) {
				t.Errorf("after the reload, %v wait, want %v", got, tc.waits)
			}
			if again := InForce(in, file); !reflect.DeepEqual(again, in) {
				t.Error("a second reload of the same file changes the configuration in force")
			}
		})
	}
}
