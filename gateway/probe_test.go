package gateway

import (
	"context"
	"fmt"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/route"
)

// probeEnv is a gateway over two scripted upstreams, weu probed with the
// probe given in YAML (a flow mapping, "{...}"); it returns once the first
// probe has run, with weu's prober stopped (as recoveryEnv's).
func probeEnv(t *testing.T, probe string, weu ...upstreamtest.Step) (*Gateway, *upstreamtest.Upstream, *prober) {
	t.Helper()
	// A recovery_interval unlike the 5 s probe timeout tells the prober's
	// wait apart from the probe's own timer on the clock.
	const recovery = 7 * time.Second
	probe = strings.Replace(probe, "{", fmt.Sprintf("{recovery_interval: %s, ", recovery), 1)
	g, w, p := probeGateway(t, ", probe: "+probe, weu...)
	// The first probe runs at start; once it is recorded the prober arms
	// its recovery wait on the gateway's clock. Wait for that timer, then
	// drive the rest. (A probe refused with a 4xx waits a minute instead;
	// no test here starts with one.)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a guard against a hang, not a timing assertion
	defer cancel()
	if err := g.opts.Clock.(*fakeclock.Clock).BlockUntilTimer(ctx, recovery); err != nil || p.snapshot().At.IsZero() {
		t.Fatal("the first probe never ran")
	}
	p.stop()
	return g, w, p
}

// recoveryEnv is a gateway with the shipped probe defaults (no probe
// block), weu benched on its first failure, and weu's prober stopped: the
// test drives it (tick, notYet), and its own loop, which the engine's word
// that the pool is short wakes (route.EventShort), never probes behind the
// test's back.
func recoveryEnv(t *testing.T, weu ...upstreamtest.Step) (*Gateway, *upstreamtest.Upstream, *prober) {
	t.Helper()
	g, w, p := probeGateway(t, "", weu...)
	p.stop()
	return g, w, p
}

