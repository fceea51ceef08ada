package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/sim"
)

func TestPercentilesExact(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 100ms .. 1ms, unsorted
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := NewPercentiles(ds)
	if p.N != 100 || p.P50 != 50*time.Millisecond || p.P95 != 95*time.Millisecond || p.P99 != 99*time.Millisecond || p.Max != 100*time.Millisecond {
		t.Fatalf("percentiles %+v", p)
	}
	if ds[0] != 100*time.Millisecond {
		t.Fatal("input was sorted in place")
	}
	one := NewPercentiles([]time.Duration{7})
	if one.P50 != 7 || one.P99 != 7 {
		t.Fatalf("single sample %+v", one)
	}
	if (NewPercentiles(nil) != Percentiles{}) {
		t.Fatal("empty sample")
	}
}

func TestSummarize(t *testing.T) {
	samples := []Sample{
		{Start: 0, Latency: 100 * time.Millisecond, Status: 200, OK: true, Backend: "a"},
		{Start: 100 * time.Millisecond, Latency: 300 * time.Millisecond, Status: 200, OK: true, Backend: "b", Failover: true},
		{Start: 200 * time.Millisecond, Latency: 10 * time.Millisecond, Status: 429, Failure: "429"},
		{Start: 900 * time.Millisecond, Latency: 1100 * time.Millisecond, Failure: "timeout"},
	}
	s := Summarize(samples, 3)
	if s.Requests != 4 || s.Succeeded != 2 || s.Failed != 2 || s.Dropped != 3 || s.SuccessRate != 0.5 {
		t.Fatalf("counts %+v", s)
	}
	if s.Duration != 2*time.Second || s.Throughput != 2 || s.Goodput != 1 {
		t.Fatalf("rates: duration %v throughput %v goodput %v", s.Duration, s.Throughput, s.Goodput)
	}
	if s.Failovers != 1 || s.ByBackend["a"] != 1 || s.ByBackend["b"] != 1 {
		t.Fatalf("failovers %d by backend %v", s.Failovers, s.ByBackend)
	}
	if got := s.FailureKinds(); len(got) != 2 || got[0] != "429" || got[1] != "timeout" {
		t.Fatalf("kinds %v", got)
	}
	if s.FailedLatency.Max != 1100*time.Millisecond || s.Success.P50 != 100*time.Millisecond {
		t.Fatalf("latencies %+v %+v", s.FailedLatency, s.Success)
	}
}

// funcCaller adapts a function to Caller.
type funcCaller func(ctx context.Context, start time.Duration) Sample

func (f funcCaller) Call(ctx context.Context, start time.Duration) Sample { return f(ctx, start) }

// The open- and closed-model tests run in a synctest bubble: the load
// generator's arrival timers, the run's deadline and the callers' waits
// are on virtual time, which advances only when every goroutine in the
// bubble is blocked. The schedule is then exact and takes no real time,
// however busy the machine.

func TestOpenModelKeepsArrivingWhenTheTargetIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A target that answers nothing before 600ms, during a 490ms run
		// at 40/s: an open model still sends all 20 arrivals (0, 25ms,
		// ..., 475ms), all in flight together. The duration is off the
		// 25ms grid so no arrival ties with the deadline.
		var inFlight, peak atomic.Int64
		release := make(chan struct{})
		slow := funcCaller(func(ctx context.Context, start time.Duration) Sample {
			n := inFlight.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			inFlight.Add(-1)
			return Sample{Start: start, OK: true, Status: 200}
		})
		time.AfterFunc(600*time.Millisecond, func() { close(release) })
		began := time.Now()
		res, err := Run(t.Context(), Options{Rate: 40, Duration: 490 * time.Millisecond}, slow)
		if err != nil {
			t.Fatal(err)
		}
		if n := res.Summary.Requests; n != 20 {
			t.Fatalf("%d requests sent, want 20", n)
		}
		if p := peak.Load(); p != 20 {
			t.Fatalf("peak in flight %d of 20: arrivals waited for answers", p)
		}
		if res.Summary.Dropped != 0 {
			t.Fatalf("%d dropped", res.Summary.Dropped)
		}
		starts := make(map[time.Duration]bool)
		for _, s := range res.Samples {
			starts[s.Start] = true
		}
		for i := range 20 {
			if at := time.Duration(i) * 25 * time.Millisecond; !starts[at] {
				t.Errorf("no arrival at %v; arrivals %v", at, starts)
			}
		}
		// Run waits for the requests in flight, which the target holds
		// until 600ms.
		if d := time.Since(began); d != 600*time.Millisecond {
			t.Fatalf("run took %v, want 600ms", d)
		}
	})
}

func TestOpenModelDropsBeyondMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100/s for 295ms is 30 arrivals (0, 10ms, ..., 290ms); the
		// first 5 are held until 400ms, so the other 25 are dropped.
		release := make(chan struct{})
		hang := funcCaller(func(ctx context.Context, start time.Duration) Sample { <-release; return Sample{Start: start} })
		time.AfterFunc(400*time.Millisecond, func() { close(release) })
		res, err := Run(t.Context(), Options{Rate: 100, Duration: 295 * time.Millisecond, MaxInFlight: 5}, hang)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Requests != 5 || res.Summary.Dropped != 25 {
			t.Fatalf("sent %d, dropped %d; want 5 and 25", res.Summary.Requests, res.Summary.Dropped)
		}
		starts := make(map[time.Duration]bool)
		for _, s := range res.Samples {
			starts[s.Start] = true
		}
		for i := range 5 {
			if at := time.Duration(i) * 10 * time.Millisecond; !starts[at] {
				t.Errorf("no arrival at %v; arrivals %v", at, starts)
			}
		}
	})
}

func TestClosedModelTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 50 requests from 4 callers, each taking 1ms of virtual time: 13
		// rounds (12 full, one of 2), with all 4 callers busy together.
		var mu sync.Mutex
		concurrent, peak := 0, 0
		c := funcCaller(func(ctx context.Context, start time.Duration) Sample {
			mu.Lock()
			concurrent++
			peak = max(peak, concurrent)
			mu.Unlock()
			<-time.After(time.Millisecond) // the call's latency, virtual
			mu.Lock()
			concurrent--
			mu.Unlock()
			return Sample{Start: start, OK: true}
		})
		began := time.Now()
		res, err := Run(t.Context(), Options{Concurrency: 4, Total: 50}, c)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.Requests != 50 || peak != 4 {
			t.Fatalf("requests %d, peak concurrency %d; want 50 and 4", res.Summary.Requests, peak)
		}
		if d := time.Since(began); d != 13*time.Millisecond {
			t.Fatalf("run took %v, want 13ms", d)
		}
	})
}

func TestRunOptionsValidated(t *testing.T) {
	for _, o := range []Options{{}, {Rate: 1, Concurrency: 1, Duration: time.Second}, {Rate: 1}} {
		if _, err := Run(t.Context(), o, funcCaller(nil)); err == nil {
			t.Errorf("Run(%+v) accepted", o)
		}
	}
}

func TestHTTPCallerValidatesAnswers(t *testing.T) {
	chunk := `data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"
	tests := []struct {
		name    string
		stream  bool
		status  int
		body    string
		ok      bool
		failure string
	}{
		{"completion", false, 200, `{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`, true, ""},
		{"embeddings", false, 200, `{"data":[{"embedding":[0.1]}]}`, true, ""},
		{"empty content", false, 200, `{"choices":[{"message":{"content":""}}]}`, false, "invalid_body"},
		{"no choices", false, 200, `{"choices":[]}`, false, "invalid_body"},
		{"not JSON", false, 200, `<html>`, false, "invalid_body"},
		{"rate limited", false, 429, `{"error":{}}`, false, "429"},
		{"server error", false, 503, `{}`, false, "503"},
		{"stream", true, 200, chunk + chunk + "data: [DONE]\n\n", true, ""},
		{"stream without DONE", true, 200, chunk, false, "stream_error"},
		{"stream with error event", true, 200, chunk + `data: {"error":{"message":"broke"}}` + "\n\n", false, "stream_error"},
		{"stream with nothing", true, 200, "data: [DONE]\n\n", false, "stream_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Switchover-Backend", "weu")
				w.Header().Set("X-Switchover-Failover", "true")
				w.Header().Set("X-Switchover-Attempts", "2")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c := &HTTPCaller{URL: srv.URL, Request: Request{Stream: tc.stream}}
			s := c.Call(t.Context(), 0)
			if s.OK != tc.ok || s.Failure != tc.failure || s.Status != tc.status {
				t.Fatalf("sample %+v", s)
			}
			if s.Backend != "weu" || !s.Failover || s.Attempts != 2 {
				t.Fatalf("headers not read: %+v", s)
			}
		})
	}
}

func TestHTTPCallerTimeoutAndConnection(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // so the server watches the connection and sees the client go
		<-r.Context().Done()
	}))
	defer hang.Close()
	s := (&HTTPCaller{URL: hang.URL, Timeout: 100 * time.Millisecond}).Call(t.Context(), 0)
	if s.OK || s.Failure != "timeout" {
		t.Fatalf("hang: %+v", s)
	}
	closed := httptest.NewServer(nil)
	closed.Close()
	s = (&HTTPCaller{URL: closed.URL}).Call(t.Context(), 0)
	if s.OK || s.Failure != "connection" {
		t.Fatalf("refused: %+v", s)
	}
}

func TestWaitRetryAfter(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.Header().Set("Retry-After-Ms", "30")
			w.WriteHeader(429)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"content":"at last"}}]}`)
	}))
	defer srv.Close()
	s := (&HTTPCaller{URL: srv.URL, WaitRetryAfter: true}).Call(t.Context(), 0)
	if !s.OK || calls.Load() != 3 || s.Waited != 60*time.Millisecond || s.Latency < s.Waited {
		t.Fatalf("sample %+v after %d calls", s, calls.Load())
	}
	// A wait that does not fit in the timeout is not taken.
	calls.Store(0)
	s = (&HTTPCaller{URL: srv.URL, WaitRetryAfter: true, Timeout: 20 * time.Millisecond}).Call(t.Context(), 0)
	if s.OK || s.Failure != "429" || calls.Load() != 1 {
		t.Fatalf("sample %+v after %d calls", s, calls.Load())
	}
}

