package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// scrape reads g's metrics as Prometheus would, from the handler itself.
func scrape(t testing.TB, g *gateway.Gateway) string {
	t.Helper()
	rec := httptest.NewRecorder()
	g.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// Regression (issue 23, Low): GET /metrics on the API listener answered
// without a key and listed the keys' names and ids and their spend. It
// is served on the admin listener (behind its key) and on
// server.metrics_listen (a listener of its own); on the API listener
// only with server.metrics_on_api.
func TestMetricsAreNotServedOnTheAPIListener(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, nil, "", withAdmin,
		serverLimits("metrics_listen: \"127.0.0.1:0\""))
	if resp, body := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	const want = `switchover_backend_info{backend="aoai-westeurope"`
	for _, c := range []struct {
		name, url string
		hdr       []string
		status    int
	}{
		{"API listener without a key", h.url, nil, 404},
		{"API listener with a key", h.url, []string{"Authorization", "Bearer " + appKey}, 404},
		{"API listener from another origin", h.url, []string{"Origin", "http://evil.example"}, 404},
		{"admin listener without its key", h.admin, nil, 401},
		{"admin listener with a gateway key", h.admin, []string{"Authorization", "Bearer " + appKey}, 401},
		{"admin listener with its key", h.admin, []string{"Authorization", "Bearer " + adminKey}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := call(t, c.url, "GET", "/metrics", "", c.hdr...)
			if code != c.status || strings.Contains(body, "app-team") != (c.status == 200) {
				t.Fatalf("%d, want %d:\n%.300s", code, c.status, body)
			}
			if c.status == 200 && !strings.Contains(body, want) {
				t.Fatalf("no %s in:\n%.300s", want, body)
			}
		})
	}
	poll.Until(t, 10*time.Second, func() bool { return h.gw.MetricsAddr() != nil }, nil)
	m := "http://" + h.gw.MetricsAddr().String()
	if code, _, body := call(t, m, "GET", "/metrics", ""); code != 200 || !strings.Contains(body, want) {
		t.Fatalf("metrics_listen: %d %.300s", code, body)
	}
	if code, _, _ := call(t, m, "GET", "/v1/models", ""); code != 404 {
		t.Fatalf("metrics_listen serves the API: %d", code)
	}
}

// server.metrics_on_api serves them on the API listener as before.
func TestMetricsOnAPIServesThemOnTheAPIListener(t *testing.T) {
	h := start(t, nil, nil, "", serverLimits("metrics_on_api: true"))
	resp, err := testClient.Get(h.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "switchover_backend_info") {
		t.Fatalf("%d %.300s", resp.StatusCode, b)
	}
}
