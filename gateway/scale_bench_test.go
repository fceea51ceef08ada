package gateway_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/scaleconf"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// The costs that must not grow with the configuration: a request through
// the gateway costs the same with 1 and 100 members in its pool, 1 and
// 10,000 pools or aliases, 10 and 100,000 keys. docs/performance.md has
// the commands that compare the pairs, interleaved.

// scale is the shape of a generated configuration: the README's "Use it"
// configuration grown in one dimension (internal/scaleconf, as the
// bench's scale rows).
type scale = scaleconf.Shape

// base is the configuration the others grow from.
var base = scale{Members: 2, Pools: 1, Aliases: 1, Keys: 10}

// scaleCases are the pairs to compare, named as the benchmarks are.
var scaleCases = []struct {
	name string
	s    scale
}{
	{"members=1", with(func(s *scale) { s.Members = 1 })},
	{"members=100", with(func(s *scale) { s.Members = 100 })},
	{"members=100-flat", with(func(s *scale) { s.Members, s.Flat = 100, true })},
	{"pools=1", base},
	{"pools=10000", with(func(s *scale) { s.Pools = 10000 })},
	{"aliases=1", base},
	{"aliases=10000", with(func(s *scale) { s.Aliases = 10000 })},
	{"keys=10", base},
	{"keys=100000", with(func(s *scale) { s.Keys = 100000 })},
}

func with(f func(*scale)) scale {
	s := base
	f(&s)
	return s
}

// scaleYAML is the configuration file of s, its backends at upstream;
// requests ask for s.Model(), the called pool's last alias.
func scaleYAML(s scale, upstream string) string {
	return s.YAML(upstream, scaleconf.Options{
		Head:        "listen: 127.0.0.1:0\nlog: {format: json, level: warn}\nserver: {max_body: 64KiB, shutdown_grace: 5s, drain_delay: 0s}\n",
		AppKey:      "${TEST_APP_KEY}",
		BackendKey:  func(int) string { return "${TEST_WEU_KEY}" },
		MemberModel: "gpt-4o",
	})
}

// scaleUpstream is a loopback upstream that answers every call with a chat
// completion and its rate-limit headers, and counts the connections made
// to it.
type scaleUpstream struct {
	*httptest.Server
	conns atomic.Int64
}

func newScaleUpstream(tb testing.TB) *scaleUpstream {
	u := &scaleUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Ratelimit-Limit-Requests", "100000")
		h.Set("X-Ratelimit-Remaining-Requests", "99999")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.Start()
	tb.Cleanup(u.Close)
	return u
}

// startScaled serves the configuration of s, written to a file, in front
// of up.
func startScaled(tb testing.TB, s scale, up *scaleUpstream) *harness {
	tb.Helper()
	y := scaleYAML(s, up.URL)
	unused := []upstreamtest.Step{answer("unused")}
	return startWith(tb, gateway.Options{}, unused, unused, "", func(string) string { return y })
}

// scaleClient sends one chat completion at a time to a gateway.
type scaleClient struct {
	client *http.Client
	url    string
	body   string
}

func newScaleClient(h *harness, model string) *scaleClient {
	return &scaleClient{
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		url:    h.url + "/v1/chat/completions",
		body:   `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`,
	}
}

// do sends the request; it returns the status, or an error.
func (c *scaleClient) do() (int, error) {
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(c.body))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (c *scaleClient) must(tb testing.TB) {
	if st, err := c.do(); err != nil || st != http.StatusOK {
		tb.Fatalf("status %d, %v", st, err)
	}
}

// cpuTime is the process's user and system CPU time so far, in
// nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkGatewayChatScale is one chat completion at a time through the
// gateway, as BenchmarkGatewayChat, for each configuration of scaleCases.
// Besides ns/op and allocs/op it reports cpu-ns/op: the process's CPU
// time (client, gateway and upstream) per request. Compare the pairs of
// one run; nothing here is asserted against the clock.
func BenchmarkGatewayChatScale(b *testing.B) {
	for _, tc := range scaleCases {
		b.Run(tc.name, func(b *testing.B) {
			up := newScaleUpstream(b)
			h := startScaled(b, tc.s, up)
			c := newScaleClient(h, tc.s.Model())
			for range 20 { // connections and first answers
				c.must(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for b.Loop() {
				c.must(b)
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestAllocationsDoNotGrowWithTheConfiguration: a request through the
// gateway allocates as often with 100 members in its pool as with one,
// with 10,000 pools or aliases as with one, with 20,000 keys as with 10
// (the benchmark's 100,000 keys take long to load in a test). The
// counts are of the whole process (client, gateway, upstream), averaged
// over many requests; they may differ by one for net/http's own
// bookkeeping, not by anything that grows.
func TestAllocationsDoNotGrowWithTheConfiguration(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	if testing.Short() {
		t.Skip("starts gateways with large configurations")
	}
	allocs := func(s scale) float64 {
		up := newScaleUpstream(t)
		h := startScaled(t, s, up)
		c := newScaleClient(h, s.Model())
		for range 50 {
			c.must(t)
		}
		return testing.AllocsPerRun(300, func() { c.must(t) })
	}
	for _, tc := range []struct {
		whatGrows  string
		small, big scale
	}{
		{"members", with(func(s *scale) { s.Members = 1 }), with(func(s *scale) { s.Members = 100 })},
		{"pools", base, with(func(s *scale) { s.Pools = 10000 })},
		{"aliases", base, with(func(s *scale) { s.Aliases = 10000 })},
		{"keys", base, with(func(s *scale) { s.Keys = 20000 })},
	} {
		t.Run(tc.whatGrows, func(t *testing.T) {
			small, big := allocs(tc.small), allocs(tc.big)
			t.Logf("%s: %.0f allocations a request small, %.0f big", tc.whatGrows, small, big)
			if big > small+1 {
				t.Errorf("more %s: %.0f allocations a request, against %.0f", tc.whatGrows, big, small)
			}
		})
	}
}
