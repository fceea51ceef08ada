package gateway_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/notify"
)

const adminKey = "admin-key-0123456789abcdef"

// captureSink records notifications; block, if set, holds every Send.
type captureSink struct {
	mu    sync.Mutex
	got   []notify.Notification
	block chan struct{}
	// changed is closed by the next notification recorded; nil while
	// nobody waits.
	changed chan struct{}
}

func (c *captureSink) Name() string { return "capture" }

func (c *captureSink) Send(ctx context.Context, n notify.Notification) error {
	if c.block != nil {
		select {
		case <-c.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	c.got = append(c.got, n)
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
	c.mu.Unlock()
	return nil
}

func (c *captureSink) kinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kindsLocked()
}

// kindsLocked requires c.mu held.
func (c *captureSink) kindsLocked() []string {
	var k []string
	for _, n := range c.got {
		k = append(k, string(n.Kind))
	}
	return k
}

// waitKinds waits until ok holds of the kinds delivered so far, checking
// again after every delivery (the queue delivers in the background).
func (c *captureSink) waitKinds(t *testing.T, what string, ok func(kinds []string) bool) {
	t.Helper()
	guard := time.After(10 * time.Second) // a guard against a hang, not a timing assertion
	for {
		c.mu.Lock()
		if ok(c.kindsLocked()) {
			c.mu.Unlock()
			return
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-guard:
			t.Fatalf("timed out waiting for %s; delivered %v", what, c.kinds())
		}
	}
}

// receive waits for the next value on ch, sent by a test's webhook
// receiver as a delivery arrives.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func withAdmin(y string) string {
	return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nkeys:", 1)
}

func (h *harness) adminDo(method, path, body string, key string) (int, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.admin+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestAdminAPI(t *testing.T) {
	sink := &captureSink{}
	h := startWith(t, gateway.Options{Sinks: []notify.Sink{sink}}, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAdmin)
	backend := func() string {
		resp, _ := h.post("/v1/chat/completions", chat)
		return resp.Header.Get("X-Switchover-Backend")
	}
	if b := backend(); b != "aoai-westeurope" {
		t.Fatalf("served by %s", b)
	}

	// The admin key is required, and compared properly.
	for _, k := range []string{"", "wrong", adminKey[:10]} {
		if code, _ := h.adminDo("GET", "/admin/status", "", k); code != 401 {
			t.Fatalf("key %q: status %d", k, code)
		}
	}
	code, st := h.adminDo("GET", "/admin/status", "", adminKey)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	pools := st["pools"].([]any)
	p0 := pools[0].(map[string]any)
	if p0["name"] != "chat-prod" || fmt.Sprint(p0["active"]) != "[aoai-westeurope]" || len(p0["members"].([]any)) != 2 {
		t.Fatalf("status %v", p0)
	}

	// Drain: no new traffic to it, at once; restore brings it back.
	if code, _ := h.adminDo("POST", "/admin/backends/aoai-westeurope/drain", "", adminKey); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	calls := h.weu.Calls()
	for i := 0; i < 5; i++ {
		if b := backend(); b != "aoai-swedencentral" {
			t.Fatalf("drained backend still served: %s", b)
		}
	}
	if h.weu.Calls() != calls {
		t.Fatal("drained backend was called")
	}
	h.adminDo("POST", "/admin/backends/aoai-westeurope/restore", "", adminKey)
	if b := backend(); b != "aoai-westeurope" {
		t.Fatalf("after restore served by %s", b)
	}

	// Force the breaker open, then closed.
	if code, _ := h.adminDo("POST", "/admin/backends/aoai-westeurope/breaker", `{"state":"open","for":"10m"}`, adminKey); code != 200 {
		t.Fatalf("force open: %d", code)
	}
	if b := backend(); b != "aoai-swedencentral" {
		t.Fatalf("forced-open backend served: %s", b)
	}
	if s := h.gw.Backend("aoai-westeurope").Breaker.Snapshot(); s.State != breaker.Open || s.Until.Sub(h.clock.Now()) != 10*time.Minute {
		t.Fatalf("breaker %+v", s)
	}
	h.adminDo("POST", "/admin/backends/aoai-westeurope/breaker", `{"state":"closed"}`, adminKey)
	if b := backend(); b != "aoai-westeurope" {
		t.Fatalf("after forced close served by %s", b)
	}

	// Reprioritise the pool while the incident lasts; reset.
	if code, _ := h.adminDo("POST", "/admin/pools/chat-prod/members/aoai-westeurope", `{"priority":3}`, adminKey); code != 200 {
		t.Fatalf("set member: %d", code)
	}
	if b := backend(); b != "aoai-swedencentral" {
		t.Fatalf("after demoting westeurope, served by %s", b)
	}
	h.adminDo("POST", "/admin/pools/chat-prod/members/aoai-westeurope/reset", "", adminKey)
	if b := backend(); b != "aoai-westeurope" {
		t.Fatalf("after reset, served by %s", b)
	}

	// Bad requests.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/admin/backends/nope/drain", "", 404},
		{"POST", "/admin/pools/chat-prod/members/nope", `{"priority":1}`, 404},
		{"POST", "/admin/pools/chat-prod/members/aoai-westeurope", `{}`, 400},
		{"POST", "/admin/backends/aoai-westeurope/breaker", `{"state":"ajar"}`, 400},
		{"POST", "/admin/backends/aoai-westeurope/breaker", `{"state":"open","for":"soon"}`, 400},
	} {
		if code, _ := h.adminDo(c.method, c.path, c.body, adminKey); code != c.want {
			t.Errorf("%s %s %s: %d, want %d", c.method, c.path, c.body, code, c.want)
		}
	}

	// Every change was logged and notified.
	for _, action := range []string{"drain", "restore", "breaker_open", "breaker_close", "set_member", "reset_member"} {
		if !strings.Contains(h.logs.String(), `"action":"`+action+`"`) {
			t.Errorf("no log line for %s", action)
		}
		if v := metric(t, h.gw, "switchover_admin_actions_total", "action", action); v != 1 {
			t.Errorf("%s counted %v times", action, v)
		}
	}
	sink.waitKinds(t, "admin notifications", func(k []string) bool { return strings.Count(strings.Join(k, " "), "admin") == 6 })
}