func TestStrategyConfigs(t *testing.T) {
	regions := []Region{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "b", Type: "openai", URL: "http://127.0.0.1:2/v1"}, {Name: "c", URL: "http://127.0.0.1:3"}}
	tests := []struct {
		name     string
		s        Strategy
		members  int
		attempts int
		prios    []int
		weights  []int
		breaker  bool
	}{
		{"direct", Strategy{Kind: "direct", Regions: regions}, 1, 1, []int{1}, []int{1}, false},
		{"weighted", Strategy{Kind: "weighted", Regions: regions, Weights: []int{90, 5, 5}}, 3, 3, []int{1, 1, 1}, []int{90, 5, 5}, false},
		{"sequential with cool-down", Strategy{Kind: "sequential", Regions: regions, CoolDown: time.Minute}, 3, 3, []int{1, 2, 3}, []int{1, 1, 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y, err := tc.s.Config("chat-prod")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse("strategy", []byte(y), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			p := cfg.Pools[0]
			if len(p.Members) != tc.members || p.Retry.Attempts != tc.attempts {
				t.Fatalf("pool %+v", p)
			}
			for i, m := range p.Members {
				if m.Priority != tc.prios[i] || m.Weight != tc.weights[i] {
					t.Fatalf("member %d %+v", i, m)
				}
			}
			b := cfg.Backends[0].Breaker
			if b.Disabled == tc.breaker || (tc.breaker && (b.Failures != 1 || b.Trip.D() != time.Minute || *b.FollowRetryAfter)) {
				t.Fatalf("breaker %+v", b)
			}
		})
	}
	for _, bad := range []Strategy{{Kind: "random", Regions: regions}, {Kind: "direct"}, {Kind: "weighted", Regions: regions, Weights: []int{1}}} {
		if _, err := bad.Config("m"); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestClientStrategyAgainstSimulator runs a client-side strategy on the
// routing engine straight to simulated regions, and counts model calls
// through the simulator's control API.
func TestClientStrategyAgainstSimulator(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Deployments: []sim.Deployment{
		{Name: "a", Deployment: "chat-prod", Quota: sim.Quota{RPM: 6}}, // one request per 10 s slice
		{Name: "b", Deployment: "chat-prod"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var regions []Region
	for _, e := range s.Deployments() {
		regions = append(regions, Region{Name: e.Name, URL: e.URL})
	}
	y, _ := Strategy{Kind: "sequential", Regions: regions}.Config("chat-prod")
	pool, closePool, err := ClientPool("strategy", []byte(y), "chat-prod")
	if err != nil {
		t.Fatal(err)
	}
	defer closePool()
	before, err := SimStats(t.Context(), s.ControlURL())
	if err != nil {
		t.Fatal(err)
	}
	c := &HTTPCaller{Client: &http.Client{Transport: pool}, URL: "http://client.invalid/v1/chat/completions", Request: Request{MaxTokens: 5}}
	res, err := Run(t.Context(), Options{Concurrency: 1, Total: 5}, c)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := SimStats(t.Context(), s.ControlURL())
	u := after.Sub(before)
	// a answers the first, refuses the other 4, which b answers: 9 calls.
	if res.Summary.SuccessRate != 1 || u.Calls != 9 || u.Refused != 4 || res.Summary.ByBackend["a"] != 1 || res.Summary.ByBackend["b"] != 4 {
		t.Fatalf("summary %+v, upstream %+v", res.Summary, u)
	}
	var out strings.Builder
	res.Summary.Upstream = &u
	WriteSummary(&out, res.Summary, false)
	for _, want := range []string{"success      100.00%", "answered by  a 1, b 4", "upstream     9 model calls"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	fmt.Fprint(io.Discard, out.String())
}
