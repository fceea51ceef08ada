package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/gcptest"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/testpki"
	"github.com/switchover-gw/switchover/sim"
)

// The slow regions: every provider type as the first member of a pool of
// the README's shape (a key, priorities, retry, the default timeouts),
// against simulated regions whose answers take several seconds, as real
// regions' do; a fast OpenAI-compatible member is each pool's second.
// The simulator waits out its latency on the engine's fake clock, so a
// 3 s answer costs the test no real time.

// slowMedian is the simulated regions' latency: the median of a real
// region's chat answer, and of its streams' first token.
const slowMedian = 3 * time.Second

const (
	slowAWSKey    = "AKIDSLOWREGIONS"
	slowAWSSecret = "slow-regions-aws-secret-0123456789"
	slowFoundry   = "foundry-key-slow-0123456789"
	slowGroq      = "gsk-slow-0123456789abcdef"
	slowAzure     = "azure-key-slow-0123456789"
)

// clockWaiter waits out the simulator's latency on a fake clock, and
// counts the waits under way.
type clockWaiter struct {
	c       *fakeclock.Clock
	waiting *atomic.Int64
}

func (w clockWaiter) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	w.waiting.Add(1)
	defer w.waiting.Add(-1)
	done := make(chan struct{})
	t := w.c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// slowProviders are the slow regions' pools: the pool's name, its first
// member (the provider under test) and the sim deployment behind it.
var slowProviders = []string{"bedrock", "vertex-gemini", "vertex-claude", "foundry", "groq", "aoai"}

type slowRegions struct {
	*served
	clk   *fakeclock.Clock
	calls int // calls made through call, each one request line
	// waiting counts the simulator's latency waits under way.
	waiting *atomic.Int64
}

// startSlow starts the simulated regions (edit changes the simulated
// side) on a fake clock set to the wall clock's reading (Bedrock's
// signatures are made on the wall clock and checked on the simulator's)
// and serves the pools.
func startSlow(t *testing.T, edit func(*sim.Deployment)) *slowRegions {
	t.Helper()
	return startSlowWith(t, edit, nil)
}

// startSlowWith is startSlow with the YAML passed through mod.
func startSlowWith(t *testing.T, edit func(*sim.Deployment), mod func(string) string) *slowRegions {
	t.Helper()
	return startSlowOver(t, false, edit, mod)
}

