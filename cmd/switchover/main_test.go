package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
	"github.com/switchover-gw/switchover/internal/syncbuf"
)

type syncBuffer = syncbuf.Buffer

func TestExitCodes(t *testing.T) {
	good := filepath.Join("..", "..", "examples", "switchover.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("backends:\n  - name: a\n    typo: 1\n"), 0o600)
	oneKey := filepath.Join(t.TempDir(), "one-key.yaml")
	os.WriteFile(oneKey, []byte(`keys: [{name: app, key: app-key-0123456789abcdef0123456789}]
backends: [{name: a, type: openai_compatible, url: "http://127.0.0.1:1"}]
pools: [{name: p, members: [{backend: a}]}]
`), 0o600)
	slower := filepath.Join(t.TempDir(), "slower.yaml")
	os.WriteFile(slower, []byte(`server: {read_timeout: 90s}
keys: [{name: app, key: app-key-0123456789abcdef0123456789}]
backends: [{name: a, type: openai_compatible, url: "http://127.0.0.1:1"}]
pools: [{name: p, members: [{backend: a}]}]
`), 0o600)
	preset := filepath.Join(t.TempDir(), "preset.yaml")
	os.WriteFile(preset, []byte(`backends: [{name: fast, preset: groq, api_key: gsk-secret-0123456789}]
pools: [{name: p, members: [{backend: fast}]}]
`), 0o600)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"check prints a resolved preset", []string{"check", "-c", preset}, exitOK,
			"backend fast: preset groq: url https://api.groq.com/openai/v1, key bearer, unsupported: completions, embeddings, responses, images, moderations, realtime;", ""},
		// Regression: a reload silently ignored server timeouts; check
		// names them against the configuration in force.
		{"check against the running config", []string{"check", "-c", slower, "-against", oneKey}, exitOK, "restart needed: server.read_timeout changed; a reload does not apply it", ""},
		{"no command", nil, exitUsage, "", "Usage:"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, exitOK, "switchover dev", ""},
		{"check good", []string{"check", "-c", good}, exitOK, "ok (3 backends, 1 pool, 0 keys)", ""},
		// Regression: check printed "1 keys".
		{"check counts one key", []string{"check", "-c", oneKey}, exitOK, "ok (1 backend, 1 pool, 1 key)", ""},
		// Regression: -listen skipped the rule check applies to listen in a
		// file (no keys: loopback only).
		{"serve -listen beyond loopback without keys", []string{"serve", "-c", good, "-listen", "0.0.0.0:0"}, exitConfig, "", "listen: no keys are configured, so the gateway only listens on loopback"},
		{"serve -listen not host:port", []string{"serve", "-c", good, "-listen", "8080"}, exitConfig, "", `listen: "8080" is not host:port`},
		{"check bad", []string{"check", "-c", bad}, exitConfig, "", `bad.yaml:3: backends[0]: unknown field "typo"`},
		{"check missing file", []string{"check", "-c", "/nonexistent.yaml"}, exitError, "", "no such file"},
		{"check without -c", []string{"check"}, exitUsage, "", "check needs -c FILE"},
		{"serve bad config", []string{"serve", "-c", bad}, exitConfig, "", "unknown field"},
		{"bad flag", []string{"serve", "-nope"}, exitUsage, "", "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(t.Context(), tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
			}
		})
	}
}