// TestMemberChangeRecordedFromTo: an operator's change of a member's
// weight is recorded as "weight 100 → 3", what was in force and what is
// (the bug: "priority 0, weight 3", the request's zero for "keep").
func TestMemberChangeRecordedFromTo(t *testing.T) {
	h := startWith(t, gateway.Options{}, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAdmin)
	for _, c := range []struct{ body, want string }{
		{`{"weight":3}`, "set aoai-westeurope in pool chat-prod: weight 100 → 3"},
		{`{"priority":2}`, "set aoai-westeurope in pool chat-prod: priority 1 → 2"},
		{`{"priority":1,"weight":5}`, "set aoai-westeurope in pool chat-prod: priority 2 → 1, weight 3 → 5"},
	} {
		if code, _ := h.adminDo("POST", "/admin/pools/chat-prod/members/aoai-westeurope", c.body, adminKey); code != 200 {
			t.Fatalf("%s: %d", c.body, code)
		}
		var got string
		for _, ev := range h.gw.Status().Events {
			if ev.Kind == "admin:set_member" {
				got = ev.Detail
			}
		}
		if !strings.HasPrefix(got, c.want+" (by ") {
			t.Errorf("%s: recorded %q, want %q", c.body, got, c.want)
		}
	}
}

// TestStatusOfAPoolWithNoUsableMember: a pool whose every member is
// drained has an empty active set since the drain (the bug: no instant,
// so the console showed "Active: none since" and nothing), and a set
// unchanged since the start says so (active_since_start) instead of
// passing the start off as when it became active.
func TestStatusOfAPoolWithNoUsableMember(t *testing.T) {
	h := startWith(t, gateway.Options{}, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAdmin)
	pool := func() gateway.PoolStatus {
		for _, p := range h.gw.Status().Pools {
			if p.Name == "chat-prod" {
				return p
			}
		}
		t.Fatal("no pool chat-prod")
		panic("unreachable")
	}
	if p := pool(); len(p.Active) != 1 || p.ActiveSince.IsZero() || !p.ActiveSinceStart {
		t.Fatalf("at the start: %+v", p)
	}
	for _, b := range []string{"aoai-westeurope", "aoai-swedencentral"} {
		if code, _ := h.adminDo("POST", "/admin/backends/"+b+"/drain", "", adminKey); code != 200 {
			t.Fatalf("drain %s: %d", b, code)
		}
	}
	p := pool()
	if p.Active == nil || len(p.Active) != 0 || !p.ActiveSince.Equal(h.clock.Now()) || p.ActiveSinceStart {
		t.Fatalf("with every member drained: active %v since %v (start %v), want none since %v", p.Active, p.ActiveSince, p.ActiveSinceStart, h.clock.Now())
	}
	// The admin listener's favicon needs no key (the bug: 401 on every
	// console page).
	resp, err := http.Get(h.admin + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("/favicon.ico without a key: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestNotificationsOnceAndFailback: when the primary's breaker opens, one
// failover notification is sent however many requests follow; one
// failback when it comes back. Delivered to a webhook with a signature.
// The trip ends on time without a request: an idle pool once showed the
// primary "open (0s left)" for minutes. Half-open is not back yet: the
// failback is told when the probe passes. (Recovery probes are off here,
// so that the request is that probe; TestIdlePoolFailsBackThroughARecoveryProbe
// covers them.)
func TestNotificationsOnceAndFailback(t *testing.T) {
	type got struct {
		body []byte
		sig  string
		ts   string
	}
	var mu sync.Mutex
	var received []got
	arrived := make(chan struct{}, 100) // one per delivery
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{b, r.Header.Get("X-Switchover-Signature"), r.Header.Get("X-Switchover-Timestamp")})
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer recv.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(received) }
	withHook := func(y string) string {
		// A flap window shorter than the trip, so that the failback is not
		// a flap.
		return strings.Replace(y, "keys:", fmt.Sprintf("notifications:\n  flap_window: 30s\n  webhooks: [{url: %q, secret: hook-secret}]\nkeys:", recv.URL), 1)
	}
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, noRecoveryProbes, withHook)
	for i := 0; i < 20; i++ {
		h.post("/v1/chat/completions", chat) // 2 failures open the breaker; then 18 go straight to sec
	}
	receive(t, "the failover notification", arrived)
	h.weu.SetScript(answer("weu"))
	h.clock.Advance(time.Minute) // the trip ends, with no request
	if m := h.gw.Status().Pools[0].Members[0]; m.Breaker.State != "half_open" || !m.Usable || m.Breaker.LeftMS != 0 {
		t.Fatalf("an idle primary after its trip: %+v, want half-open and usable", m)
	}
	if v := metric(t, h.gw, "switchover_breaker_state", "backend", "aoai-westeurope", "state", "half_open"); v != 1 {
		t.Fatalf("switchover_breaker_state{state=half_open} = %v after the trip", v)
	}
	h.post("/v1/chat/completions", chat) // the probe closes the breaker: the primary is back
	if s := h.gw.Backend("aoai-westeurope").Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("the probe left the breaker %v", s.State)
	}
	receive(t, "the failback notification", arrived)
	// Close drains the notification queue: a third notification, had one
	// been sent, has been delivered by the time it returns.
	if err := h.gw.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d notifications for one failover and one failback", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, want := range []string{"failover", "failback"} {
		var n struct {
			Kind, Pool, Reason, Text string
			From, To                 []string
		}
		if err := json.Unmarshal(received[i].body, &n); err != nil {
			t.Fatal(err)
		}
		if n.Kind != want || n.Pool != "chat-prod" {
			t.Fatalf("notification %d: %+v", i, n)
		}
		mac := hmac.New(sha256.New, []byte("hook-secret"))
		mac.Write([]byte(received[i].ts + "." + string(received[i].body)))
		if received[i].sig != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			t.Fatalf("signature %q does not verify", received[i].sig)
		}
		if want == "failover" && (fmt.Sprint(n.From) != "[aoai-westeurope]" || fmt.Sprint(n.To) != "[aoai-swedencentral]" ||
			!strings.Contains(n.Reason, "5xx") || !strings.Contains(n.Text, "Check the quota and the model version of aoai-swedencentral")) {
			t.Fatalf("failover notification %+v", n)
		}
	}
}

