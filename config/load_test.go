package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func testEnv(vars map[string]string) Env {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

var goodEnv = testEnv(map[string]string{
	"SWITCHOVER_APP_KEY": "app-key-0123456789abcdef0123456789",
	"AOAI_WEU_KEY":       "weu-secret-value",
	"AOAI_SEC_KEY":       "sec-secret-value",
	"OPENAI_KEY":         "sk-secret-value",
})

func parseFile(t *testing.T, name string, env Env) (*Config, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return Parse(name, data, env)
}

func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) == 0 {
		t.Fatal("no good files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := parseFile(t, filepath.Base(f), goodEnv); err != nil {
				t.Fatalf("unexpected problems:\n%v", err)
			}
		})
	}
}

func TestSeed000Config(t *testing.T) {
	c, err := parseFile(t, "seed000.good.yaml", goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	weu, sec := c.Backends[0], c.Backends[1]
	if weu.APIKey.Value() != "weu-secret-value" || c.Keys[0].Key.Value() != "app-key-0123456789abcdef0123456789" {
		t.Fatal("env not expanded")
	}
	if weu.FirstByteTimeout.D() != 10*time.Second || weu.Timeout.D() != 120*time.Second {
		t.Fatalf("timeouts %v %v", weu.FirstByteTimeout, weu.Timeout)
	}
	if weu.Breaker.Failures != 5 || weu.Breaker.Window.D() != 30*time.Second || weu.Breaker.Trip.D() != time.Minute ||
		!*weu.Breaker.AcceptRetryAfter || !weu.Breaker.Statuses.Has(429) || !weu.Breaker.Statuses.Has(503) || weu.Breaker.Statuses.Has(404) {
		t.Fatalf("breaker %+v", weu.Breaker)
	}
	// Defaults for the backend that sets nothing.
	if sec.APIVersion != DefaultAzureAPIVersion || sec.FirstByteTimeout.D() != DefaultFirstByteTimeout ||
		sec.ConnectTimeout.D() != DefaultConnectTimeout || sec.Breaker.Failures != 5 || sec.Breaker.MaxRetryAfter.D() != 5*time.Minute {
		t.Fatalf("defaults not applied: %+v", sec)
	}
	p := c.Pools[0]
	if p.Members[1].Priority != 2 || p.Members[1].Weight != 100 || p.Retry.Attempts != 3 || !p.Retry.On.Has(502) || p.Retry.On.Has(501) {
		t.Fatalf("pool %+v", p)
	}
	if c.Server.MaxBody != DefaultMaxBody || c.Server.ShutdownGrace.D() != 30*time.Second {
		t.Fatalf("server %+v", c.Server)
	}
}

func TestBackendDefaultsInherit(t *testing.T) {
	c, err := parseFile(t, "full.good.yaml", goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	openai, local := c.Backends[0], c.Backends[1]
	if openai.ConnectTimeout.D() != 2*time.Second || openai.StreamFirstByteTimeout.D() != 8*time.Second {
		t.Fatalf("defaults not inherited: %+v", openai.Timeouts)
	}
	if openai.Breaker.Failures != 1 || local.Breaker.Failures != 3 || local.Breaker.Trip.D() != 30*time.Second || *local.Breaker.AcceptRetryAfter {
		t.Fatalf("breaker defaults: %+v / %+v", openai.Breaker, local.Breaker)
	}
	if !openai.Breaker.Statuses.Has(429) || openai.Breaker.Statuses.Has(500) {
		t.Fatal("backend's own statuses overridden")
	}
	if c.Keys[0].Key.Value() != "0123456789abcdef0123456789abcdef-default" {
		t.Fatalf("${VAR:-default} gave %q", c.Keys[0].Key.Value())
	}
	if c.Server.MaxBody != 4<<20 || c.Log.Format != "json" {
		t.Fatalf("server %+v log %+v", c.Server, c.Log)
	}
}

func TestBadFiles(t *testing.T) {
	tests := []struct {
		file string
		want []string // each must appear as a line of the error
	}{
		{"unknown-field.bad.yaml", []string{
			`unknown-field.bad.yaml:6: backends[0].breaker: unknown field "failure" (did you mean "failures"?)`,
			`unknown-field.bad.yaml:7: backends[0]: unknown field "frist_byte_timeout" (did you mean "first_byte_timeout"?)`,
			`unknown-field.bad.yaml:10: pools[0].members[0]: unknown field "prio"`,
		}},
		{"missing-env.bad.yaml", []string{
			`missing-env.bad.yaml:3: environment variable SWITCHOVER_TEST_UNSET_KEY is not set`,
			`missing-env.bad.yaml:8: environment variable SWITCHOVER_TEST_UNSET_BACKEND is not set`,
		}},
		{"semantic.bad.yaml", []string{
			`semantic.bad.yaml:1: listen: no keys are configured`,
			`semantic.bad.yaml:5: backends[0].url: "ftp://example.com" is not an http(s) URL`,
			`semantic.bad.yaml:6: backends[1].name: backend name "a" is used twice`,
			`semantic.bad.yaml:7: backends[1].type: unknown type "watsonx"`,
			`semantic.bad.yaml:9: backends[1].timeout: timeout (1s) is shorter than a first-byte timeout`,
			`semantic.bad.yaml:13: backends[2].url: give the resource endpoint`,
			`semantic.bad.yaml:14: backends[2].headers: header "api-key" is set by switchover itself`,
			`semantic.bad.yaml:15: backends[2].breaker.failures: must be 1 or more`,
			`semantic.bad.yaml:15: backends[2].breaker.max_retry_after: (1m0s) is shorter than trip (10m0s)`,
			`semantic.bad.yaml:15: backends[2].breaker.max_trip: (1m0s) is shorter than trip (10m0s)`,
			`semantic.bad.yaml:20: pools[0].members[1].backend: no backend is named "nope"`,
			`semantic.bad.yaml:21: pools[0].retry.attempts: must be 1 or more`,
			`semantic.bad.yaml:21: pools[0].retry.on: 400 is the caller's own error`,
			`semantic.bad.yaml:23: pools[1].aliases[0]: model name "p" already selects pool "p"`,
			`semantic.bad.yaml:24: pools[1].members: a pool needs at least one member`,
		}},
		{"types.bad.yaml", []string{
			`types.bad.yaml:2: "lots" is not a size`,
			`types.bad.yaml:7: "30" is not a duration (use a unit: 500ms, 30s, 2m)`,
			`types.bad.yaml:8: cannot unmarshal str ` + "`five`" + ` into int`,
			`types.bad.yaml:8: "600-700" is not a status code (100-599) or range`,
			`types.bad.yaml:11: cannot unmarshal str ` + "`heavy`" + ` into int`,
		}},
		{"entra.bad.yaml", []string{
			`entra.bad.yaml:6: backends[0].entra: give exactly one of client_secret, federated_token_file and managed_identity`,
			`entra.bad.yaml:5: backends[0].api_key: give api_key or entra, not both`,
			`entra.bad.yaml:10: backends[1].entra: tenant_id and client_id are needed`,
			`entra.bad.yaml:13: backends[2].entra: Entra ID tokens are for azure and foundry backends`,
			`entra.bad.yaml:14: backends[2].anthropic_version: only for anthropic backends`,
			`entra.bad.yaml:17: pools[0].members[2].max_tokens: must not be negative`,
		}},
		{"account.bad.yaml", []string{
			`account.bad.yaml:6: backends[0].organization: only for openai and openai_compatible backends`,
			`account.bad.yaml:9: backends[1].project: only for openai, openai_compatible and vertex backends`,
			`account.bad.yaml:12: backends[2].organization: " org-1" is not a header value`,
		}},
		{"size-overflow.bad.yaml", []string{
			`size-overflow.bad.yaml:3: "9000000000GiB" is too large a size (at most 1TiB)`,
		}},
		{"size-absurd.bad.yaml", []string{
			`size-absurd.bad.yaml:4: server.max_body: 2147483648 bytes is over 1GiB`,
		}},
		{"admin.bad.yaml", []string{
			`admin.bad.yaml:2: admin.key: the admin API needs a key`,
		}},
		{"admin-open.bad.yaml", []string{
			`admin-open.bad.yaml:2: admin.key: the admin API on 0.0.0.0:8081 needs a key; without one it may only listen on loopback`,
		}},
		{"server-limits.bad.yaml", []string{
			`server-limits.bad.yaml:4: server.max_body_memory: 33554432 is under max_body (67108864)`,
			`server-limits.bad.yaml:5: server.max_connections: must not be negative`,
			`server-limits.bad.yaml:6: server.max_concurrent_requests: must not be negative`,
			`server-limits.bad.yaml:7: server.max_concurrent_requests_per_key: must not be negative`,
			`server-limits.bad.yaml:8: server.max_body_memory_per_key: 1048576 is under max_body (67108864)`,
			`server-limits.bad.yaml:9: "-1" is not a size`,
		}},
		{"listener.bad.yaml", []string{
			`listener.bad.yaml:2: allowed_origins[0]: "app.example.com" is not an origin such as https://app.example.com`,
			`listener.bad.yaml:5: server.max_connections_per_address: 200 is over max_connections (100)`,
			`listener.bad.yaml:7: server.idle_timeout_under_pressure: 1m0s is over idle_timeout (30s)`,
			`listener.bad.yaml:8: server.metrics_listen: the metrics need a listener of their own, not 127.0.0.1:8080`,
			`listener.bad.yaml:10: keys[0].key: key is shorter than 32 characters`,
		}},
		{"pinned.bad.yaml", []string{
			`pinned.bad.yaml:3: backends[1].responses_api: only for openai, openai_compatible and azure backends`,
			`pinned.bad.yaml:8: pinned[0]: name a backend or a pool, not both`,
			`pinned.bad.yaml:9: pinned[1].paths[0]: "chat/completions" is routed by the pools`,
			`pinned.bad.yaml:10: pinned[2].backend: no backend is named "nowhere"`,
			`pinned.bad.yaml:11: pinned[3].paths[0]: messages/batches is Anthropic's API: pin it to an anthropic backend`,
			`pinned.bad.yaml:12: pinned[4].paths[0]: "files" is already pinned by pinned[0]`,
			`pinned.bad.yaml:13: pinned[5].paths: list the API paths`,
			`pinned.bad.yaml:15: unknown_paths.backend: unknown paths are OpenAI API paths`,
			`pinned.bad.yaml:18: unknown_paths.paths[1]: "threads/../organization" is a path prefix`,
			`pinned.bad.yaml:19: unknown_paths.paths[2]: an empty path`,
			`pinned.bad.yaml:20: unknown_paths.paths[3]: "files?after=x" is a path prefix`,
			`pinned.bad.yaml:21: unknown_paths.paths[4]: "/v1//vector_stores" is a path prefix`,
		}},
		{"pool-routing.bad.yaml", []string{
			`pool-routing.bad.yaml:6: pools[0].strategy: "fastest" is not a strategy: use one of priority, least_busy, latency, affinity, headroom`,
			`pool-routing.bad.yaml:7: pools[0].fallback: a pool cannot fall back to itself`,
			`pool-routing.bad.yaml:8: pools[0].context_fallback: no pool is named "nowhere"`,
			`pool-routing.bad.yaml:9: pools[0].retry_budget: ratio, min_per_second and window must not be negative`,
			`pool-routing.bad.yaml:10: pools[0].hedge.share: 2 is not a share in (0, 1]`,
			`pool-routing.bad.yaml:13: "p100" is not a quantile from p50 to p99`,
		}},
		{"syntax.bad.yaml", []string{
			`syntax.bad.yaml:4: did not find expected`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := parseFile(t, tc.file, goodEnv)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("err = %v, want Problems", err)
			}
			got := err.Error()
			for _, w := range tc.want {
				found := false
				for _, line := range strings.Split(got, "\n") {
					if strings.HasPrefix(line, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing problem %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestProviderDefaults(t *testing.T) {
	c, err := parseFile(t, "providers.good.yaml", goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Backend{}
	for _, b := range c.Backends {
		byName[b.Name] = b
	}
	if byName["openai"].URL != "https://api.openai.com/v1" || byName["claude"].URL != "https://api.anthropic.com" ||
		byName["gemini"].URL != "https://generativelanguage.googleapis.com" || byName["gemini"].APIVersion != "v1beta" ||
		byName["claude"].AnthropicVersion != "2023-06-01" {
		t.Fatalf("provider defaults: %+v", byName)
	}
	if e := byName["aoai-westeurope"].Entra; e == nil || e.ClientSecret.Value() != "weu-secret-value" {
		t.Fatal("entra secret not expanded")
	}
	if m := c.Pools[0].Members[3]; m.MaxTokens != 2048 {
		t.Fatalf("member %+v", m)
	}
	if !c.Pools[0].Retry.On.Has(529) {
		t.Fatal("529 (overloaded) not retried by default")
	}
}

func TestEnvExpansion(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       string
	}{
		{"whole value", `v: ${A}`, "alpha"},
		{"inside text", `v: "x-${A}-y"`, "x-alpha-y"},
		{"default unused", `v: ${A:-d}`, "alpha"},
		{"default used", `v: ${NOPE:-d}`, "d"},
		{"empty default", `v: "${NOPE:-}"`, ""},
		{"dollar escape", `v: "$${A}"`, "${A}"},
		{"value with yaml syntax stays a string", `v: ${TRICKY}`, "a: b # c"},
		{"comment not expanded", "v: x # ${NOPE}", "x"},
	}
	env := testEnv(map[string]string{"A": "alpha", "TRICKY": "a: b # c"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.yaml), &n); err != nil {
				t.Fatal(err)
			}
			l := &loader{file: "f", env: env, lines: map[string]int{}}
			l.expand(&n)
			if len(l.problems) > 0 {
				t.Fatalf("problems %v", l.problems)
			}
			var out struct{ V string }
			if err := n.Decode(&out); err != nil {
				t.Fatal(err)
			}
			if out.V != tc.want {
				t.Fatalf("got %q, want %q", out.V, tc.want)
			}
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	c, err := parseFile(t, "seed000.good.yaml", goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf strings.Builder
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("config", "config", c, "key", c.Keys[0].Key)
	j, _ := json.Marshal(c)
	y, _ := yaml.Marshal(c)
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", c),
		"%+v":  fmt.Sprintf("%+v", c),
		"%#v":  fmt.Sprintf("%#v", c),
		"%s":   fmt.Sprintf("key=%s", c.Backends[0].APIKey),
		"json": string(j),
		"yaml": string(y),
		"slog": logBuf.String(),
	}
	for name, out := range outputs {
		for _, secret := range []string{"weu-secret-value", "sec-secret-value", "app-key-0123456789abcdef0123456789"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output contains a secret: %s", name, out)
			}
		}
	}
	if !strings.Contains(outputs["json"], "[redacted]") {
		t.Error("json output does not show that a secret was redacted")
	}
}

func TestEmptyFile(t *testing.T) {
	_, err := Parse("empty.yaml", []byte("# nothing\n"), goodEnv)
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("err = %v", err)
	}
}

// TestAliasSentAsDeploymentWarns: an alias of a pool with an Azure member
// that sets no model is sent as a deployment name nobody configured;
// Load warns, with the alias's line (the bug: check said such a file was
// valid and every request by the alias got 404 DeploymentNotFound).
func TestAliasSentAsDeploymentWarns(t *testing.T) {
	const y = `backends:
  - {name: weu, type: azure, url: "https://weu.openai.azure.com", api_key: k}
  - {name: oai, type: openai, api_key: k}
pools:
  - name: chat-prod
    aliases:
      - gpt-4o-mini
    members:
      - {backend: weu}
      - {backend: oai, model: gpt-4o-mini}
  - name: pinned
    aliases: [other]
    members:
      - {backend: weu, model: chat-prod}
`
	cfg, err := Parse("w.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ws := cfg.Warnings()
	if len(ws) != 1 || ws[0].Line != 7 || !strings.Contains(ws[0].Msg, `deployment "gpt-4o-mini"`) || !strings.Contains(ws[0].Msg, "weu") {
		t.Fatalf("warnings %v, want one for the alias on line 7", ws)
	}
}

// TestEveryProblemInOnePass: unknown fields and variables, values that do
// not decode and cross-references are all reported by one run (the bug:
// one file took three runs of check, one stage at a time).
func TestEveryProblemInOnePass(t *testing.T) {
	const y = `listen: 127.0.0.1:8080
bogus_field: 1
backends:
  - name: weu
    type: azure
    url: "https://weu.openai.azure.com"
    api_key: ${NOT_SET_ANYWHERE}
    first_byte_timeout: 30
    breaker: {statuses: [429, "900-999"]}
pools:
  - name: chat-prod
    members:
      - {backend: nowhere}
`
	_, err := Parse("all.yaml", []byte(y), func(string) (string, bool) { return "", false })
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v", err)
	}
	lines := map[int]bool{}
	for _, p := range ps {
		lines[p.Line] = true
	}
	for _, want := range []int{2, 7, 8, 9, 13} {
		if !lines[want] {
			t.Errorf("no problem on line %d in one run:\n%v", want, err)
		}
	}
}

func TestDrainDelay(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
	}{
		{"default", "", DefaultDrainDelay},
		{"set", "server: {drain_delay: 12s}\n", 12 * time.Second},
		{"zero disables", "server: {drain_delay: 0s}\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.yaml+"backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]}]\n"), goodEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Server.DrainDelay.D(); got != tc.want {
				t.Fatalf("drain_delay %s, want %s", got, tc.want)
			}
		})
	}
}