// TestDemo runs the README's first command in-process: serve with no
// config, then uses the gateway it prints with the official OpenAI client,
// and takes the primary region down through the simulator's control API.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-listen", "127.0.0.1:0"}, &out, &errOut) }()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("demo exited %d: %s", code, errOut.String())
		}
	}()
	base := regexp.MustCompile(`a gateway on (http://127\.0\.0\.1:\d+)`)
	control := regexp.MustCompile(`curl -s -X POST (http://127\.0\.0\.1:\d+)/_sim/deployments/uksouth/fault`)
	var gw, ctl string
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second) // a guard against a hang, not a timing assertion
	defer wcancel()
	if err := out.WaitFor(wctx, func(s string) bool {
		return base.MatchString(s) && control.MatchString(s)
	}); err != nil {
		t.Fatalf("demo did not start: %s %s", out.String(), errOut.String())
	}
	gw = base.FindStringSubmatch(out.String())[1]
	ctl = control.FindStringSubmatch(out.String())[1]
	for _, want := range []string{"uksouth", "swedencentral", "westeurope", "base URL " + gw + "/v1", `model "chat-prod"`, "listen: 127.0.0.1:0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}

	client := openai.NewClient(option.WithBaseURL(gw+"/v1/"), option.WithAPIKey("anything"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:     "chat-prod",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		MaxTokens: openai.Int(8),
	}
	var raw *http.Response
	resp, err := client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content == "" || raw.Header.Get("X-Switchover-Backend") != "aoai-uksouth" {
		t.Fatalf("first answer %q from %s", resp.Choices[0].Message.Content, raw.Header.Get("X-Switchover-Backend"))
	}

	// Take uksouth down: the next call, streamed, is answered by tier 2.
	r, err := http.Post(ctl+"/_sim/deployments/uksouth/fault", "application/json", strings.NewReader(`{"mode":"down"}`))
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("setting the fault: %v %v", r, err)
	}
	r.Body.Close()
	stream := client.Chat.Completions.NewStreaming(t.Context(), params, option.WithResponseInto(&raw))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if b := raw.Header.Get("X-Switchover-Backend"); b != "aoai-swedencentral" && b != "aoai-westeurope" {
		t.Fatalf("with uksouth down, answered by %q", b)
	}
	if raw.Header.Get("X-Switchover-Failover") != "true" || acc.Choices[0].Message.Content == "" {
		t.Fatalf("failover %q, content %q", raw.Header.Get("X-Switchover-Failover"), acc.Choices[0].Message.Content)
	}
}

func TestLoadAndGamedayCommands(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Switchover-Backend", "here")
		io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer srv.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"load burst", []string{"load", "-url", srv.URL, "-concurrency", "2", "-n", "6", "-q"}, exitOK, "success      100.00% (6 answered, 0 failed)", ""},
		{"load json", []string{"load", "-url", srv.URL, "-concurrency", "1", "-n", "2", "-q", "-json"}, exitOK, `"success_rate": 1`, ""},
		{"load needs a model of load", []string{"load", "-url", srv.URL}, exitUsage, "", "exactly one of -rate or -concurrency"},
		{"load repeats", []string{"load", "-url", srv.URL, "-concurrency", "1", "-n", "4", "-repeat", "0.5", "-q"}, exitOK, "success      100.00% (4 answered, 0 failed)", ""},
		{"load repeat share of 1", []string{"load", "-url", srv.URL, "-concurrency", "1", "-n", "4", "-repeat", "1"}, exitUsage, "", "-repeat is a share of the requests"},
		{"load bad strategy", []string{"load", "-rate", "1", "-strategy", "random", "-region", "a=http://127.0.0.1:1"}, exitUsage, "", `unknown strategy "random"`},
		{"load bad region flag", []string{"load", "-rate", "1", "-region", "nourl"}, exitUsage, "", "want NAME=URL"},
		{"gameday list", []string{"gameday", "-list"}, exitOK, "main-region-short", ""},
		{"gameday list shows the real-time scenarios", []string{"gameday", "-list"}, exitOK, "impossible-requests", ""},
		{"gameday list shows the outage with default timeouts", []string{"gameday", "-list"}, exitOK, "outage-default-timeouts", ""},
		{"gameday list shows defaults setups", []string{"gameday", "-list"}, exitOK, "gateway: switchover defaults, deleted deployment", ""},
		{"gameday unknown scenario", []string{"gameday", "-only", "nope"}, exitUsage, "", `no scenario "nope"`},
		{"gameday bad file", []string{"gameday", "-f", "/nonexistent.yaml"}, exitConfig, "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(t.Context(), tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
		})
	}
}

