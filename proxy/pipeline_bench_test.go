package proxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkHandlerChat is one chat completion through the Handler alone,
// its upstream answered in memory and no connection on either side, so
// that its allocations are counted exactly: BenchmarkGatewayChat's, in
// gateway, add HTTP's on both ends and vary by a few between runs.
func BenchmarkHandlerChat(b *testing.B) {
	const answer = `{"id":"1","object":"chat.completion","choices":[]}`
	base, _ := url.Parse("http://upstream.invalid/v1")
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(answer)), ContentLength: int64(len(answer)), Request: r}, nil
	})
	be := &route.Backend{Name: "up", Provider: &route.OpenAI{BaseURL: base}, Transport: up}
	h := &proxy.Handler{RequestLog: proxy.NewRequestLog(io.Discard, "text", slog.LevelInfo)}
	h.Update(&proxy.Routes{Pools: map[string]*route.Pool{"chat-prod": {Name: "chat-prod", Members: []*route.Member{{Backend: be, Priority: 1}}}},
		Keys: []proxy.Key{proxy.NewKey("app", "app-key")}})
	const chat = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(chat))
		r.Header.Set("Authorization", "Bearer app-key")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
