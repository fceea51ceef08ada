package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/sim"
)

// Keys of the console tests' gateway.
const (
	consoleAdminKey  = "console-admin-key-0123456789"
	consoleViewerKey = "console-viewer-key-0123456789"
	consoleAPIKey    = "console-client-key-0123456789abcdef"
	consoleBackend   = "sk-console-backend-secret-0123"
)

// consolePools are the pools of the console tests' gateway and their
// members, in priority order.
var consolePools = map[string][]string{
	"chat-prod": {"uksouth", "swedencentral", "westeurope"},
	"batch":     {"westeurope", "swedencentral"},
}

// consoleEnv is the simulator's three regions behind a gateway with an
// admin listener, on the wall clock (a browser waits in real time), and
// steady traffic to every pool until the test ends.
type consoleEnv struct {
	sim   *sim.Sim
	g     *gateway.Gateway
	admin string // http://127.0.0.1:port
	api   string
	// shutdown stops the traffic and the gateway (as a SIGTERM would)
	// and returns Serve's error; the test's cleanup calls it too.
	shutdown func() error
}

func startConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	cfg := sim.Config{Seed: 1, Slice: 10 * time.Second}
	for _, r := range []string{"uksouth", "swedencentral", "westeurope"} {
		cfg.Deployments = append(cfg.Deployments, sim.Deployment{Name: r, Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 60000, TPM: 60000000}})
	}
	s, err := sim.Start(t.Context(), cfg, sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var y strings.Builder
	fmt.Fprintf(&y, "listen: 127.0.0.1:0\nlog: {level: error}\nserver: {drain_delay: 0s, shutdown_grace: 1m}\n")
	fmt.Fprintf(&y, "keys: [{name: app, key: %s}]\n", consoleAPIKey)
	fmt.Fprintf(&y, "admin:\n  listen: 127.0.0.1:0\n  key: %s\n  viewers: [{name: oncall-viewer, key: %s}]\n", consoleAdminKey, consoleViewerKey)
	fmt.Fprintf(&y, "store: {sqlite: %q}\n", filepath.Join(t.TempDir(), "switchover.db"))
	y.WriteString("backends:\n")
	for _, e := range s.Deployments() {
		// No health probes: the test counts every call a region gets.
		fmt.Fprintf(&y, "  - {name: %s, type: azure, url: %q, region: %s, api_key: %s, breaker: {failures: 3, window: 10s, trip: 60s}, probe: {disabled: true}}\n",
			e.Name, e.URL, e.Region, consoleBackend)
	}
	y.WriteString("pools:\n")
	for _, p := range []string{"chat-prod", "batch"} {
		fmt.Fprintf(&y, "  - name: %s\n    members:\n", p)
		for i, b := range consolePools[p] {
			fmt.Fprintf(&y, "      - {backend: %s, priority: %d, model: chat-prod}\n", b, min(i+1, 2))
		}
	}
	path := filepath.Join(t.TempDir(), "switchover.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(c, gateway.Options{Path: path, Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln, aln) }()
	e := &consoleEnv{sim: s, g: g, admin: "http://" + aln.Addr().String(), api: "http://" + ln.Addr().String()}
	tctx, stop := context.WithCancel(context.Background())
	traffic := make(chan struct{})
	go func() { defer close(traffic); e.traffic(tctx) }()
	var once sync.Once
	var serveErr error
	e.shutdown = func() error {
		once.Do(func() {
			stop()
			<-traffic
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := e.shutdown(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return e
}

// traffic sends a request to every pool each 50ms until ctx ends.
func (e *consoleEnv) traffic(ctx context.Context) {
	client := &http.Client{Timeout: 10 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for p := range consolePools {
			req, _ := http.NewRequestWithContext(ctx, "POST", e.api+"/v1/chat/completions",
				strings.NewReader(`{"model":"`+p+`","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Authorization", "Bearer "+consoleAPIKey)
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// browserTools finds Chromium, Node and the e2e directory's
// playwright-core; without them the test is skipped, or fails when
// SWITCHOVER_REQUIRE_BROWSER=1 (CI).
func browserTools(t *testing.T) (chromium, node, dir string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("SWITCHOVER_REQUIRE_BROWSER") == "1" {
			t.Fatalf("%s is missing and SWITCHOVER_REQUIRE_BROWSER=1", what)
		}
		t.Skipf("%s is missing: browser test skipped (set SWITCHOVER_REQUIRE_BROWSER=1 to fail instead)", what)
	}
	chromium = os.Getenv("SWITCHOVER_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium (" + chromium + "; apt-get install chromium)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	dir, _ = filepath.Abs(filepath.Join("..", "console", "e2e"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core (npm ci in console/e2e)")
	}
	return chromium, node, dir
}

// browserScript is a run of a script of console/e2e.
type browserScript struct {
	name string // as "pages.mjs"
	// env is added to the environment, besides the console env's
	// addresses and keys (CONSOLE_URL, API_URL, SIM_URL, ADMIN_KEY,
	// VIEWER_KEY), CHROMIUM and SHOT_DIR.
	env []string
	// shots are the screenshots the script writes to docs/img with
	// SWITCHOVER_UPDATE_SCREENSHOTS=1; without it the script takes none
	// (nothing asserts a picture, and they are slow on a busy machine).
	shots []string
	// out, if not nil, sees the script's output as it comes (one writer:
	// exec copies stdout and stderr on one goroutine).
	out func(io.Writer) io.Writer
}

// runBrowser runs script s in Node against e's gateway, logs its output,
// and fails the test if it fails or did not write its screenshots.
func (e *consoleEnv) runBrowser(t *testing.T, s browserScript) {
	t.Helper()
	chromium, node, dir := browserTools(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a guard against a hang (each step has its own deadline), not a timing assertion
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, s.name))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium, "CONSOLE_URL="+e.admin, "API_URL="+e.api,
		"SIM_URL="+strings.TrimSuffix(e.sim.ControlURL(), "/_sim"), "ADMIN_KEY="+consoleAdminKey, "VIEWER_KEY="+consoleViewerKey)
	shots := ""
	if os.Getenv("SWITCHOVER_UPDATE_SCREENSHOTS") == "1" {
		shots, _ = filepath.Abs(filepath.Join("..", "docs", "img"))
		cmd.Env = append(cmd.Env, "SHOT_DIR="+shots)
	}
	cmd.Env = append(cmd.Env, s.env...)
	var buf bytes.Buffer
	var w io.Writer = &buf
	if s.out != nil {
		w = s.out(w)
	}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	err := cmd.Run()
	t.Logf("browser (%s, %s):\n%s", s.name, time.Since(start).Round(time.Millisecond), buf.String())
	if err != nil {
		t.Fatalf("browser test %s failed: %v", s.name, err)
	}
	if !strings.Contains(buf.String(), "ok: every browser check passed") {
		t.Fatalf("browser test %s ended without passing its checks", s.name)
	}
	for _, f := range s.shots {
		if shots == "" {
			break
		}
		// Written by this run, not left from an earlier one.
		if st, err := os.Stat(filepath.Join(shots, f)); err != nil || st.Size() == 0 || st.ModTime().Before(start.Add(-time.Second)) {
			t.Errorf("screenshot %s not written: %v", f, err)
		}
	}
}

// TestConsoleInBrowser drives the console in Chromium during a simulated
// outage: the overview renders every pool and backend; a fault injected
// in the simulator opens the backend's breaker in the page without a
// reload; a drain from the page (click, confirm) stops the backend's
// traffic; an action without the CSRF token is refused; a visitor sees
// only the login, a viewer no action. Screenshots go to a temporary
// directory, or to docs/img with SWITCHOVER_UPDATE_SCREENSHOTS=1.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel() // a browser mostly waits: the five run two at a time, after the package's other tests
	browserTools(t)
	e := startConsoleEnv(t)
	// A key of the store with a team and a budget, and a few requests
	// with it, for the keys and usage page.
	k, secret, err := ledger.NewKey(t.Context(), e.g.Ledger(), ledger.Key{Name: "research-bot", Team: "research", RPM: 600, Budget: 50, BudgetPeriod: "month"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		req, _ := http.NewRequest("POST", e.api+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a request with the store key: %d", resp.StatusCode)
		}
	}
	pools, _ := json.Marshal(consolePools)
	// The script's last step asks for the gateway to stop (its admin
	// listener goes down) and checks that the page says it is stale.
	watch := func(w io.Writer) io.Writer {
		return &lineWatch{w: w, line: "SHUTDOWN_GATEWAY", do: func() { go e.shutdown() }}
	}
	e.runBrowser(t, browserScript{name: "console.mjs", out: watch,
		env: []string{"POOLS=" + string(pools), "FAULT_BACKEND=uksouth", "DRAIN_BACKEND=swedencentral", "FAULT_POOL=chat-prod",
			"STORE_KEY_ID=" + k.ID, "STORE_KEY_SECRET=" + secret},
		shots: []string{"console-overview.png", "console-events.png", "console-keys.png", "console-overview-390.png", "console-stale.png"}})
	// What the page did is what the gateway recorded.
	var drained, restored bool
	for _, ev := range e.g.Status().Events {
		drained = drained || ev.Kind == "admin:drain" && ev.Detail == "drained backend swedencentral (by admin)"
		restored = restored || ev.Kind == "admin:restore" && ev.Detail == "restored backend swedencentral (by admin)"
	}
	if !drained || !restored {
		t.Errorf("events lack the console's drain and restore by admin: %+v", e.g.Status().Events)
	}
	if b := e.g.Backend("swedencentral"); b == nil || b.Drained() {
		t.Error("swedencentral is still drained after the page restored it")
	}
}

// lineWatch writes to w and calls do once, when a line it is written
// starts with line. Safe for one writer (exec's copy of a pipe).
type lineWatch struct {
	w    io.Writer
	line string
	do   func()
	buf  []byte
	once sync.Once
}

func (l *lineWatch) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if strings.HasPrefix(string(l.buf[:i]), l.line) {
			l.once.Do(l.do)
		}
		l.buf = l.buf[i+1:]
	}
	return l.w.Write(p)
}

// TestConsoleRequestsInBrowser drives the request log in Chromium
// (console/e2e/requests.mjs): a fault opens a breaker, its event links
// to the requests that tried the backend, a failed-over request opens as
// a timeline of its attempts, the filter form narrows the list, phones
// get no sideways scroll, and a viewer sees no end users.
func TestConsoleRequestsInBrowser(t *testing.T) {
	t.Parallel() // a browser mostly waits: the five run two at a time, after the package's other tests
	browserTools(t)
	e := startConsoleEnv(t)
	e.runBrowser(t, browserScript{name: "requests.mjs", env: []string{"FAULT_BACKEND=uksouth"},
		shots: []string{"console-requests.png", "console-request.png", "console-request-phone.png"}})
}