// TestGamedayWritesReports runs a one-scenario game day from a YAML file
// and checks the files it writes.
func TestGamedayWritesReports(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(`scenarios:
  - name: quick
    title: Quick
    regions: [{name: a, latency: 20ms}, {name: b, latency: 30ms}]
    load: {concurrency: 2, total: 20, max_tokens: 5}
    setups:
      - {name: "gateway", mode: gateway, members: [{region: a}, {region: b}], attempts: 2}
      - {name: "client", mode: client, members: [{region: a}, {region: b}], attempts: 2}
`), 0o600)
	html, js, md := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	var out, errOut syncBuffer
	if code := run(t.Context(), []string{"gameday", "-f", scen, "-html", html, "-json", js, "-markdown", md, "-q"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "== Quick") || !strings.Contains(out.String(), "100%") {
		t.Fatalf("tables:\n%s", out.String())
	}
	for _, f := range []struct{ path, want string }{{html, "<svg"}, {js, `"scenarios"`}, {md, "| gateway | 100% |"}} {
		b, err := os.ReadFile(f.path)
		if err != nil || !strings.Contains(string(b), f.want) {
			t.Errorf("%s: %v, lacks %q", f.path, err, f.want)
		}
	}
}

// TestStatusCommand runs serve from a config file with an admin API, and
// drives it with switchover status: the table, a drain, a reload.
func TestStatusCommand(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `{"model":"gpt-4o-2024-08-06","choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "switchover.yaml")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
backends:
  - {name: weu, type: openai_compatible, url: %q, region: westeurope}
  - {name: sec, type: openai_compatible, url: %q, region: swedencentral}
pools:
  - name: chat-prod
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
`, up.URL, up.URL)
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	admin, _, _ := serveFile(t, cfgPath)
	status := func(args ...string) (int, string, string) {
		var o, e syncBuffer
		code := run(t.Context(), append([]string{"status", "-admin", admin, "-key", "admin-key-0123456789"}, args...), &o, &e)
		return code, o.String(), e.String()
	}
	code, o, e := status()
	if code != exitOK || !strings.Contains(o, "pool chat-prod  active: weu") || !regexp.MustCompile(`weu\s+openai_compatible\s+westeurope\s+1\s+1\s+closed`).MatchString(o) {
		t.Fatalf("status exit %d:\n%s\n%s", code, o, e)
	}
	// Regression: a breaker event's line did not name its backend.
	code, o, _ = status("open", "sec")
	if code != exitOK || !regexp.MustCompile(`breaker\s+sec\s+closed -> open: manual`).MatchString(o) {
		t.Fatalf("open exit %d:\n%s", code, o)
	}
	status("close", "sec")
	code, o, _ = status("drain", "weu")
	if code != exitOK || !strings.Contains(o, "closed, DRAINED") || !strings.Contains(o, "active: sec") || !strings.Contains(o, "admin:drain") {
		t.Fatalf("drain exit %d:\n%s", code, o)
	}
	os.WriteFile(cfgPath, []byte(strings.Replace(cfg, "priority: 2", "priority: 3", 1)), 0o600)
	code, o, _ = status("reload")
	if code != exitOK || !regexp.MustCompile(`sec\s+openai_compatible\s+swedencentral\s+3`).MatchString(o) {
		t.Fatalf("reload exit %d:\n%s", code, o)
	}
	if code, _, e := status("drain"); code != exitUsage || !strings.Contains(e, "drain needs 1 argument") {
		t.Fatalf("bad action: %d %s", code, e)
	}
	if code, _, e := run2(t, "status", "-admin", admin, "-key", "wrong"); code != exitError || !strings.Contains(e, "401") {
		t.Fatalf("wrong key: %d %s", code, e)
	}
}

// serveFile runs switchover serve on the configuration at path until the
// test ends, and returns its admin API's and API's addresses (host:port)
// and its log.
func serveFile(t *testing.T, path string) (admin, api string, log *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	log = &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-c", path}, &out, log) }()
	t.Cleanup(func() { cancel(); <-done })
	adminRE := regexp.MustCompile(`admin API listening.*addr=(127\.0\.0\.1:\d+)`)
	apiRE := regexp.MustCompile(`msg="switchover listening" addr=(127\.0\.0\.1:\d+)`)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second) // a guard against a hang, not a timing assertion
	defer wcancel()
	if err := log.WaitFor(wctx, func(s string) bool { return adminRE.MatchString(s) && apiRE.MatchString(s) }); err != nil {
		t.Fatalf("no addresses in: %s", log.String())
	}
	return adminRE.FindStringSubmatch(log.String())[1], apiRE.FindStringSubmatch(log.String())[1], log
}