// TestSlowSinkNeverDelaysRequests: notifications queue; a sink that hangs
// holds up nothing but itself.
func TestSlowSinkNeverDelaysRequests(t *testing.T) {
	sink := &captureSink{block: make(chan struct{})}
	h := startWith(t, gateway.Options{Sinks: []notify.Sink{sink}}, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, "", withAdmin)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10; i++ {
			h.post("/v1/chat/completions", chat) // opens the breaker: a notification
			h.adminDo("POST", "/admin/backends/aoai-swedencentral/drain", "", adminKey)
			h.adminDo("POST", "/admin/backends/aoai-swedencentral/restore", "", adminKey)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("requests and admin actions held up by a hanging notification sink")
	}
	close(sink.block)
	sink.waitKinds(t, "delivery after the sink recovered", func(k []string) bool { return len(k) > 10 })
}

// reloadGate holds upstream requests until the next reload: each reload
// happens with requests in flight, and requests flow between reloads.
// It is safe for concurrent use.
type reloadGate struct {
	mu     sync.Mutex
	open   chan struct{} // closed after the next reload
	held   int           // requests arrived since the last reload
	enough chan struct{} // closed when held reaches want
	want   int
}

func newReloadGate(want int) *reloadGate {
	return &reloadGate{open: make(chan struct{}), enough: make(chan struct{}), want: want}
}

