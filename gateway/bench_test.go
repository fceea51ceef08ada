package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// BenchmarkGatewayChat measures one non-streaming chat completion through
// the whole gateway (HTTP in, auth, routing, HTTP out to a loopback
// upstream, response copied back), against BenchmarkDirectChat, the same
// call straight to the upstream. The difference is the gateway's cost.
func BenchmarkGatewayChat(b *testing.B) {
	h := startAnswering(b,
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) })
	benchPost(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
}

func BenchmarkDirectChat(b *testing.B) {
	u := upstreamtest.New(b, answer("weu"))
	benchPost(b, u.URL+"/openai/deployments/x/chat/completions?api-version=2024-10-21", "")
}

func benchPost(b *testing.B, url, auth string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(chat))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkGatewayChatLog is BenchmarkGatewayChat with the request log
// written as in production: to a file, or to a pipe drained by another
// goroutine (stderr read by journald or a container runtime). At warn
// there is no line per request; at info the line goes through the
// gateway's own buffered asynchronous writer, or, unbuffered, is one
// write per line as before. Compare the ns/op; nothing is asserted.
func BenchmarkGatewayChatLog(b *testing.B) {
	tests := []struct {
		name, level, output string
		buffered            bool
	}{
		{"warn/file", "warn", "file", true},
		{"info-buffered/file", "info", "file", true},
		{"info-unbuffered/file", "info", "file", false},
		{"warn/pipe", "warn", "pipe", true},
		{"info-buffered/pipe", "info", "pipe", true},
		{"info-unbuffered/pipe", "info", "pipe", false},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			out := logOutput(b, tt.output)
			opts := gateway.Options{LogOutput: out}
			if !tt.buffered {
				opts.Logger = gateway.NewLogger(out, "text", tt.level)
			}
			h := startWith(b, opts, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "",
				func(y string) string {
					return strings.Replace(strings.Replace(y, "level: debug", "level: "+tt.level, 1), "format: json", "format: text", 1)
				})
			benchPost(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
		})
	}
}

// logOutput is a file in a temporary directory, or the write end of a
// pipe whose read end a goroutine drains; closed when b ends.
func logOutput(b *testing.B, kind string) *os.File {
	if kind == "file" {
		f, err := os.Create(filepath.Join(b.TempDir(), "log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(drained)
	}()
	b.Cleanup(func() {
		w.Close()
		<-drained
		r.Close()
	})
	return w
}

// BenchmarkReverseProxyChat is BenchmarkDirectChat through Go's stock
// httputil.ReverseProxy and nothing else: what net/http alone costs a hop
// (its server reading the request, its transport calling the upstream).
// BenchmarkGatewayChat's allocations less this benchmark's are the
// gateway's own; nothing is asserted.
func BenchmarkReverseProxyChat(b *testing.B) {
	u := upstreamtest.New(b, answer("weu"))
	target, err := url.Parse(u.URL)
	if err != nil {
		b.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{MaxIdleConnsPerHost: 64},
	}
	front := httptest.NewServer(rp)
	b.Cleanup(front.Close)
	benchPost(b, front.URL+"/openai/deployments/x/chat/completions?api-version=2024-10-21", "")
}

// BenchmarkGatewayChatCacheHit is BenchmarkGatewayChat on a pool with
// the response cache: after the first call every call is a hit (or
// coalesced), answered without the upstream. Compare with
// BenchmarkGatewayChat: the hit's cost against a call's.
func BenchmarkGatewayChatCacheHit(b *testing.B) {
	h := startAnswering(b,
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) }, withCache("{ttl: 1h}"))
	benchPost(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
	if n := h.weu.Calls(); n != 1 {
		b.Errorf("%d upstream calls, want 1", n)
	}
}

// streamChatBody is chat asked for as a stream.
const streamChatBody = `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`

// BenchmarkGatewayStream measures one streamed chat completion of five
// content events through the whole gateway, one call at a time (the
// events held before the first content, each event flushed on its own),
// against BenchmarkDirectStream, the same stream straight from the
// upstream.
func BenchmarkGatewayStream(b *testing.B) {
	stream := upstreamtest.SSE("weu", 5, -1)
	h := start(b, []upstreamtest.Step{stream}, []upstreamtest.Step{stream}, "",
		func(y string) string { return strings.Replace(y, "level: debug", "level: warn", 1) })
	benchStream(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
}

func BenchmarkDirectStream(b *testing.B) {
	u := upstreamtest.New(b, upstreamtest.SSE("weu", 5, -1))
	benchStream(b, u.URL+"/openai/deployments/x/chat/completions?api-version=2024-10-21", "")
}

func benchStream(b *testing.B, url, auth string) {
	client := &http.Client{Transport: &http.Transport{}}
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(streamChatBody))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "weu-4") {
			b.Fatalf("status %d: %.200s", resp.StatusCode, body)
		}
	}
}
