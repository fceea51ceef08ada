package proxy

import (
	"net/http"
	"slices"
	"testing"
)

func TestConcurrencyAcquire(t *testing.T) {
	var c concurrency
	steps := []struct {
		name    string
		limit   int
		acquire bool // else release
		ok      bool
	}{
		{"first", 2, true, true},
		{"second", 2, true, true},
		{"third is refused", 2, true, false},
		{"one ends", 2, false, true},
		{"then one more fits", 2, true, true},
		{"and the next is refused", 2, true, false},
		{"a higher limit (a reload) lets it in", 3, true, true},
		{"no limit never refuses", 0, true, true},
	}
	for _, s := range steps {
		if !s.acquire {
			c.release()
			continue
		}
		if got := c.acquire(s.limit); got != s.ok {
			t.Fatalf("%s: acquire = %v, want %v", s.name, got, s.ok)
		}
	}
	if got := c.n.Load(); got != 4 {
		t.Fatalf("%d slots taken, want 4", got)
	}
}

func TestMaxConcurrentRequestsThroughHandler(t *testing.T) {
	up := newGate()
	rec := &refusals{}
	h := &Handler{Metrics: http.NotFoundHandler(), Refusals: rec}
	u, ended := limitedGateway(t, h, up, func(rt *Routes) { rt.MaxConcurrentRequests = 1 })
	done := make(chan int)
	go func() {
		resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions?held", chatBody, false)
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
	waitEnded(t, ended, "held")
	if got, want := rec.all(), []string{codeTooManyRequests, codeTooManyRequests}; !slices.Equal(got, want) {
		t.Errorf("refusals recorded %q, want %q", got, want)
	}
	if resp, _ := send(t, http.DefaultClient, http.MethodPost, u+"/v1/chat/completions", chatBody, false); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the slot freed, status %d", resp.StatusCode)
	}
}