// hold is an upstream step: it waits for the next reload, then answers.
func (g *reloadGate) hold(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	open := g.open
	g.held++
	if g.held == g.want {
		close(g.enough)
	}
	g.mu.Unlock()
	select {
	case <-open:
	case <-r.Context().Done():
		return
	}
	answer("x")(w, r)
}

// waitHeld waits until want requests are held.
func (g *reloadGate) waitHeld(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	enough := g.enough
	g.mu.Unlock()
	receive(t, "requests held at the upstream", enough)
}

// release lets the held requests go; last leaves the gate open for good.
func (g *reloadGate) release(last bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
	if last {
		return // open stays closed: later requests pass
	}
	g.open, g.enough, g.held = make(chan struct{}), make(chan struct{}), 0
}

// TestReloadUnderLoadLosesNoRequest reloads the configuration many times
// while requests flow: every request is answered. Each reload happens
// with at least 3 requests held in flight at the upstreams.
func TestReloadUnderLoadLosesNoRequest(t *testing.T) {
	gate := newReloadGate(3)
	slow := gate.hold
	h := start(t, []upstreamtest.Step{slow}, []upstreamtest.Step{slow}, "")
	orig, _ := os.ReadFile(h.path)
	var failed, sent atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","stream":true}`))
				req.Header.Set("Authorization", "Bearer "+appKey)
				resp, err := testClient.Do(req)
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		// Alternate between two configurations: weights, timeouts and a
		// member's priority change; the backends' identities do not.
		y := string(orig)
		if i%2 == 0 {
			y = strings.Replace(y, "priority: 2, weight: 100", "priority: 1, weight: 7", 1)
			y = strings.Replace(y, "region: swedencentral", "region: swedencentral\n    timeout: 9m", 1)
		}
		os.WriteFile(h.path, []byte(y), 0o600)
		gate.waitHeld(t)
		if err := h.gw.ReloadFile(); err != nil {
			t.Fatal(err)
		}
		gate.release(i == 19)
	}
	close(stop)
	wg.Wait()
	// At least 3 requests held across each of the 20 reloads.
	if f := failed.Load(); f != 0 || sent.Load() < 60 {
		t.Fatalf("%d of %d requests failed across 20 reloads", f, sent.Load())
	}
	if v := metric(t, h.gw, "switchover_config_reloads_total", "result", "ok"); v != 20 {
		t.Fatalf("reloads counted %v", v)
	}
}

