package gateway_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// maxAddedAllocs bounds the allocations the gateway adds to one plain
// chat call (TestGatewayAllocationsPerCall): 137.5 when issue 26's work
// on the gateway's own cost ended (Go 1.26; 162.5 before), of which
// net/http's server and transport make about 85 whatever the handler
// does (a bare httputil.ReverseProxy adds about 100), and a little slack.
const maxAddedAllocs = 145

// TestGatewayAllocationsPerCall guards the gateway's cost per request in
// allocations, which are deterministic where times are not: those of a
// plain chat call through the gateway (README-like config: keys, two
// backends, a breaker), less those of the same call straight to an
// upstream (the client's and the upstream server's own), must stay under
// maxAddedAllocs. When it fails, profile BenchmarkGatewayChat
// (-memprofile, -memprofilerate 1, pprof -sample_index=alloc_objects)
// and find what was added.
func TestGatewayAllocationsPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "",
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) })
	u := upstreamtest.New(t, answer("weu"))
	gw := allocsPerCall(t, h.url+"/v1/chat/completions", "Bearer "+appKey)
	direct := allocsPerCall(t, u.URL+"/openai/deployments/x/chat/completions?api-version=2024-10-21", "")
	added := gw - direct
	t.Logf("%.1f allocations a call through the gateway, %.1f straight: %.1f added", gw, direct, added)
	if added > maxAddedAllocs {
		t.Errorf("the gateway adds %.1f allocations to a plain chat call, over %d: see what was added with BenchmarkGatewayChat's heap profile", added, maxAddedAllocs)
	}
}

// allocsPerCall returns the heap allocations the process makes for one
// POST of chat to url, on a kept-alive connection, averaged over calls.
func allocsPerCall(t *testing.T, url, auth string) float64 {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(chat))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	for range 50 { // connections, pools and caches warmed
		call()
	}
	const n = 500
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		call()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / n
}