// startSlowOver is startSlowWith, over TLS when secure: the simulator's
// listeners serve a certificate of a CA made for the test, which every
// backend trusts through its ca_file.
func startSlowOver(t *testing.T, secure bool, edit func(*sim.Deployment), mod func(string) string) *slowRegions {
	t.Helper()
	clk := fakeclock.New()
	clk.Advance(time.Since(clk.Now()))
	acct := gcptest.NewAccount(t, vertexSimToken)
	lat := sim.Latency{Median: slowMedian}
	deps := []sim.Deployment{
		{Name: "bedrock", Flavour: sim.Bedrock, Deployment: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Region: "us-east-1", Key: slowAWSKey + ":" + slowAWSSecret, Latency: lat},
		{Name: "vertex-gemini", Flavour: sim.Vertex, Deployment: "gemini-2.5-pro", Key: vertexSimToken, Project: "sim-project", Location: "us-east5", Latency: lat},
		{Name: "vertex-claude", Flavour: sim.Vertex, Deployment: "claude-sonnet-4-5@20250929", Key: vertexSimToken, Project: "sim-project", Location: "us-east5", Latency: lat},
		{Name: "foundry", Flavour: sim.Azure, Deployment: "Llama-3.3-70B-Instruct", Key: slowFoundry, Latency: lat},
		{Name: "groq", Flavour: sim.OpenAI, Deployment: "llama-3.3-70b-versatile", Key: slowGroq, Latency: lat, Reply: sim.Reply{OmitUsage: true}},
		{Name: "aoai", Flavour: sim.Azure, Deployment: "gpt-4o", Key: slowAzure, Latency: lat, Operations: []string{"chat"}},
		{Name: "fast", Flavour: sim.OpenAI, Deployment: "gpt-4o-mini"},
	}
	for i := range deps {
		if edit != nil {
			edit(&deps[i])
		}
	}
	waiting := new(atomic.Int64)
	opts := []sim.Option{sim.WithClock(clk), sim.WithWaiter(clockWaiter{clk, waiting})}
	var caFile string
	if secure {
		ca := testpki.NewCA(t, "slow regions CA")
		cert, err := tls.X509KeyPair(ca.Server(t, "sim", "127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, sim.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
		caFile = testpki.Write(t, t.TempDir(), "ca.pem", ca.PEM)
	}
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: deps}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u := map[string]string{}
	for _, e := range s.Deployments() {
		u[e.Name] = e.URL
	}
	var y strings.Builder
	fmt.Fprintf(&y, `log: {format: json, level: debug}
server: {drain_delay: 0s}
keys:
  - name: app-team
    key: %s
backends:
  - {name: bedrock, type: bedrock, url: %q, region: us-east-1, aws: {access_key_id: %s, secret_access_key: %s}}
  - {name: vertex-gemini, type: vertex, url: %q, project: sim-project, location: us-east5, credentials_file: %q}
  - {name: vertex-claude, type: vertex, url: %q, project: sim-project, location: us-east5, credentials_file: %q}
  - {name: foundry, type: foundry, url: %q, api_key: %s}
  - {name: groq, preset: groq, url: %q, api_key: %s}
  - {name: aoai, type: azure, url: %q, api_key: %s, region: westeurope}
  - {name: fast, type: openai_compatible, url: %q}
pools:
`, appKey, u["bedrock"], slowAWSKey, slowAWSSecret, u["vertex-gemini"], acct.File, u["vertex-claude"], acct.File,
		u["foundry"]+"/models", slowFoundry, u["groq"], slowGroq, u["aoai"], slowAzure, u["fast"])
	for _, d := range deps[:len(deps)-1] {
		fmt.Fprintf(&y, "  - name: %s\n    retry: {attempts: 3}\n    members:\n      - {backend: %s, priority: 1, model: %q}\n      - {backend: fast, priority: 2, model: gpt-4o-mini}\n", d.Name, d.Name, d.Deployment)
	}
	yml := y.String()
	if secure {
		yml = strings.ReplaceAll(yml, `url: "https://`, fmt.Sprintf(`ca_file: %q, url: "https://`, caFile))
	}
	if mod != nil {
		yml = mod(yml)
	}
	sv := serveDeps(t, yml, Deps{Clock: clk})
	sv.sim = s
	t.Cleanup(func() {
		for _, sec := range []string{slowAWSSecret, vertexSimToken, slowFoundry, slowGroq, slowAzure, appKey} {
			if strings.Contains(sv.logs.String(), sec) {
				t.Errorf("a secret reached the log")
			}
		}
	})
	return &slowRegions{served: sv, clk: clk, waiting: waiting}
}

// slowAnswer is what a call through the slow regions got.
type slowAnswer struct {
	status int
	header http.Header
	body   string
	err    error
}

// call sends body to path with the key, in the background.
func (s *slowRegions) call(path, body string) <-chan slowAnswer {
	s.calls++
	ch := make(chan slowAnswer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+appKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			ch <- slowAnswer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ch <- slowAnswer{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
	}()
	return ch
}

func chatBody(pool string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%t,"max_tokens":8,"messages":[{"role":"user","content":"How far is the moon?"}]}`, pool, stream)
}

// lastLine is the request log's newest line.
func (s *slowRegions) lastLine(t *testing.T) map[string]any {
	t.Helper()
	var lines []map[string]any
	poll.Until(t, 10*time.Second, func() bool {
		lines = requestLines(t, s.logs.String())
		return len(lines) >= s.calls
	}, func() string { return fmt.Sprintf("%d request lines, want %d", len(lines), s.calls) })
	return lines[len(lines)-1]
}

// roundTrip sends a call and moves the clock by step while the simulator
// waits out a latency, until the call is answered (at most n steps); with
// force, also while the simulator waits for nothing (a hung region: the
// engine's own timers must run). The clock never moves while the engine
// works in real time, so a busy machine changes nothing the test sees.
func (s *slowRegions) roundTrip(t *testing.T, path, body string, step time.Duration, n int) slowAnswer {
	t.Helper()
	return s.roundTripForce(t, path, body, step, n, false)
}

func (s *slowRegions) roundTripForce(t *testing.T, path, body string, step time.Duration, n int, force bool) slowAnswer {
	t.Helper()
	ch := s.call(path, body)
	idle := 0
	for steps := 0; ; {
		select {
		case a := <-ch:
			if a.err != nil {
				t.Fatal(a.err)
			}
			return a
		case <-time.After(10 * time.Millisecond):
		}
		if !force && s.waiting.Load() == 0 {
			if idle++; idle > 3000 {
				t.Fatal("no answer, and the simulator waits for nothing")
			}
			continue
		}
		if steps++; steps > n {
			t.Fatalf("no answer after %d steps of %s", n, step)
		}
		s.clk.Advance(step)
	}
}

// instant sends a call that needs no time on the clock (its region
// answers at once) and waits for its answer.
func (s *slowRegions) instant(t *testing.T, path, body string) slowAnswer {
	t.Helper()
	select {
	case a := <-s.call(path, body):
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	panic("unreachable")
}

// TestSlowRegionsAnswerWithinDefaultTimeouts: a healthy region of every
// provider type whose answers and streams' first tokens take 3 s is
// answered by that region on the first attempt with the default timeouts,
// plain and streamed; an answer without usage (Groq's, a Foundry stream)
// is counted by estimate and marked so, the others as they report it.
func TestSlowRegionsAnswerWithinDefaultTimeouts(t *testing.T) {
	for _, p := range slowProviders {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", p, stream), func(t *testing.T) {
				s := startSlow(t, nil)
				ch := s.call("/v1/chat/completions", chatBody(p, stream))
				if err := s.clk.BlockUntilTimer(t.Context(), slowMedian); err != nil {
					t.Fatal(err)
				}
				s.clk.Advance(slowMedian)
				a := <-ch
				if a.err != nil || a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != p || a.header.Get("X-Switchover-Attempts") != "1" {
					t.Fatalf("%d %v %v\n%s", a.status, a.err, a.header, a.body)
				}
				if stream && !strings.Contains(a.body, "data: [DONE]") || !strings.Contains(a.body, "content") {
					t.Fatalf("answer %s", a.body)
				}
				l := s.lastLine(t)
				if l["tried"] != p+"=200 3000ms" {
					t.Errorf("tried %v", l["tried"])
				}
				estimated := p == "groq" || (p == "foundry" && stream)
				if l["completion_tokens"] == nil || l["prompt_tokens"] == nil || (l["usage_estimated"] == true) != estimated {
					t.Errorf("usage %v/%v estimated %v, want estimated %t", l["prompt_tokens"], l["completion_tokens"], l["usage_estimated"], estimated)
				}
			})
		}
	}
}

// TestSlowRegionsFailOverBeforeFirstByte: every provider type's region
// down (its own 5xx), hung (no answer) or deleted (404) is failed over
// to the pool's second member before a byte reaches the client, plain
// and streamed; a hung region is found by its health check (15 s, 5 s
// for streams, before it has answered, plus the check's 5 s), before the
// default first-byte timeouts (120 s, 30 s for streams) end.
func TestSlowRegionsFailOverBeforeFirstByte(t *testing.T) {
	for _, p := range slowProviders {
		for _, mode := range []sim.FaultMode{sim.FaultDown, sim.FaultBlackhole, sim.FaultNotFound} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%t", p, mode, stream), func(t *testing.T) {
					s := startSlow(t, nil)
					s.sim.SetFault(p, sim.Fault{Mode: mode})
					began := s.clk.Now()
					a := s.roundTripForce(t, "/v1/chat/completions", chatBody(p, stream), time.Second, 60, mode == sim.FaultBlackhole)
					if a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != "fast" || a.header.Get("X-Switchover-Attempts") != "2" {
						t.Fatalf("%d %v\n%s", a.status, a.header, a.body)
					}
					tried, _ := s.lastLine(t)["tried"].(string)
					want := map[sim.FaultMode]string{sim.FaultDown: "=5", sim.FaultBlackhole: "=unresponsive", sim.FaultNotFound: "=404 backend_misconfigured"}[mode]
					if p == "vertex-claude" && mode == sim.FaultDown {
						want = "=529" // Claude's overloaded, as Anthropic's API answers
					}
					if !strings.HasPrefix(tried, p+want) {
						t.Errorf("tried %q, want %s%s…", tried, p, want)
					}
					// The clock moves in steps while a hung region is waited
					// on, so this is a bound, not a measurement.
					if took := s.clk.Now().Sub(began); took >= 30*time.Second {
						t.Errorf("failed over after %s", took)
					}
				})
			}
		}
	}
}

// TestSlowFallbackAnsweringDuringItsCheckIsNotBenched: a slow but healthy
// fallback (Bedrock, 3 s a call) behind a fast primary that fails is
// judged, until it has answered eight calls, by the primary's times: its
// calls are slow by that measure and it gets health checks bounded at 2 s,
// which its one-token calls outlast. It used to be benched as unresponsive
// although its calls were answered while the check waited, and every call
// then failed (504, then 503); a call answered during the check is a sign
// of life, and the fallback serves.
func TestSlowFallbackAnsweringDuringItsCheckIsNotBenched(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			s := startSlowWith(t, nil, func(y string) string {
				return strings.Replace(y, "      - {backend: bedrock, priority: 1, model: \"us.anthropic.claude-sonnet-4-5-20250929-v1:0\"}\n      - {backend: fast, priority: 2, model: gpt-4o-mini}",
					"      - {backend: fast, priority: 1, model: gpt-4o-mini}\n      - {backend: bedrock, priority: 2, model: \"us.anthropic.claude-sonnet-4-5-20250929-v1:0\"}", 1)
			})
			for range 10 {
				if a := s.roundTrip(t, "/v1/chat/completions", chatBody("bedrock", stream), time.Second, 10); a.header.Get("X-Switchover-Backend") != "fast" {
					t.Fatalf("warm-up answered by %q", a.header.Get("X-Switchover-Backend"))
				}
			}
			s.sim.SetFault("fast", sim.Fault{Mode: sim.FaultDown})
			for i := range 6 {
				a := s.roundTrip(t, "/v1/chat/completions", chatBody("bedrock", stream), 500*time.Millisecond, 40)
				if a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != "bedrock" {
					t.Fatalf("call %d with the primary down: %d from %q, tried %v", i, a.status, a.header.Get("X-Switchover-Backend"), s.lastLine(t)["tried"])
				}
			}
			if st := s.engine.Backends["bedrock"].Breaker.Snapshot().State; st != breaker.Closed {
				t.Errorf("bedrock's breaker is %v", st)
			}
		})
	}
}

// TestSlowRegionsThrottleFailsOverAndWaits: every provider type's region
// throttled in its own shape (Azure's, Foundry's and Groq's 429 with
// Retry-After and rate-limit headers, Bedrock's ThrottlingException and
// Vertex's RESOURCE_EXHAUSTED without either) sends the call to the
// pool's second member, plain and streamed. With quota-aware routing
// (the default) a region whose headers say it is spent gets no call until
// its window resets; without, its 429's Retry-After benches it for that
// long; Bedrock and Vertex, which send neither, are asked again and
// counted by the breaker. Once the quota's slice has ended (read from
// the answer's arrival, so the hold ends up to one answer's time late)
// the region serves again.
func TestSlowRegionsThrottleFailsOverAndWaits(t *testing.T) {
	for _, p := range slowProviders {
		for _, aware := range []bool{true, false} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/aware=%t/stream=%t", p, aware, stream), func(t *testing.T) {
					var mod func(string) string
					if !aware {
						mod = func(y string) string {
							return strings.Replace(y, "backends:\n", "backend_defaults: {quota_aware: false}\nbackends:\n", 1)
						}
					}
					s := startSlowWith(t, nil, mod)
					s.sim.SetFault(p, sim.Fault{Mode: sim.FaultQuota, RPM: 6}) // one call a 10 s slice
					began := s.clk.Now()
					if a := s.roundTrip(t, "/v1/chat/completions", chatBody(p, stream), time.Second, 10); a.header.Get("X-Switchover-Backend") != p {
						t.Fatalf("first call answered by %q", a.header.Get("X-Switchover-Backend"))
					}
					headers := p == "aoai" || p == "foundry" || p == "groq"
					for i := range 2 {
						a := s.instant(t, "/v1/chat/completions", chatBody(p, stream))
						tried, _ := s.lastLine(t)["tried"].(string)
						want := p + "=429 rate_limited 0ms, fast=200 0ms"
						if headers && (aware || i == 1) {
							want = "fast=200 0ms" // held by its headers, or benched for its Retry-After
						}
						if a.status != http.StatusOK || tried != want {
							t.Fatalf("throttled call %d: %d, tried %q, want %q", i, a.status, tried, want)
						}
					}
					s.clk.Advance(began.Add(10*time.Second + slowMedian).Sub(s.clk.Now()))
					if a := s.roundTrip(t, "/v1/chat/completions", chatBody(p, stream), time.Second, 10); a.header.Get("X-Switchover-Backend") != p {
						t.Fatalf("after the slice: answered by %q, tried %v", a.header.Get("X-Switchover-Backend"), s.lastLine(t)["tried"])
					}
				})
			}
		}
	}
}

// TestSlowRegionsOperationMissingBenchesNothing: an Azure region without
// an embeddings deployment answers 404 DeploymentNotFound for
// embeddings: the call fails over, the region is passed over for
// embeddings alone (the next embeddings call does not reach it), and it
// goes on serving chat.
func TestSlowRegionsOperationMissingBenchesNothing(t *testing.T) {
	s := startSlow(t, nil)
	emb := `{"model":"aoai","input":"the moon"}`
	for i := range 2 {
		a := s.instant(t, "/v1/embeddings", emb)
		if a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != "fast" {
			t.Fatalf("embeddings %d: %d from %q\n%s", i, a.status, a.header.Get("X-Switchover-Backend"), a.body)
		}
		t.Logf("embeddings %d: tried %v", i, s.lastLine(t)["tried"])
	}
	if n := s.sim.Stats()["aoai"].Calls; n != 1 {
		t.Errorf("aoai got %d embeddings calls, want 1", n)
	}
	if st := s.engine.Backends["aoai"].Breaker.Snapshot().State; st != breaker.Closed {
		t.Errorf("aoai's breaker is %v", st)
	}
	if a := s.roundTrip(t, "/v1/chat/completions", chatBody("aoai", true), time.Second, 10); a.header.Get("X-Switchover-Backend") != "aoai" {
		t.Fatalf("chat answered by %q", a.header.Get("X-Switchover-Backend"))
	}
}

// TestSlowRegionsOverTLS: the slow regions behind TLS (HTTP/2 offered),
// their CA trusted through each backend's ca_file: every provider type
// answers plain and streamed calls as over plain HTTP, and a region down
// still fails over before the first byte.
func TestSlowRegionsOverTLS(t *testing.T) {
	s := startSlowOver(t, true, nil, nil)
	for _, p := range slowProviders {
		for _, stream := range []bool{false, true} {
			a := s.roundTrip(t, "/v1/chat/completions", chatBody(p, stream), time.Second, 10)
			if a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != p {
				t.Fatalf("%s stream=%t: %d from %q, tried %v\n%s", p, stream, a.status, a.header.Get("X-Switchover-Backend"), s.lastLine(t)["tried"], a.body)
			}
		}
	}
	s.sim.SetFault("bedrock", sim.Fault{Mode: sim.FaultDown})
	if a := s.instant(t, "/v1/chat/completions", chatBody("bedrock", true)); a.header.Get("X-Switchover-Backend") != "fast" {
		t.Fatalf("bedrock down: answered by %q", a.header.Get("X-Switchover-Backend"))
	}
	for _, e := range s.sim.Deployments() {
		if !strings.HasPrefix(e.URL, "https://") {
			t.Errorf("%s is at %s", e.Name, e.URL)
		}
	}
}

// TestSlowRegionsStreamsCutShort: a slow region's stream that ends
// cleanly before its end (no finish, no usage) is counted by estimate and
// marked so, for every provider type; one that stalls after its first
// event, before any content (a role chunk, Azure's filter results,
// Anthropic's message_start, Converse's messageStart), fails over at the
// streams' first-byte timeout, except Gemini's, whose first event is
// content already on its way to the client.
func TestSlowRegionsStreamsCutShort(t *testing.T) {
	for _, p := range slowProviders {
		t.Run(p+"/truncated", func(t *testing.T) {
			s := startSlow(t, nil)
			s.sim.SetFault(p, sim.Fault{Mode: sim.FaultTruncateStream, After: 4})
			a := s.roundTrip(t, "/v1/chat/completions", chatBody(p, true), time.Second, 10)
			l := s.lastLine(t)
			if a.status != http.StatusOK || a.header.Get("X-Switchover-Backend") != p || l["usage_estimated"] != true || l["completion_tokens"] == nil {
				t.Fatalf("%d from %q: usage %v/%v estimated %v", a.status, a.header.Get("X-Switchover-Backend"), l["prompt_tokens"], l["completion_tokens"], l["usage_estimated"])
			}
		})
		t.Run(p+"/stalled", func(t *testing.T) {
			s := startSlow(t, nil)
			s.sim.SetFault(p, sim.Fault{Mode: sim.FaultStallStream, After: 1})
			a := s.roundTripForce(t, "/v1/chat/completions", chatBody(p, true), time.Second, 60, true)
			// Not fast's duration: the clock steps a second every 10 ms of
			// real time, so on a busy machine one step can fall within
			// fast's attempt ("fast=200 1000ms", CI 2026-12-04).
			want, tried := "fast", p+"=200 first_byte_timeout 30000ms, fast=200 "
			if p == "vertex-gemini" {
				want, tried = p, p+"=200 " // its time to first byte as the stepped clock read it
			}
			if l := s.lastLine(t); a.header.Get("X-Switchover-Backend") != want || !strings.HasPrefix(fmt.Sprint(l["tried"]), tried) {
				t.Fatalf("answered by %q, tried %v; want %s, %s", a.header.Get("X-Switchover-Backend"), l["tried"], want, tried)
			}
		})
	}
}
