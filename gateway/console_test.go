package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// consoleClient is a browser-like client of the console: cookies kept,
// redirects not followed.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newConsoleClient(t *testing.T, base string) *consoleClient {
	jar, _ := cookiejar.New(nil)
	return &consoleClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *consoleClient) do(method, path string, form url.Values, host string) (int, string, http.Header) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if host != "" {
		req.Host = host
	}
	resp, err := c.c.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (c *consoleClient) login(key string) {
	c.t.Helper()
	if st, _, _ := c.do("POST", "/console/login", url.Values{"key": {key}}, ""); st != http.StatusSeeOther {
		c.t.Fatalf("login: %d", st)
	}
	_, page, _ := c.do("GET", "/console/", nil, "")
	m := regexp.MustCompile(`<meta name="csrf" content="([^"]+)">`).FindStringSubmatch(page)
	if m == nil {
		c.t.Fatalf("no CSRF token:\n%s", page)
	}
	c.csrf = m[1]
}

func (c *consoleClient) act(fields ...string) int {
	c.t.Helper()
	f := url.Values{"csrf": {c.csrf}}
	for i := 0; i+1 < len(fields); i += 2 {
		f.Set(fields[i], fields[i+1])
	}
	st, _, _ := c.do("POST", "/console/actions", f, "")
	return st
}

// TestConsoleOnTheAdminListener checks the console as the gateway mounts
// it: the admin API's Host check still applies, the API itself still
// needs its key, and the console's actions reach the gateway with who took
// them.
func TestConsoleOnTheAdminListener(t *testing.T) {
	e := startConsoleEnv(t)
	c := newConsoleClient(t, e.admin)
	if st, _, _ := c.do("GET", "/console/login", nil, "evil.example"); st != http.StatusForbidden {
		t.Fatalf("rebound host: %d, want 403", st)
	}
	if st, _, h := c.do("GET", "/", nil, ""); st != http.StatusFound || h.Get("Location") != "/console/" {
		t.Fatalf("/: %d %q", st, h.Get("Location"))
	}
	c.login(consoleAdminKey)
	// A session cookie is no admin API key.
	if st, _, _ := c.do("GET", "/admin/status", nil, ""); st != http.StatusUnauthorized {
		t.Fatalf("/admin/status with a console session: %d, want 401", st)
	}
	checkConsoleActions(t, e, c)
	checkConsoleStatusFigures(t, e)
	checkConsoleConfigPage(t, e, c) // after the actions: it shows their reload
	checkConsolePagesHideSecrets(t, c)
	if _, page, _ := c.do("GET", "/console/fleet", nil, ""); !strings.Contains(page, "shares no state with others") {
		t.Error("fleet page without a fleet")
	}
	checkConsoleKeysPage(t, e, c)
}

// checkConsoleActions: each of the console's actions, in turn, is done
// and leaves an event that says who took it.
func checkConsoleActions(t *testing.T, e *consoleEnv, c *consoleClient) {
	steps := []struct {
		fields []string
		check  func() bool
		detail string
	}{
		{[]string{"action", "drain", "backend", "westeurope"}, func() bool { return e.g.Backend("westeurope").Drained() },
			"drained backend westeurope (by admin)"},
		{[]string{"action", "restore", "backend", "westeurope"}, func() bool { return !e.g.Backend("westeurope").Drained() },
			"restored backend westeurope (by admin)"},
		{[]string{"action", "breaker_open", "backend", "uksouth", "for", "5m"}, func() bool {
			return e.g.Backend("uksouth").Breaker.Snapshot().State.String() == "open"
		}, "forced the breaker of uksouth open (by admin)"},
		{[]string{"action", "breaker_close", "backend", "uksouth"}, func() bool {
			return e.g.Backend("uksouth").Breaker.Snapshot().State.String() == "closed"
		}, "forced the breaker of uksouth closed (by admin)"},
		{[]string{"action", "set_member", "pool", "chat-prod", "backend", "westeurope", "priority", "1", "weight", "3"}, func() bool {
			for _, p := range e.g.Status().Pools {
				for _, m := range p.Members {
					if p.Name == "chat-prod" && m.Backend == "westeurope" {
						return m.Overridden && m.Priority == 1 && m.Weight == 3
					}
				}
			}
			return false
		}, "set westeurope in pool chat-prod: priority 2 → 1, weight 1 → 3 (by admin)"},
		{[]string{"action", "reset_member", "pool", "chat-prod", "backend", "westeurope"}, func() bool { return true },
			"reset westeurope in pool chat-prod to its configured priority and weight (by admin)"},
		{[]string{"action", "reload"}, func() bool { return true }, "asked for a configuration reload (by admin)"},
	}
	for _, s := range steps {
		if st := c.act(s.fields...); st != http.StatusSeeOther {
			t.Fatalf("%v: %d", s.fields, st)
		}
		if !s.check() {
			t.Errorf("%v: not done", s.fields)
		}
		found := false
		for _, ev := range e.g.Status().Events {
			found = found || ev.Detail == s.detail
		}
		if !found {
			t.Errorf("%v: no event %q", s.fields, s.detail)
		}
	}
}

// checkConsoleStatusFigures: the status has the figures the overview
// shows: attempts counted, and a first-byte histogram wherever there are
// attempts.
func checkConsoleStatusFigures(t *testing.T, e *consoleEnv) {
	poll.Until(t, 10*time.Second, func() bool {
		var attempts uint64
		for _, p := range e.g.Status().Pools {
			for _, m := range p.Members {
				attempts += m.Attempts
				if len(m.FirstByte) == 0 && m.Attempts > 0 {
					t.Fatalf("%s has attempts and no first-byte histogram", m.Backend)
				}
			}
		}
		return attempts > 0
	}, func() string { return "no attempts counted in the status" })
}