// probeGateway is a gateway over two scripted upstreams, on a fake clock;
// weu's backend entry ends with extra (such as ", probe: {...}") and its
// breaker opens on the first failure.
func probeGateway(t *testing.T, extra string, weu ...upstreamtest.Step) (*Gateway, *upstreamtest.Upstream, *prober) {
	t.Helper()
	w := upstreamtest.New(t, weu...)
	sec := upstreamtest.New(t, upstreamtest.Answer("sec"))
	y := fmt.Sprintf(`log: {level: error}
backends:
  - {name: weu, type: openai, url: %q, breaker: {failures: 1, trip: 60s}%s}
  - {name: sec, type: openai, url: %q}
pools:
  - name: chat
    members: [{backend: weu, priority: 1, model: gpt-4o}, {backend: sec, priority: 2}]
`, w.URL+"/v1", extra, sec.URL+"/v1")
	cfg, err := config.Parse("p.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Clock: fakeclock.New(), Logger: NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	g.mu.Lock()
	p := g.probes.byBackend["weu"]
	g.mu.Unlock()
	if p == nil {
		t.Fatal("no probe for weu")
	}
	return g, w, p
}

func send(t *testing.T, g *Gateway) (backend, attempts string) {
	t.Helper()
	c := &http.Client{Transport: g.Pool("chat")}
	resp, err := c.Post("http://x/v1/chat/completions", "application/json", strings.NewReader(`{"model":"chat","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("X-Switchover-Backend"), resp.Header.Get("X-Switchover-Attempts")
}

// TestProbeMarksUnavailableBeforeUsersHitIt: two failed probes bench the
// backend, so no user request pays for the failure; a passing probe
// brings it back.
func TestProbeMarksUnavailableBeforeUsersHitIt(t *testing.T) {
	g, weu, p := probeEnv(t, "{interval: 10s, failures: 2}", upstreamtest.Status(503))
	if s := p.snapshot(); s.Up || s.Failures != 1 || s.Result != "5xx" {
		t.Fatalf("first probe %+v", s)
	}
	if st := g.Backend("weu").Breaker.Snapshot(); st.State != breaker.Closed {
		t.Fatal("benched after one failed probe")
	}
	p.once(context.Background())
	if st := g.Backend("weu").Breaker.Snapshot(); st.State != breaker.Open {
		t.Fatalf("breaker %v after two failed probes", st.State)
	}
	calls := weu.Calls()
	if b, a := send(t, g); b != "sec" || a != "1" {
		t.Fatalf("served by %s after %s attempts: the user met the dead backend", b, a)
	}
	if weu.Calls() != calls {
		t.Fatal("a user request went to the benched backend")
	}
	// The body of the chat probe asked the member's model for one token.
	if body := weu.Body(0); !strings.Contains(body, `"model":"gpt-4o"`) || !strings.Contains(body, `"max_tokens":1`) {
		t.Fatalf("probe body %s", body)
	}

	weu.SetScript(upstreamtest.Answer("weu"))
	p.once(context.Background())
	if st := g.Backend("weu").Breaker.Snapshot(); st.State != breaker.Closed {
		t.Fatalf("breaker %v after a passing probe", st.State)
	}
	if b, _ := send(t, g); b != "weu" {
		t.Fatalf("served by %s after recovery", b)
	}
	if s := g.Status(); s.Pools[0].Members[0].Probe == nil || !s.Pools[0].Members[0].Probe.Up {
		t.Fatalf("status %+v", s.Pools[0].Members[0])
	}
}

// TestProbesAreToldToTheObserver: every probe the gateway sends is a call
// no request made, told to Options.Observer as a route.EventProbe (a game
// day takes them off its calls per request), its failure as Err.
func TestProbesAreToldToTheObserver(t *testing.T) {
	g, weu, p := probeEnv(t, "{interval: 10s, failures: 2}", upstreamtest.Status(503))
	var mu sync.Mutex
	var got []route.Event
	// The prober waits on the fake clock, which nothing advances: the
	// probes below are the test's own.
	g.opts.Observer = route.ObserverFunc(func(e route.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	})
	p.once(context.Background())
	weu.SetScript(upstreamtest.Answer("weu"))
	p.once(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Kind != route.EventProbe || got[0].Backend != g.Backend("weu") || got[0].Err == nil || got[1].Kind != route.EventProbe || got[1].Err != nil {
		t.Fatalf("events %+v, want a failed probe of weu, then a passing one", got)
	}
}

// TestProbeEndsTrip: with end_trip, a passing probe closes a breaker that
// traffic opened, before its trip ends; without it, it does not.
func TestProbeEndsTrip(t *testing.T) {
	for _, endTrip := range []bool{true, false} {
		t.Run(fmt.Sprint("end_trip=", endTrip), func(t *testing.T) {
			g, weu, p := probeEnv(t, fmt.Sprintf("{interval: 10s, end_trip: %v}", endTrip), upstreamtest.Answer("weu"))
			weu.SetScript(upstreamtest.Status(500))
			send(t, g) // opens the breaker (1 failure)
			if g.Backend("weu").Breaker.Snapshot().State != breaker.Open {
				t.Fatal("not open")
			}
			weu.SetScript(upstreamtest.Answer("weu"))
			p.once(context.Background())
			want := breaker.Open
			if endTrip {
				want = breaker.Closed
			}
			if st := g.Backend("weu").Breaker.Snapshot().State; st != want {
				t.Fatalf("breaker %v, want %v", st, want)
			}
		})
	}
}

func TestModelsProbe(t *testing.T) {
	g, weu, p := probeEnv(t, "{interval: 10s, kind: models}", upstreamtest.Answer("weu"))
	if s := p.snapshot(); !s.Up || s.Kind != "models" {
		t.Fatalf("probe %+v", s)
	}
	if path := weu.Path(0); path != "/v1/models" {
		t.Fatalf("models probe went to %s", path)
	}
	_ = g
}

// TestRecoveryProbeEndsTripWithDefaults: with no probe configured, a
// healthy backend is never probed, and a benched one is probed and put
// back as soon as it answers, without waiting for its 60 s trip (the bug:
// failback waited for the trip and a lucky request).
func TestRecoveryProbeEndsTripWithDefaults(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Answer("weu"))
	p.tick(context.Background())
	if weu.Calls() != 0 {
		t.Fatal("a healthy backend was probed with the defaults")
	}
	// Regression: a backend never probed showed as "probe DOWN" with no
	// reason in the status.
	for _, p := range g.Status().Pools {
		for _, m := range p.Members {
			if m.Probe != nil {
				t.Errorf("%s was never probed, and its status has a probe: %+v", m.Backend, *m.Probe)
			}
		}
	}
	weu.SetScript(upstreamtest.Status(500))
	send(t, g) // opens the breaker (1 failure)
	if g.Backend("weu").Breaker.Snapshot().State != breaker.Open {
		t.Fatal("not open")
	}
	p.tick(context.Background()) // still failing: stays benched
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Open || weu.Calls() != 2 {
		t.Fatalf("after a failed recovery probe: %v, %d calls", st, weu.Calls())
	}
	weu.SetScript(upstreamtest.Answer("weu"))
	p.tick(context.Background())
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Closed {
		t.Fatalf("breaker %v after a passing recovery probe, want closed", st)
	}
	if b, _ := send(t, g); b != "weu" {
		t.Fatalf("served by %s after recovery", b)
	}
}

// TestRecoveryProbeLeavesQuotaAndOperatorBenchesAlone: a backend benched
// for a 429's Retry-After, or forced open by an operator, is not probed.
func TestRecoveryProbeLeavesQuotaAndOperatorBenchesAlone(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Status(429, "Retry-After", "30"))
	send(t, g)
	if s := g.Backend("weu").Breaker.Snapshot(); s.State != breaker.Open || !s.Throttled {
		t.Fatalf("snapshot %+v, want open for quota", s)
	}
	calls := weu.Calls()
	p.tick(context.Background())
	if weu.Calls() != calls {
		t.Fatal("a backend benched for quota was probed")
	}
	if err := g.ForceBreaker("weu", true, time.Minute); err != nil {
		t.Fatal(err)
	}
	weu.SetScript(upstreamtest.Answer("weu")) // counts calls afresh
	p.tick(context.Background())
	if weu.Calls() != 0 || g.Backend("weu").Breaker.Snapshot().State != breaker.Open {
		t.Fatalf("a backend an operator forced open was probed or closed: %d calls, %+v", weu.Calls(), g.Backend("weu").Breaker.Snapshot())
	}
}

// TestMisconfiguredBackendIsProbedOnceAMinute: a recovery probe refused
// with a 4xx (a revoked key) waits a minute, not recovery_interval, before
// the next (the bug: a revoked key cost an upstream call every 5 s).
func TestMisconfiguredBackendIsProbedOnceAMinute(t *testing.T) {
	g, _, p := recoveryEnv(t, upstreamtest.Status(401))
	if b, _ := send(t, g); b != "sec" {
		t.Fatalf("served by %s, want a failover from the misconfigured backend", b)
	}
	if w := p.wait(); w != 5*time.Second {
		t.Fatalf("wait %v before any probe, want recovery_interval 5s", w)
	}
	p.tick(context.Background())
	if w := p.wait(); w != time.Minute {
		t.Fatalf("wait %v after a 401 probe, want 1m", w)
	}
}

// TestRecoveryProbeOfAStallingStreamBackendIsAStream: a backend benched
// because its streams broke is probed with a stream, so a plain answer
// cannot put it back while its streams still fail (issue 9: a plain
// request's success must not close the breaker of a backend whose streams
// are stalling).
func TestRecoveryProbeOfAStallingStreamBackendIsAStream(t *testing.T) {
	headersThenEnd := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	g, weu, p := recoveryEnv(t, headersThenEnd)
	c := &http.Client{Transport: g.Pool("chat")}
	resp, err := c.Post("http://x/v1/chat/completions", "application/json", strings.NewReader(`{"model":"chat","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if s := g.Backend("weu").Breaker.Snapshot(); s.State != breaker.Open || s.Class != "stream" {
		t.Fatalf("snapshot %+v, want open by a stream", s)
	}
	p.tick(context.Background())
	if weu.Calls() != 2 || !strings.Contains(weu.Body(1), `"stream":true`) {
		t.Fatalf("%d calls, probe body %q: want a stream probe", weu.Calls(), weu.Body(min(1, weu.Calls()-1)))
	}
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Open {
		t.Fatalf("breaker %v after a stream probe got no event", st)
	}
	weu.SetScript(upstreamtest.SSE("weu", 2, -1))
	p.tick(context.Background())
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Closed {
		t.Fatalf("breaker %v after a stream probe got its first event", st)
	}
}

// TestProbeOfReasoningDeploymentIsUp: a deployment that refuses the chat
// probe's max_tokens with a 400 (o-series, gpt-5) answered, so it is up
// and never benched by its probes (the bug: two probes forced a healthy
// backend open).
func TestProbeOfReasoningDeploymentIsUp(t *testing.T) {
	refuse := upstreamtest.Raw(400, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)
	g, _, p := probeEnv(t, "{interval: 10s, failures: 2}", refuse)
	p.once(context.Background())
	if s := p.snapshot(); !s.Up || s.Failures != 0 {
		t.Fatalf("probe %+v, want up", s)
	}
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Closed {
		t.Fatalf("breaker %v after probes answered 400", st)
	}
}

// TestThrottledProbesDoNotBench: probes answered 429 say the backend is up
// and out of quota; they do not count as failures in a row (the bug: two
// 429 probes benched a backend past its Retry-After).
func TestThrottledProbesDoNotBench(t *testing.T) {
	g, _, p := probeEnv(t, "{interval: 10s, failures: 2}", upstreamtest.Status(429, "Retry-After", "1"))
	p.once(context.Background())
	p.once(context.Background())
	if s := p.snapshot(); !s.Up || s.Failures != 0 || s.Result != "429" {
		t.Fatalf("probe %+v, want up and throttled", s)
	}
	if st := g.Backend("weu").Breaker.Snapshot().State; st != breaker.Closed {
		t.Fatalf("breaker %v after 429 probes", st)
	}
}

// TestProbeTimeoutIsLabelledTimeout: a probe that gets no answer in its
// timeout is a "timeout", not "client_canceled" (the bug), and the timeout
// runs on the gateway's clock.
func TestProbeTimeoutIsLabelledTimeout(t *testing.T) {
	clk := fakeclock.New()
	arrived := make(chan struct{}, 1)
	hang := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}
	w := upstreamtest.New(t, hang)
	y := fmt.Sprintf(`log: {level: error}
backends:
  - {name: weu, type: openai, url: %q, probe: {interval: 10s, timeout: 3s}}
pools:
  - name: chat
    members: [{backend: weu}]
`, w.URL+"/v1")
	cfg, err := config.Parse("p.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{Clock: clk, Logger: NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	g.mu.Lock()
	p := g.probes.byBackend["weu"]
	g.mu.Unlock()
	// The first probe, at start, hangs until the clock moves past its 3 s.
	<-arrived
	clk.BlockUntilTimer(t.Context(), 3*time.Second)
	clk.Advance(3 * time.Second)
	// Once the probe is recorded, the prober arms its 5 s recovery wait.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a guard against a hang, not a timing assertion
	defer cancel()
	clk.BlockUntilTimer(ctx, 5*time.Second)
	if s := p.snapshot(); s.Up || s.Result != "timeout" {
		t.Fatalf("probe %+v, want a timeout", s)
	}
}
