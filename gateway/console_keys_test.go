package gateway_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

// TestConsoleManagesKeysThroughTheAdminAPI checks the console's key
// forms on a real gateway with a SQLite store: a key created in the page
// works at once, its secret is shown once and is in no log line, event or
// later page; the change is recorded with the console's user; a revoked
// key is refused at once; a viewer's form changes nothing.
func TestConsoleManagesKeysThroughTheAdminAPI(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "uksouth", Flavour: sim.Azure, Deployment: "chat-prod", Quota: sim.Quota{RPM: 60000, TPM: 60000000}}}}, sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var y strings.Builder
	fmt.Fprintf(&y, "listen: 127.0.0.1:0\nserver: {drain_delay: 0s}\n")
	fmt.Fprintf(&y, "admin:\n  listen: 127.0.0.1:0\n  key: %s\n  viewers: [{name: oncall-viewer, key: %s}]\n", consoleAdminKey, consoleViewerKey)
	fmt.Fprintf(&y, "store: {sqlite: %q}\n", filepath.Join(t.TempDir(), "switchover.db"))
	d := s.Deployments()[0]
	fmt.Fprintf(&y, "backends:\n  - {name: uksouth, type: azure, url: %q, region: %s, api_key: %s, probe: {disabled: true}}\n", d.URL, d.Region, consoleBackend)
	y.WriteString("pools:\n  - {name: chat-prod, members: [{backend: uksouth, model: chat-prod}]}\n")
	path := filepath.Join(t.TempDir(), "switchover.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	g, err := gateway.New(cfg, gateway.Options{Path: path, Logger: gateway.NewLogger(&logs, "json", "debug")})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	aln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln, aln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	api := "http://" + ln.Addr().String()
	call := func(secret string) int {
		req, _ := http.NewRequest("POST", api+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	c := newConsoleClient(t, "http://"+aln.Addr().String())
	c.login(consoleAdminKey)
	form := func(path string, f url.Values, want string) {
		t.Helper()
		f.Set("csrf", c.csrf)
		if st, body, h := c.do("POST", path, f, ""); st != http.StatusSeeOther || h.Get("Location") != want {
			t.Fatalf("POST %s: %d %q, want 303 to %s\n%s", path, st, h.Get("Location"), want, body)
		}
	}
	form("/console/teams/put", url.Values{"name": {"research"}, "budget": {"100/month"}}, "/console/keys")
	form("/console/keys/create", url.Values{"name": {"page-made"}, "team": {"research"}, "pools": {"chat-prod"}, "rpm": {"600"}}, "/console/keys/secret")
	_, page, _ := c.do("GET", "/console/keys/secret", nil, "")
	m := regexp.MustCompile(`id="secret">([^<]+)<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no secret on the result page:\n%s", page)
	}
	secret := html.UnescapeString(m[1])
	if st := call(secret); st != http.StatusOK {
		t.Fatalf("a request with the key made in the page: %d", st)
	}
	ks, err := g.Ledger().Keys(t.Context())
	if err != nil || len(ks) != 1 {
		t.Fatalf("keys: %v %v", ks, err)
	}
	k := ks[0]

	// A viewer's revocation is refused and changes nothing.
	v := newConsoleClient(t, "http://"+aln.Addr().String())
	v.login(consoleViewerKey)
	if st, _, _ := v.do("POST", "/console/keys/revoke", url.Values{"csrf": {v.csrf}, "id": {k.ID}}, ""); st != http.StatusForbidden {
		t.Fatalf("a viewer's revocation: %d, want 403", st)
	}
	if st := call(secret); st != http.StatusOK {
		t.Fatalf("after a viewer's refused revocation: %d", st)
	}

	form("/console/keys/revoke", url.Values{"id": {k.ID}}, "/console/keys")
	if st := call(secret); st != http.StatusUnauthorized {
		t.Fatalf("a request with the key revoked in the page: %d, want 401", st)
	}

	var events []string
	for _, ev := range g.Status().Events {
		events = append(events, ev.Kind+": "+ev.Detail)
	}
	all := strings.Join(events, "\n")
	for _, want := range []string{
		"admin:team:put: set team research (by admin in the console from 127.0.0.1)",
		"admin:key:create: created key " + k.ID + " (page-made) (by admin in the console from 127.0.0.1)",
		"admin:key:revoke: revoked key " + k.ID + " (page-made) (by admin in the console from 127.0.0.1)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("events lack %q:\n%s", want, all)
		}
	}
	rest := secret[strings.Index(secret, k.Prefix)+len(k.Prefix):]
	for _, p := range []string{"/console/keys", "/console/events", "/console/keys/secret", "/console/api/view"} {
		if _, body, _ := c.do("GET", p, nil, ""); strings.Contains(body, rest) {
			t.Errorf("%s shows the secret", p)
		}
	}
	if strings.Contains(all, rest) {
		t.Error("an event holds the secret")
	}
	if !strings.Contains(logs.String(), `"action":"key:create"`) {
		t.Errorf("no log line of the creation:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), rest) {
		t.Errorf("the gateway's log holds the secret:\n%s", logs.String())
	}
}
