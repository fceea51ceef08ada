package gateway_test

import (
	"io"
	"net/http"
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
	h := start(b, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "",
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
// written to a file, as it is to stderr in production: at warn (no line
// per request), at info through the gateway's own buffered asynchronous
// writer, and at info with one unbuffered write per line (as before). Compare
// the ns/op; nothing is asserted.
func BenchmarkGatewayChatLog(b *testing.B) {
	tests := []struct {
		name, level string
		buffered    bool
	}{
		{"warn", "warn", true},
		{"info-buffered", "info", true},
		{"info-unbuffered", "info", false},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			opts := gateway.Options{LogOutput: f}
			if !tt.buffered {
				opts.Logger = gateway.NewLogger(f, "text", tt.level)
			}
			h := startWith(b, opts, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "",
				func(y string) string {
					return strings.Replace(strings.Replace(y, "level: debug", "level: "+tt.level, 1), "format: json", "format: text", 1)
				})
			benchPost(b, h.url+"/v1/chat/completions", "Bearer "+appKey)
		})
	}
}