func TestServerLimits(t *testing.T) {
	tests := []struct {
		file                string
		bodyMemory          Size
		conns, simultaneous int
	}{
		{"seed000.good.yaml", DefaultMaxBodyMemory, DefaultMaxConnections, DefaultMaxConcurrentRequests},
		{"full.good.yaml", 64 << 20, 500, 100},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := parseFile(t, tt.file, goodEnv)
			if err != nil {
				t.Fatal(err)
			}
			s := c.Server
			if s.MaxBodyMemory != tt.bodyMemory || s.MaxConnections != tt.conns || s.MaxConcurrentRequests != tt.simultaneous {
				t.Errorf("max_body_memory %d, max_connections %d, max_concurrent_requests %d; want %d, %d, %d",
					s.MaxBodyMemory, s.MaxConnections, s.MaxConcurrentRequests, tt.bodyMemory, tt.conns, tt.simultaneous)
			}
			// Unset, with the one key of these files and no store, the
			// key's shares are the whole, and the minimum body rate
			// 4KiB a second.
			if s.MaxBodyMemoryPerKey != tt.bodyMemory || s.MaxConcurrentRequestsPerKey != tt.simultaneous || s.MinBodyRate != DefaultMinBodyRate {
				t.Errorf("max_body_memory_per_key %d, max_concurrent_requests_per_key %d, min_body_rate %d; want %d, %d, %d",
					s.MaxBodyMemoryPerKey, s.MaxConcurrentRequestsPerKey, s.MinBodyRate, tt.bodyMemory, tt.simultaneous, DefaultMinBodyRate)
			}
		})
	}
}