func TestReloadKeepsBreakerStateAndRejectsInvalid(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, noRecoveryProbes)
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat) // 2 failures: open
	weu := h.gw.Backend("aoai-westeurope")
	before := weu.Breaker.Snapshot()
	if before.State != breaker.Open {
		t.Fatal("breaker not open")
	}
	orig, _ := os.ReadFile(h.path)

	// The same backends: the very same objects stay.
	if err := h.gw.ReloadFile(); err != nil {
		t.Fatal(err)
	}
	if h.gw.Backend("aoai-westeurope") != weu {
		t.Fatal("an unchanged backend was rebuilt")
	}
	// A timeout changes, not the identity: a new backend, same breaker state.
	os.WriteFile(h.path, []byte(strings.Replace(string(orig), "region: westeurope", "region: westeurope\n    timeout: 9m", 1)), 0o600)
	if err := h.gw.ReloadFile(); err != nil {
		t.Fatal(err)
	}
	after := h.gw.Backend("aoai-westeurope")
	if after == weu || after.Timeout != 9*time.Minute {
		t.Fatal("the changed backend was not rebuilt")
	}
	if s := after.Breaker.Snapshot(); s.State != breaker.Open || !s.Until.Equal(before.Until) {
		t.Fatalf("breaker state lost across the reload: %+v, was %+v", s, before)
	}
	// An invalid file: the configuration in force stays, and says why.
	os.WriteFile(h.path, []byte(strings.Replace(string(orig), "type: azure", "type: azure\n    tyop: x", 1)), 0o600)
	if err := h.gw.ReloadFile(); err == nil || !strings.Contains(err.Error(), `unknown field "tyop"`) {
		t.Fatalf("invalid reload: %v", err)
	}
	if h.gw.Backend("aoai-westeurope") != after {
		t.Fatal("an invalid configuration replaced the one in force")
	}
	if resp, _ := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatal("serving stopped after an invalid reload")
	}
	if v := metric(t, h.gw, "switchover_config_reloads_total", "result", "invalid"); v != 1 {
		t.Fatalf("invalid reloads %v", v)
	}
}

