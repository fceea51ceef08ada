package engine

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/route"
)

const base = `backends:
  - {name: weu, type: azure, url: "http://127.0.0.1:1", api_key: k1, region: westeurope}
  - {name: sec, type: azure, url: "http://127.0.0.1:2", api_key: k2, region: swedencentral}
pools:
  - name: chat-prod
    aliases: [gpt-4o]
    fallback: spare
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
  - name: spare
    members: [{backend: sec}]
`

func parse(t *testing.T, y string) *config.Config {
	t.Helper()
	c, err := config.Parse("engine.yaml", []byte(y), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func build(t *testing.T, y string, prev *Engine, d Deps) *Engine {
	t.Helper()
	e, err := Build(parse(t, y), prev, d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestBuildWiresPoolsRoutesAndFallbacks(t *testing.T) {
	e := build(t, base, nil, Deps{})
	p := e.Pools["chat-prod"]
	if p == nil || len(p.Members) != 2 || p.Members[0].Backend != e.Backends["weu"] || p.Members[1].Priority != 2 {
		t.Fatalf("chat-prod: %+v", p)
	}
	if p.Fallback != e.Pools["spare"] {
		t.Fatal("chat-prod's fallback is not the spare pool")
	}
	if e.Pool("gpt-4o") != p || e.Routes.Pools["gpt-4o"] != p || e.Pool("chat-prod") != p || e.Pool("nope") != nil {
		t.Fatal("a pool is not reached by its name and alias")
	}
	if e.Backends["weu"].Breaker == nil || e.Backends["weu"].Quota == nil {
		t.Fatal("the shipped defaults give a backend a breaker and quota awareness")
	}
	var zero Reload
	if !slices.Equal(e.Reload.Kept, zero.Kept) || e.Reload.Added != nil || e.Reload.RestartOnly != nil {
		t.Fatalf("a first build has no reload: %+v", e.Reload)
	}
}

// The reload diff, without a server: what is kept as it is, carried over
// under the same identity, started afresh, added and removed.
func TestReloadDiff(t *testing.T) {
	clk := fakeclock.New()
	old := build(t, base, nil, Deps{Clock: clk})
	weu, sec := old.Backends["weu"], old.Backends["sec"]
	// sec's breaker opens: what is carried over must keep it open.
	done, _ := sec.Breaker.Allow()
	done(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindServerError, Hold: time.Hour, Cause: "503"})
	until := sec.Breaker.Snapshot().Until

	next := `backends:
  - {name: weu, type: azure, url: "http://127.0.0.1:1", api_key: k1, region: westeurope, connect_timeout: 3s}
  - {name: sec, type: azure, url: "http://127.0.0.1:2", api_key: k2, region: swedencentral, breaker: {failures: 3}}
  - {name: new, type: openai, url: "http://127.0.0.1:3/v1", api_key: k3}
pools:
  - name: chat-prod
    members: [{backend: weu}, {backend: sec}, {backend: new}]
server: {read_timeout: 45s}
`
	e := build(t, next, old, Deps{Clock: clk})
	r := e.Reload
	if !slices.Equal(r.Carried, []string{"weu", "sec"}) || !slices.Equal(r.Added, []string{"new"}) || r.Kept != nil || r.Renewed != nil {
		t.Fatalf("reload %+v", r)
	}
	if !slices.Equal(r.RemovedPools, []string{"spare"}) || !slices.Equal(r.RestartOnly, []string{"server.read_timeout"}) {
		t.Fatalf("removed pools %v, restart only %v", r.RemovedPools, r.RestartOnly)
	}
	if e.Backends["weu"] == weu || e.Backends["weu"].Breaker != weu.Breaker {
		t.Fatal("weu (a timeout changed): a new backend with the same breaker object, its count and timers")
	}
	if e.Backends["sec"].Breaker == sec.Breaker {
		t.Fatal("sec (its breaker's settings changed): a new breaker")
	}
	if s := e.Backends["sec"].Breaker.Snapshot(); s.State != breaker.Open || !s.Until.Equal(until) {
		t.Fatalf("sec's new breaker: %+v, want open until %v as before", s, until)
	}
	if e.Backends["sec"].Quota != sec.Quota {
		t.Fatal("sec's quota figures were not carried over")
	}
	if !slices.Contains(r.retire, sec) || slices.Contains(r.retire, weu) {
		t.Fatal("retire: the replaced breaker of sec, and not weu's, which lives on")
	}

	// The same configuration again: everything kept as it is.
	again := build(t, next, e, Deps{Clock: clk})
	if !slices.Equal(again.Reload.Kept, []string{"weu", "sec", "new"}) || again.Backends["new"] != e.Backends["new"] || len(again.Reload.retire) != 0 {
		t.Fatalf("an unchanged configuration: %+v", again.Reload)
	}

	// A new URL is a new identity: it starts afresh.
	moved := build(t, `backends: [{name: weu, type: azure, url: "http://127.0.0.1:9", api_key: k1}]
pools: [{name: chat-prod, members: [{backend: weu}]}]
`, again, Deps{Clock: clk})
	if !slices.Equal(moved.Reload.Renewed, []string{"weu"}) || !slices.Equal(moved.Reload.Removed, []string{"sec", "new"}) {
		t.Fatalf("moved: %+v", moved.Reload)
	}
	if len(moved.Reload.retire) != 3 {
		t.Fatalf("moved retires %d breakers, want weu's old one, sec's and new's", len(moved.Reload.retire))
	}
}

func TestBuildAppliesOverridesAndRebuildsOnePool(t *testing.T) {
	prio := 0
	d := Deps{Override: func(pool, backend string) (int, int) {
		if pool == "chat-prod" && backend == "sec" {
			return prio, 0
		}
		return 0, 0
	}}
	e := build(t, base, nil, d)
	if e.Pools["chat-prod"].Members[1].Priority != 2 {
		t.Fatal("no override: the configured priority")
	}
	prio = 1
	n := e.WithPool("chat-prod", d)
	p := n.Pools["chat-prod"]
	if p == e.Pools["chat-prod"] || p.Members[1].Priority != 1 || p.Members[0].Weight != 1 {
		t.Fatalf("the rebuilt pool: %+v", p.Members[1])
	}
	if n.Pools["spare"] != e.Pools["spare"] || n.Backends["weu"] != e.Backends["weu"] {
		t.Fatal("WithPool rebuilt more than its pool")
	}
	if n.Pool("gpt-4o") != p {
		t.Fatal("the alias does not reach the rebuilt pool")
	}
	if e.Pools["chat-prod"].Members[1].Priority != 2 {
		t.Fatal("WithPool changed the engine it copied")
	}
}

// TestMemberChangeKeepsThePoolsFallback: an operator's change to a member
// rebuilt the pool without its fallback pools, so the pool no longer fell
// back (the bug: gateway.changeMember built the pool alone).
func TestMemberChangeKeepsThePoolsFallback(t *testing.T) {
	e := build(t, base, nil, Deps{})
	n := e.WithPool("chat-prod", Deps{})
	if n.Pools["chat-prod"].Fallback != n.Pools["spare"] || n.Pools["spare"] == nil {
		t.Fatal("the rebuilt pool lost its fallback")
	}
}

func TestBuildErrorRetiresWhatItMade(t *testing.T) {
	var trs []breaker.Transition
	clk := fakeclock.New()
	d := Deps{Clock: clk, OnTransition: func(t breaker.Transition) { trs = append(trs, t) }}
	old := build(t, base, nil, d)
	cfg := parse(t, base)
	cfg.Backends = append(cfg.Backends, config.Backend{Name: "bad", Type: "nonesuch", URL: "http://127.0.0.1:4"})
	cfg.Backends[1].APIKey = config.Secret("k2-new") // sec: a new backend
	if _, err := Build(cfg, old, d); err == nil {
		t.Fatal("an unknown type built")
	}
	if old.Backends["sec"].Breaker == nil {
		t.Fatal("the engine in force lost its breaker")
	}
	// The engine in force still reports; the one that failed made no breaker
	// that would (none of its timers may fire into OnTransition).
	old.Backends["sec"].Breaker.Force(breaker.Open, clk.Now().Add(time.Minute), breaker.KindManual, "test")
	if len(trs) != 1 {
		t.Fatalf("transitions %v", trs)
	}
}

// sharedQuota stands for a fleet's quota: the local figures, shared.
type sharedQuota struct {
	*route.LocalQuota
	backend string
}

func TestBuildHooksForAFleet(t *testing.T) {
	var failed []string
	d := Deps{
		Quota: func(backend string, q *route.LocalQuota) route.Quota { return &sharedQuota{q, backend} },
		OnFailure: func(backend string) func(breaker.Outcome, time.Time) {
			return func(o breaker.Outcome, _ time.Time) { failed = append(failed, backend+":"+o.Kind.String()) }
		},
	}
	e := build(t, base+"backend_defaults: {quota_aware: true}\n", nil, d)
	q, ok := e.Backends["sec"].Quota.(*sharedQuota)
	if !ok || q.backend != "sec" || q.LocalQuota == nil {
		t.Fatalf("sec's quota %T, want the hook's", e.Backends["sec"].Quota)
	}
	done, _ := e.Backends["weu"].Breaker.Allow()
	done(breaker.Outcome{Result: breaker.Failure, Kind: breaker.KindTimeout})
	if !slices.Equal(failed, []string{"weu:timeout"}) {
		t.Fatalf("failures told %v", failed)
	}
	off := build(t, base+"backend_defaults: {quota_aware: false}\n", nil, d)
	if off.Backends["sec"].Quota != nil {
		t.Fatal("quota_aware: false still has a quota")
	}
}

// TestReplaceClosesTheIdleConnectionsOfRemovedBackends: a reload that
// removes a backend closes its transport's idle connections (they lingered
// until the idle timeout); a backend carried over on the same transport (a
// timeout changed) keeps its connection.
func TestReplaceClosesTheIdleConnectionsOfRemovedBackends(t *testing.T) {
	// Two hosts: backends on one host with the same settings share a
	// transport (TestBackendsOnOneHostShareConnections).
	var closed atomic.Int64
	ups := map[string]*httptest.Server{}
	for _, name := range []string{"weu", "sec"} {
		up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed.Add(1)
			}
		}
		up.Start()
		defer up.Close()
		ups[name] = up
	}
	y := strings.ReplaceAll(base, "http://127.0.0.1:1", ups["weu"].URL)
	y = strings.ReplaceAll(y, "http://127.0.0.1:2", ups["sec"].URL)
	e1 := build(t, y, nil, Deps{})
	for _, name := range []string{"weu", "sec"} { // an idle connection on each
		req, _ := http.NewRequest(http.MethodGet, ups[name].URL, nil)
		resp, err := e1.Backends[name].Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// weu removed (chat-prod keeps sec alone), sec carried: a timeout.
	y2 := strings.Replace(y, "  - {name: weu, type: azure, url: \""+ups["weu"].URL+"\", api_key: k1, region: westeurope}\n", "", 1)
	y2 = strings.Replace(y2, "region: swedencentral}", "region: swedencentral, timeout: 5m}", 1)
	y2 = strings.Replace(y2, "members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]", "members: [{backend: sec}]", 1)
	e2 := build(t, y2, e1, Deps{})
	if !slices.Equal(e2.Reload.Removed, []string{"weu"}) || !slices.Equal(e2.Reload.Carried, []string{"sec"}) {
		t.Fatalf("reload: %+v", e2.Reload)
	}
	e2.Replace()
	poll.Until(t, 5*time.Second, func() bool { return closed.Load() >= 1 }, func() string { return "weu's idle connection is still open" })
	if n := closed.Load(); n != 1 {
		t.Errorf("%d connections closed, want 1 (weu's; sec's transport is carried)", n)
	}
}

// TestCloseStopsTheInProcessCache is the regression test for the
// in-process response cache's goroutine (otter's clean-up) left running
// after the gateway's Close: in a synctest bubble a goroutine left blocked
// at the end fails the test.
func TestCloseStopsTheInProcessCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := Build(parse(t, base+"    cache: {ttl: 10m}\n"), nil, Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Routes.Cache == nil || e.Routes.Cache.ResponseCache == nil {
			t.Fatal("no response cache: the test tests nothing")
		}
		e.Close()
	})
}