// TestPerKeySharesHalveOnlyWithSeveralKeys: the README's config has one
// key, and halving that key's slots and body memory by default halved
// the gateway. With two keys (or a store of keys) each gets half.
func TestPerKeySharesHalveOnlyWithSeveralKeys(t *testing.T) {
	const tail = "backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]}]\n"
	tests := []struct {
		name, keys string
		half       bool
	}{
		{"one key", "keys: [{name: k1, key: 0123456789abcdef0123456789abcdef}]\n", false},
		{"two keys", "keys: [{name: k1, key: 0123456789abcdef0123456789abcdef}, {name: k2, key: fedcba9876543210fedcba9876543210}]\n", true},
		{"one key and a store", "keys: [{name: k1, key: 0123456789abcdef0123456789abcdef}]\nstore: {sqlite: /tmp/x.db}\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.keys+tail), goodEnv)
			if err != nil {
				t.Fatal(err)
			}
			s := c.Server
			wantConc, wantMem := s.MaxConcurrentRequests, s.MaxBodyMemory
			if tc.half {
				wantConc, wantMem = s.MaxConcurrentRequests/2, max(s.MaxBodyMemory/2, s.MaxBody)
			}
			if s.MaxConcurrentRequestsPerKey != wantConc || s.MaxBodyMemoryPerKey != wantMem {
				t.Fatalf("per-key shares %d requests, %d bytes; want %d, %d", s.MaxConcurrentRequestsPerKey, s.MaxBodyMemoryPerKey, wantConc, wantMem)
			}
		})
	}
}