func TestWatchReloadsChangedFile(t *testing.T) {
	h := startAnswering(t,
		func(y string) string { return strings.Replace(y, "keys:", "reload: {interval: 1s}\nkeys:", 1) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.gw.Watch(ctx)
	orig, _ := os.ReadFile(h.path)
	const reloaded = `"msg":"configuration reloaded"`
	before := strings.Count(h.logs.String(), reloaded)
	os.WriteFile(h.path, []byte(strings.Replace(string(orig), "priority: 1, weight: 100", "priority: 5, weight: 100", 1)), 0o600)
	// Watch checks the file on a wall-clock ticker (1s); the reload logs
	// once the new configuration is in force.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second) // a guard against a hang, not a timing assertion
	defer wcancel()
	if err := h.logs.WaitFor(wctx, func(s string) bool { return strings.Count(s, reloaded) > before }); err != nil {
		t.Fatal("the watched file was not reloaded")
	}
	if resp, _ := h.post("/v1/chat/completions", chat); resp.Header.Get("X-Switchover-Backend") != "aoai-swedencentral" {
		t.Fatalf("served by %s after the reload, want aoai-swedencentral", resp.Header.Get("X-Switchover-Backend"))
	}
}

func TestTracingSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := startWith(t, gateway.Options{Tracer: tp}, []upstreamtest.Step{status(429)}, []upstreamtest.Step{answer("sec")}, "")
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	resp, _ := h.post("/v1/chat/completions", chat, "Traceparent", "00-"+callerTrace+"-00f067aa0ba902b7-01")
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	spans := exp.GetSpans()
	var req *tracetest.SpanStub
	var attempts []tracetest.SpanStub
	for i, s := range spans {
		switch s.Name {
		case "switchover.request":
			req = &spans[i]
		case "switchover.attempt":
			attempts = append(attempts, s)
		}
	}
	if req == nil || len(attempts) != 2 {
		t.Fatalf("spans: %d request, %d attempts", len(spans)-len(attempts), len(attempts))
	}
	if req.SpanContext.TraceID().String() != callerTrace {
		t.Fatalf("request span not in the caller's trace: %s", req.SpanContext.TraceID())
	}
	for _, a := range attempts {
		if a.Parent.SpanID() != req.SpanContext.SpanID() || a.SpanContext.TraceID().String() != callerTrace {
			t.Fatalf("attempt span not a child of the request span")
		}
	}
	attr := func(s tracetest.SpanStub, key string) string {
		for _, kv := range s.Attributes {
			if string(kv.Key) == key {
				return kv.Value.String()
			}
		}
		return ""
	}
	if attr(attempts[0], "switchover.backend") != "aoai-westeurope" || attr(attempts[0], "http.response.status_code") != "429" ||
		attr(attempts[0], "switchover.reason") != "rate_limited" || attr(attempts[1], "switchover.backend") != "aoai-swedencentral" {
		t.Fatalf("attempt attributes %v / %v", attempts[0].Attributes, attempts[1].Attributes)
	}
	if attr(*req, "switchover.failover") != "true" || attr(*req, "switchover.attempts") != "2" {
		t.Fatalf("request attributes %v", req.Attributes)
	}
	// Who asked, and what the answer used.
	if attr(*req, "switchover.key") != "app-team" || attr(*req, "gen_ai.usage.input_tokens") != "3" || attr(*req, "gen_ai.usage.output_tokens") != "3" ||
		attr(*req, "gen_ai.response.model") != "gpt-4o" || attr(*req, "switchover.cost_usd") == "" {
		t.Fatalf("request attributes %v", req.Attributes)
	}
	// The upstream got the trace context, under the gateway's span.
	tp2 := h.sec.Header(0).Get("Traceparent")
	if !strings.Contains(tp2, callerTrace) || !strings.Contains(tp2, req.SpanContext.SpanID().String()) {
		t.Fatalf("upstream traceparent %q", tp2)
	}
}

// TestOTLPExport: with tracing.endpoint set, spans are exported over
// OTLP/HTTP to it.
func TestOTLPExport(t *testing.T) {
	var posts atomic.Int32
	var ctype atomic.Value
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == "POST" && r.URL.Path == "/v1/traces" && len(b) > 0 {
			posts.Add(1)
			ctype.Store(r.Header.Get("Content-Type"))
		}
	}))
	defer collector.Close()
	h := startAnswering(t,
		func(y string) string {
			return strings.Replace(y, "keys:", "tracing: {endpoint: "+collector.URL+"}\nkeys:", 1)
		})
	h.post("/v1/chat/completions", chat)
	// Shutting down flushes the batch of spans.
	h.stop()
	err := <-h.done
	h.done <- err
	if posts.Load() == 0 {
		t.Fatal("no spans exported to the OTLP endpoint")
	}
	if ct, _ := ctype.Load().(string); ct != "application/x-protobuf" {
		t.Fatalf("export content type %q", ct)
	}
}