// checkConsoleConfigPage: the config page has the secrets redacted, and
// says what a reload would change (and what of it needs a restart) once
// the file on disk is edited.
func checkConsoleConfigPage(t *testing.T, e *consoleEnv, c *consoleClient) {
	path := e.g.Status().Path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "shutdown_grace: 1m", "shutdown_grace: 3s", 1)
	changed = strings.Replace(changed, "trip: 60s", "trip: 90s", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page, _ := c.do("GET", "/console/config", nil, "")
	for _, want := range []string{"Waiting for a restart: server.shutdown_grace", "trip: 1m30s", "shutdown_grace: 3s", "[redacted]", "configuration reloaded"} {
		if !strings.Contains(page, want) {
			t.Errorf("config page lacks %q", want)
		}
	}
}

// TestConsoleConfigPageShowsWhatRunsNotTheFile: after a reload of a file
// that changes settings a reload does not apply (the flap window, a
// webhook added), the config page shows the values in force, names what
// waits for a restart, and does not say a reload would change nothing
// (the bug: it showed the file's values as running and "A reload would
// change nothing: the file is the configuration in force").
func TestConsoleConfigPageShowsWhatRunsNotTheFile(t *testing.T) {
	e := startConsoleEnv(t)
	c := newConsoleClient(t, e.admin)
	c.login(consoleAdminKey)
	path := e.g.Status().Path
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const hook = "http://127.0.0.1:9/hook-token-0123456789"
	changed := string(data) + "notifications:\n  flap_window: 7m\n  webhooks: [{url: \"" + hook + "\"}]\n"
	changed = strings.Replace(changed, "trip: 60s", "trip: 90s", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := c.act("action", "reload"); st != http.StatusSeeOther {
		t.Fatalf("reload: %d", st)
	}
	if n := e.g.Config().Notifications; n.FlapWindow.D() == 7*time.Minute || len(n.Webhooks) != 0 {
		t.Fatalf("the configuration in force has the file's notifications: %+v", n)
	}
	if got := e.g.Config().Backends[0].Breaker.Trip.D(); got != 90*time.Second {
		t.Fatalf("the breaker's trip in force is %v, want the file's 1m30s", got)
	}
	_, page, _ := c.do("GET", "/console/config", nil, "")
	running := regexp.MustCompile(`(?s)<pre class="yaml" id="running">(.*?)</pre>`).FindStringSubmatch(page)
	if running == nil {
		t.Fatalf("no running configuration:\n%s", page)
	}
	if strings.Contains(running[1], "flap_window: 7m") || strings.Contains(running[1], "webhooks") || !strings.Contains(running[1], "trip: 1m30s") {
		t.Errorf("the running configuration is the file's, not what runs:\n%s", running[1])
	}
	for _, want := range []string{"Waiting for a restart: notifications", `<span class="add">&#43;     flap_window: 7m0s</span>`, "waiting for a restart: notifications"} {
		if !strings.Contains(page, want) {
			t.Errorf("config page lacks %q", want)
		}
	}
	if strings.Contains(page, "A reload would change nothing") || strings.Contains(page, hook) {
		t.Errorf("config page says a reload would change nothing, or shows the webhook's URL:\n%s", page)
	}
}

// checkConsolePagesHideSecrets: no console page shows a key of the
// config or a backend's key.
func checkConsolePagesHideSecrets(t *testing.T, c *consoleClient) {
	for _, secret := range []string{consoleAdminKey, consoleViewerKey, consoleAPIKey, consoleBackend} {
		for _, p := range []string{"/console/", "/console/config", "/console/events", "/console/fleet", "/console/keys", "/console/api/view"} {
			if _, body, _ := c.do("GET", p, nil, ""); strings.Contains(body, secret) {
				t.Errorf("%s shows a secret", p)
			}
		}
	}
}

// checkConsoleKeysPage: the keys page lists the store's keys and the
// month's spend, never a secret.
func checkConsoleKeysPage(t *testing.T, e *consoleEnv, c *consoleClient) {
	k, secret, err := ledger.NewKey(t.Context(), e.g.Ledger(), ledger.Key{Name: "research-bot", Team: "research", RPM: 600}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, e.api+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`))
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
	var keysPage string
	poll.Until(t, 10*time.Second, func() bool {
		_, keysPage, _ = c.do("GET", "/console/keys", nil, "")
		if strings.Contains(keysPage, secret) || strings.Contains(keysPage, consoleAPIKey) {
			t.Fatal("the keys page shows a secret")
		}
		return strings.Contains(keysPage, k.ID) && strings.Contains(keysPage, "research-bot") && strings.Contains(keysPage, "research") && !strings.Contains(keysPage, "No store configured")
	}, func() string { return fmt.Sprintf("the keys page lacks the key %s:\n%s", k.ID, keysPage) })
}

// TestConsoleStreamsEndAtShutdown checks that an open console stream does
// not hold a shutdown for its grace period (a minute here): the console
// ends its streams when the admin server shuts down.
func TestConsoleStreamsEndAtShutdown(t *testing.T) {
	e := startConsoleEnv(t)
	c := newConsoleClient(t, e.admin)
	c.login(consoleViewerKey)
	c.c.Timeout = 0
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a guard against a hang, not a timing assertion
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.admin+"/console/stream", nil)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream began with %q, %v", line, err)
	}
	served := make(chan error, 1)
	go func() { served <- e.shutdown() }()
	io.Copy(io.Discard, br) // ends when the stream does
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the shutdown waited for the console's stream")
	}
	if ctx.Err() != nil {
		t.Fatal("the stream outlived the shutdown")
	}
}