// TestParseSizeOverflow: "max_body: 9000000000GiB" overflowed int64 to a
// negative count, which the defaults then replaced with 32MiB.
func TestParseSizeOverflow(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		err  error // nil: no error; errSizeTooLarge; errAny: any other
	}{
		{"bytes", "1048576", 1 << 20, nil},
		{"KiB", "512KiB", 512 << 10, nil},
		{"MiB with space", "32 MiB", 32 << 20, nil},
		{"GB", "1GB", 1e9, nil},
		{"the largest", "1024GiB", MaxSize, nil},
		{"just over the largest", "1099511627777", 0, errSizeTooLarge},
		{"multiplied past int64", "9000000000GiB", 0, errSizeTooLarge},
		{"multiplied past the bound", "1025GiB", 0, errSizeTooLarge},
		{"past int64 before the unit", "99999999999999999999KiB", 0, errSizeTooLarge},
		{"negative", "-1MiB", 0, errAny},
		{"plus sign", "+1MiB", 0, errAny},
		{"unit alone", "MiB", 0, errAny},
		{"words", "lots", 0, errAny},
		{"fraction", "1.5GiB", 0, errAny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSize(tc.in)
			switch {
			case tc.err == nil && (err != nil || got != tc.want):
				t.Fatalf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			case tc.err == errSizeTooLarge && !errors.Is(err, errSizeTooLarge):
				t.Fatalf("parseSize(%q) = %d, %v; want too large", tc.in, got, err)
			case tc.err == errAny && (err == nil || errors.Is(err, errSizeTooLarge)):
				t.Fatalf("parseSize(%q) = %d, %v; want not a size", tc.in, got, err)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestHedge(t *testing.T) {
	tests := []struct {
		name, hedge string
		want        *Hedge
	}{
		{"off by default", "", nil},
		{"learned", ", hedge: {after: p95}", &Hedge{After: HedgeAfter{Quantile: 0.95}}},
		{"fixed", ", hedge: {after: 800ms, share: 0.05}", &Hedge{After: HedgeAfter{Delay: 800 * time.Millisecond}, Share: 0.05}},
		{"defaults", ", hedge: {}", &Hedge{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte("backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]"+tc.hedge+"}]\n"), goodEnv)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Pools[0].Hedge
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("hedge %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStateRedis(t *testing.T) {
	base := "backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]}]\n"
	env := func(k string) (string, bool) {
		if k == "REDIS_URL" {
			return "redis://:hunter2-secret@10.0.0.5:6379/0", true
		}
		return "", false
	}
	c, err := Parse("t.yaml", []byte(base+"state: {redis: {url: \"${REDIS_URL}\"}, replica: gw-1}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.State.Redis == nil || c.State.Redis.URL.Value() != "redis://:hunter2-secret@10.0.0.5:6379/0" || c.State.Replica != "gw-1" {
		t.Fatalf("state %+v", c.State)
	}
	if strings.Contains(fmt.Sprint(c.State.Redis), "hunter2") {
		t.Fatal("the Redis password prints")
	}
	_, err = Parse("t.yaml", []byte(base+"state:\n  redis: {url: \"http://10.0.0.5\"}\n"), env)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4: state.redis.url: must be redis://host:port") {
		t.Fatalf("bad url: %v", err)
	}
}

func TestStateRedisCluster(t *testing.T) {
	base := "backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]}]\n"
	for _, tc := range []struct {
		name    string
		state   string
		cluster bool
		err     string // empty: valid
	}{
		{"seeds", "state:\n  redis:\n    url: \"redis://10.0.0.5:6379?addr=10.0.0.6:6379&addr=10.0.0.7:6379\"\n    cluster: true\n", true, ""},
		{"one seed", "state:\n  redis: {url: \"rediss://:pw@cfg.example:6379\", cluster: true}\n", true, ""},
		{"db 0", "state:\n  redis: {url: \"redis://10.0.0.5:6379/0\", cluster: true}\n", true, ""},
		{"off by default", "state:\n  redis: {url: \"redis://10.0.0.5:6379\"}\n", false, ""},
		{"addr without cluster", "state:\n  redis:\n    prefix: x\n    url: \"redis://10.0.0.5:6379?addr=10.0.0.6:6379\"\n",
			false, "t.yaml:6: state.redis.url: addr parameters name Redis Cluster nodes; set state.redis.cluster: true"},
		{"bad seed", "state:\n  redis:\n    cluster: true\n    url: \"redis://:hunter2@10.0.0.5:6379?addr=10.0.0.6:6379&addr=10.0.0.7\"\n",
			true, "t.yaml:6: state.redis.url: addr parameter 2 is not host:port"},
		{"cluster db", "state:\n  redis:\n    cluster: true\n    url: \"redis://10.0.0.5:6379/2\"\n",
			true, "t.yaml:6: state.redis.url: a Redis Cluster has database 0 only"},
		{"not a bool", "state:\n  redis:\n    url: \"redis://10.0.0.5:6379\"\n    cluster: maybe\n",
			false, "t.yaml:6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(base+tc.state), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the error prints the URL's password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.State.Redis == nil || c.State.Redis.Cluster != tc.cluster {
				t.Errorf("state.redis %+v, want cluster %v", c.State.Redis, tc.cluster)
			}
		})
	}
}
