package gateway_test

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// maxAddedAllocs bounds the allocations the gateway adds to one plain
// chat call (TestGatewayAllocationsPerCall): 98.4 since HTTP/1.1 calls
// to http:// backends go through internal/h1 (Go 1.26; 127.8 over
// net/http's transport, 137.5 before issue 26's second round, 162.5
// before the first), of which net/http's server and ReadResponse make
// about 55 whatever the handler does (a bare httputil.ReverseProxy adds
// about 100), and a little slack.
const maxAddedAllocs = 103

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
	h := startAnswering(t,
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

// maxOwnAllocs bounds the gateway's own allocations for one plain chat
// call (TestGatewayOwnAllocationsPerCall): those made under the API
// handler, leaving out net/http's transport call to the upstream
// (Transport.roundTrip): 38.3–38.8 when issue 26's work on them ended
// (Go 1.26; 48 before), and the target is 40.
const maxOwnAllocs = 40

// TestGatewayOwnAllocationsPerCall counts the allocations of a plain chat
// call made by the gateway's own code, as docs/performance.md counts
// them from BenchmarkGatewayChat's heap profile: every allocation whose
// stack has the API handler (apiGuard.ServeHTTP) and not the transport's
// call (Transport.roundTrip), with the heap profile recording every
// allocation. Net/http's server reading the request and its transport
// are left out, so the figure moves only with our code. When it fails,
// the test lists what it counted.
func TestGatewayOwnAllocationsPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := startAnswering(t,
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) })
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = rate }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	call := func() {
		req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chat))
		req.Header.Set("Authorization", "Bearer "+appKey)
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
	before := ownAllocs(t)
	const n = 500
	for range n {
		call()
	}
	after := ownAllocs(t)
	total, by := 0, map[string]int{}
	for stack, a := range after {
		if d := a - before[stack]; d > 0 {
			total += d
			by[strings.SplitN(stack, "\n", 2)[0]] += d
		}
	}
	own := float64(total) / n
	t.Logf("%.1f of the gateway's own allocations a call", own)
	if own > maxOwnAllocs {
		fs := slices.Collect(maps.Keys(by))
		slices.SortFunc(fs, func(a, b string) int { return by[b] - by[a] })
		for _, f := range fs {
			t.Logf("%6.2f %s", float64(by[f])/n, f)
		}
		t.Errorf("the gateway's own code allocates %.1f times a plain chat call, over %d", own, maxOwnAllocs)
	}
}

// inTransport reports whether a stack is under the upstream call of a
// backend's transport: net/http's (https, HTTP/2) or internal/h1's
// (HTTP/1.1 to http:// backends: the call, and the reads of the body).
func inTransport(stack string) bool {
	for _, f := range []string{"net/http.(*Transport).roundTrip", "internal/h1.(*Transport).RoundTrip", "internal/h1.(*body).Read"} {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}

// ownAllocs returns, by stack (its functions, innermost first, one a
// line), the objects allocated so far under the gateway's API handler and
// not under the transport's call, from the heap profile after two
// collections (a profile is up to two cycles old).
func ownAllocs(t *testing.T) map[string]int {
	runtime.GC()
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	var objects int
	var stack []string
	flush := func() {
		joined := strings.Join(stack, "\n")
		if objects > 0 && strings.Contains(joined, "gateway.(*apiGuard).ServeHTTP") && !inTransport(joined) {
			out[joined] += objects
		}
		objects, stack = 0, stack[:0]
	}
	for line := range strings.Lines(buf.String()) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#") && strings.Contains(line, "\t"):
			// "#	0x4a1b2c	pkg.func+0x1c	file:line"
			if f := strings.Fields(line); len(f) >= 3 {
				fn, _, _ := strings.Cut(f[2], "+0x")
				stack = append(stack, fn)
			}
		case strings.Contains(line, "] @ "):
			// "inuse_objects: inuse_bytes [alloc_objects: alloc_bytes] @ pcs"
			flush()
			open := strings.Index(line, "[")
			colon := strings.Index(line[open:], ":")
			objects, _ = strconv.Atoi(strings.TrimSpace(line[open+1 : open+colon]))
		}
	}
	flush()
	return out
}
