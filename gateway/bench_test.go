package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

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
