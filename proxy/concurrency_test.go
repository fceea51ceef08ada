package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestNilLimitsNeverRefuse(t *testing.T) {
	var m *bodyMemory
	r, ok := m.open(1 << 40)
	if !ok || r.reader(strings.NewReader("x")) == nil {
		t.Fatal("a nil budget refused")
	}
	r.close()
	var c *concurrency
	if !c.acquire() {
		t.Fatal("a nil concurrency limit refused")
	}
	c.release()
}

func TestConcurrencyAcquire(t *testing.T) {
	c := newConcurrency(2)
	steps := []struct {
		name    string
		acquire bool // else release
		ok      bool
	}{
		{"first", true, true},
		{"second", true, true},
		{"third is refused", true, false},
		{"one ends", false, true},
		{"then one more fits", true, true},
		{"and the next is refused", true, false},
	}
	for _, s := range steps {
		if !s.acquire {
			c.release()
			continue
		}
		if got := c.acquire(); got != s.ok {
			t.Fatalf("%s: acquire = %v, want %v", s.name, got, s.ok)
		}
	}
}

func TestMaxConcurrentRequestsThroughHandler(t *testing.T) {
	up := newGate()
	h := &Handler{MaxConcurrentRequests: 1, Metrics: http.NotFoundHandler()}
	u := limitedGateway(t, h, up)
	done := make(chan int)
	go func() {
		resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions", chatBody, false)
		done <- resp.StatusCode
	}()
	<-up.arrived

	tests := []struct {
		name, method, path string
		want               int
		code               string
	}{
		{"API call refused", http.MethodPost, "/v1/chat/completions", 503, codeTooManyRequests},
		{"model list refused", http.MethodGet, "/v1/models", 503, codeTooManyRequests},
		{"healthz exempt", http.MethodGet, "/healthz", 200, ""},
		{"readyz exempt", http.MethodGet, "/readyz", 200, ""},
		{"metrics exempt", http.MethodGet, "/metrics", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, eb := send(t, &http.Client{}, tt.method, u+tt.path, chatBody, false)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.code != "" && (eb.Error.Code != tt.code || resp.Header.Get("Retry-After") != "1") {
				t.Fatalf("code %q Retry-After %q, want %q and 1", eb.Error.Code, resp.Header.Get("Retry-After"), tt.code)
			}
		})
	}
	close(up.release)
	if got := <-done; got != http.StatusOK {
		t.Fatalf("the request in flight got %d", got)
	}
	if resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions", chatBody, false); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slot freed, status %d", resp.StatusCode)
	}
}