// TestReloadedBreakerEndsItsTripOnceAndInOrder: a reload that rebuilds an
// open backend hands its breaker state to the new breaker and retires the
// old one, whose timer would end the trip a second time; the new breaker's
// transitions number on from the old one's, so the metrics do not take them
// for stale. A backend whose identity changed starts afresh.
func TestReloadedBreakerEndsItsTripOnceAndInOrder(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, noRecoveryProbes)
	state := func(st string) float64 {
		return metric(t, h.gw, "switchover_breaker_state", "backend", "aoai-westeurope", "state", st)
	}
	reload := func(from, to string) {
		t.Helper()
		orig, _ := os.ReadFile(h.path)
		os.WriteFile(h.path, []byte(strings.Replace(string(orig), from, to, 1)), 0o600)
		if err := h.gw.ReloadFile(); err != nil {
			t.Fatal(err)
		}
	}
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat) // 2 failures: open
	h.clock.Advance(time.Minute)         // half-open
	h.post("/v1/chat/completions", chat) // the probe fails: open again, the third transition
	old := h.gw.Backend("aoai-westeurope")
	reload("region: westeurope", "region: westeurope\n    timeout: 9m") // same identity
	if h.gw.Backend("aoai-westeurope") == old {
		t.Fatal("the changed backend was not rebuilt")
	}
	h.weu.SetScript(answer("weu"))
	h.clock.Advance(time.Minute)
	if v := metric(t, h.gw, "switchover_breaker_transitions_total", "backend", "aoai-westeurope", "from", "open", "to", "half_open"); v != 2 {
		t.Fatalf("%v trips ended, want 2: the one before the reload, and the one across it once", v)
	}
	if state("half_open") != 1 {
		t.Fatal("the new breaker's end of the trip was taken for stale")
	}
	if _, body := h.post("/v1/chat/completions", chat); !strings.Contains(body, "weu") {
		t.Fatalf("the probe did not go to westeurope: %s", body)
	}
	if state("closed") != 1 {
		t.Fatal("the new breaker's closing was taken for stale")
	}

	// Open again, then change the identity: a new breaker, closed, whose
	// first transition counts.
	h.weu.SetScript(status(503))
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat)
	if state("open") != 1 {
		t.Fatal("not open")
	}
	reload("region: westeurope", "region: westeurope\n    api_version: 2024-06-01")
	if state("closed") != 1 {
		t.Fatal("a backend with a new identity is not shown closed")
	}
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat)
	if state("open") != 1 {
		t.Fatal("the new breaker's first opening was taken for stale")
	}
}

// TestReloadKeepsFailureCountAndHalfOpenProbe: a reload that changes only
// a setting outside the breaker (here a timeout) keeps the breaker itself:
// its failures in the window and a half-open state (the bug: an
// idle_timeout change reset the failures to 0 and turned a half-open
// backend closed).
func TestReloadKeepsFailureCountAndHalfOpenProbe(t *testing.T) {
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, noRecoveryProbes)
	reload := func(from, to string) {
		t.Helper()
		orig, _ := os.ReadFile(h.path)
		os.WriteFile(h.path, []byte(strings.Replace(string(orig), from, to, 1)), 0o600)
		if err := h.gw.ReloadFile(); err != nil {
			t.Fatal(err)
		}
	}
	h.post("/v1/chat/completions", chat) // one failure of the two that open it
	br := h.gw.Backend("aoai-westeurope").Breaker
	if s := br.Snapshot(); s.Failures != 1 {
		t.Fatalf("failures %d before the reload", s.Failures)
	}
	reload("region: westeurope", "region: westeurope\n    idle_timeout: 90s")
	if s := h.gw.Backend("aoai-westeurope").Breaker.Snapshot(); s.Failures != 1 || s.State != breaker.Closed {
		t.Fatalf("after an idle_timeout reload: %+v, want the one failure kept", s)
	}
	h.post("/v1/chat/completions", chat) // the second failure: open
	h.clock.Advance(time.Minute)         // the trip ends: half-open
	if s := h.gw.Backend("aoai-westeurope").Breaker.Snapshot(); s.State != breaker.HalfOpen {
		t.Fatalf("breaker %v, want half-open", s.State)
	}
	reload("idle_timeout: 90s", "idle_timeout: 80s")
	if s := h.gw.Backend("aoai-westeurope").Breaker.Snapshot(); s.State != breaker.HalfOpen {
		t.Fatalf("after a reload a half-open backend is %v, want still half-open", s.State)
	}
}

// noRecoveryProbes turns aoai-westeurope's recovery probes off, for tests
// of breaker semantics that move the fake clock past a trip: a probe would
// close the breaker behind the test's back.
const noRecoveryProbes = "    probe: {disabled: true}"