func run2(t *testing.T, args ...string) (int, string, string) {
	var o, e syncBuffer
	code := run(t.Context(), args, &o, &e)
	return code, o.String(), e.String()
}

// TestStatusCommandShowsTheFleet: two replicas sharing a Redis; status
// through one lists both, and an action through it shows in the fleet's
// events with the replica it was taken on.
func TestStatusCommandShowsTheFleet(t *testing.T) {
	redisURL := redistest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `{"model":"gpt-4o-2024-08-06","choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	var admins []string
	for _, name := range []string{"gw-1", "gw-2"} {
		cfgPath := filepath.Join(dir, name+".yaml")
		os.WriteFile(cfgPath, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
state: {redis: {url: %q}, replica: %s}
backends:
  - {name: weu, type: openai_compatible, url: %q}
pools:
  - name: chat-prod
    members: [{backend: weu}]
`, redisURL, name, up.URL)), 0o600)
		ctx, cancel := context.WithCancel(t.Context())
		var out, errOut syncBuffer
		done := make(chan int, 1)
		go func() { done <- run(ctx, []string{"serve", "-c", cfgPath}, &out, &errOut) }()
		t.Cleanup(func() { cancel(); <-done })
		re := regexp.MustCompile(`admin API listening.*addr=(127\.0\.0\.1:\d+)`)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second) // a guard against a hang
		err := errOut.WaitFor(wctx, re.MatchString)
		wcancel()
		if err != nil {
			t.Fatalf("no admin address in: %s", errOut.String())
		}
		admins = append(admins, re.FindStringSubmatch(errOut.String())[1])
	}
	status := func(args ...string) (int, string) {
		var o, e syncBuffer
		code := run(t.Context(), append([]string{"status", "-admin", admins[0], "-key", "admin-key-0123456789"}, args...), &o, &e)
		return code, o.String() + e.String()
	}
	var o string
	poll.Until(t, 10*time.Second, func() bool {
		var code int
		code, o = status()
		return code == exitOK && strings.Contains(o, "fleet (this replica: gw-1; shared state store up)") && regexp.MustCompile(`(?m)^\s+gw-2\s`).MatchString(o)
	}, func() string { return "the fleet is not shown:\n" + o })
	code, o := status("drain", "weu")
	if code != exitOK || !regexp.MustCompile(`admin:drain\s+weu @gw-1`).MatchString(o) {
		t.Fatalf("drain through gw-1:\n%s", o)
	}
}

// TestStatusCommandNamesItsActor is the regression test of issue 23's
// item 12 for the CLI: an action through the admin API named nobody. Now
// switchover status sends -as (default $USER) and the event says
// "admin key (as NAME)".
func TestStatusCommandNamesItsActor(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "switchover.yaml")
	os.WriteFile(cfgPath, []byte(`listen: 127.0.0.1:0
server: {drain_delay: 0s}
admin: {listen: 127.0.0.1:0, key: admin-key-0123456789}
reload: {watch: false}
backends:
  - {name: weu, type: openai_compatible, url: "http://127.0.0.1:1", region: westeurope}
pools:
  - name: chat-prod
    members: [{backend: weu, priority: 1}]
`), 0o600)
	admin, _, _ := serveFile(t, cfgPath)
	t.Setenv("USER", "bob")
	if code, _, e := run2(t, "status", "-admin", admin, "-key", "admin-key-0123456789", "-as", "alice", "drain", "weu"); code != exitOK {
		t.Fatalf("drain: %d %s", code, e)
	}
	if code, _, e := run2(t, "status", "-admin", admin, "-key", "admin-key-0123456789", "restore", "weu"); code != exitOK {
		t.Fatalf("restore: %d %s", code, e)
	}
	_, o, _ := run2(t, "status", "-admin", admin, "-key", "admin-key-0123456789", "-json")
	for _, want := range []string{"drained backend weu (by admin key (as alice) from 127.0.0.1)", "restored backend weu (by admin key (as bob) from 127.0.0.1)"} {
		if !strings.Contains(o, want) {
			t.Errorf("no %q in the events:\n%s", want, o)
		}
	}
}