// TestIdlePoolFailsBackThroughARecoveryProbe: with the shipped probe
// defaults, a primary whose trip ended while no request came is put back
// by a recovery probe, and the failback is told, without any request.
func TestIdlePoolFailsBackThroughARecoveryProbe(t *testing.T) {
	var mu sync.Mutex
	var kinds []string
	arrived := make(chan string, 100) // each delivery's kind
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct{ Kind string }
		json.NewDecoder(r.Body).Decode(&n)
		mu.Lock()
		kinds = append(kinds, n.Kind)
		mu.Unlock()
		arrived <- n.Kind
	}))
	defer recv.Close()
	withHook := func(y string) string {
		return strings.Replace(y, "keys:", fmt.Sprintf("notifications:\n  webhooks: [{url: %q}]\nkeys:", recv.URL), 1)
	}
	h := start(t, []upstreamtest.Step{status(503)}, []upstreamtest.Step{answer("sec")}, "", withHook)
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat) // 2 failures: open
	h.weu.SetScript(answer("weu"))
	calls := h.sec.Calls()
	h.clock.Advance(time.Minute) // recovery probes run; no request is sent
	// The failback is told once the probe has closed the breaker.
	for receive(t, "the failback after a recovery probe", arrived) != "failback" {
	}
	if st := h.gw.Backend("aoai-westeurope").Breaker.Snapshot().State; st != breaker.Closed {
		t.Fatalf("breaker %v after the failback notification, want closed", st)
	}
	if err := h.gw.Close(context.Background()); err != nil { // drains the notifications
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(kinds, ",") != "failover,failback" {
		t.Fatalf("notifications %v, want failover, failback", kinds)
	}
	if h.sec.Calls() != calls {
		t.Fatal("a request was needed for the failback")
	}
}

// TestForcedCloseLiftsTheQuotaHold: a breaker forced closed kept
// answering 429 backends_rate_limited "no call was sent" until the 300 s
// Retry-After of the backend's last 429 ran out: the operator's force
// lifts the quota hold too, and the action says so.
func TestForcedCloseLiftsTheQuotaHold(t *testing.T) {
	h := start(t, []upstreamtest.Step{upstreamtest.Status(429, "Retry-After", "300"), answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withAdmin)
	backend := func() string {
		resp, _ := h.post("/v1/chat/completions", chat)
		return resp.Header.Get("X-Switchover-Backend")
	}
	if b := backend(); b != "aoai-swedencentral" {
		t.Fatalf("after westeurope's 429, served by %s", b)
	}
	if code, _ := h.adminDo("POST", "/admin/backends/aoai-westeurope/breaker", `{"state":"closed"}`, adminKey); code != 200 {
		t.Fatalf("force closed: %d", code)
	}
	if b := backend(); b != "aoai-westeurope" {
		t.Fatalf("after the breaker was forced closed, served by %s (westeurope called %d times)", b, h.weu.Calls())
	}
	if !strings.Contains(h.logs.String(), "lifted the hold of its rate-limit headers") {
		t.Errorf("the action does not say it lifted the quota hold:\n%s", h.logs.String())
	}
}

// TestStatusHeadroomComparesLikeWithLike is the regression test for an
// idle Azure backend whose headroom read 16% in the status and the
// console: what was left of its 10-second slice was divided by its
// per-minute limit. It reads 90% after the first call of a slice, and
// full once the slice has refilled.
func TestStatusHeadroomComparesLikeWithLike(t *testing.T) {
	h := start(t, []upstreamtest.Step{func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Limit-Requests", "60")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "9")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`)
	}}, []upstreamtest.Step{answer("sec")}, "")
	if resp, _ := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	headroom := func() float64 {
		for _, m := range h.gw.Status().Pools[0].Members {
			if m.Backend == "aoai-westeurope" && m.Headroom != nil {
				return *m.Headroom
			}
		}
		t.Fatal("no headroom known for aoai-westeurope")
		return 0
	}
	if got := headroom(); got < 0.89 || got > 0.91 {
		t.Fatalf("after the first call of a slice (9 of 10 left), headroom %v, want 0.9", got)
	}
	h.clock.Advance(11 * time.Second)
	if got := headroom(); got != 1 {
		t.Fatalf("once the slice has refilled, headroom %v, want 1", got)
	}
}
