package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/route"
)

func TestRequestID(t *testing.T) {
	tests := []struct {
		in   string
		keep bool
	}{
		{"abc-123", true},
		{"", false},
		{"has space", false},
		{strings.Repeat("x", 129), false},
		{"ctrl\x01", false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		if tc.in != "" {
			r.Header.Set("X-Request-Id", tc.in)
		}
		got := requestID(r)
		if (got == tc.in) != tc.keep || len(got) == 0 {
			t.Errorf("requestID(%q) = %q", tc.in, got)
		}
	}
}

// TestRefusedRequestsAreLogged is the regression test for requests to
// unknown routes (404), with the wrong method (405) or key (401) never
// reaching the request log.
func TestRefusedRequestsAreLogged(t *testing.T) {
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"unknown route", http.MethodPost, "/v1/no/such/route", http.StatusNotFound},
		{"wrong method", http.MethodDelete, "/v1/chat/completions", http.StatusMethodNotAllowed},
		{"wrong key", http.MethodPost, "/v1/chat/completions", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			h := &Handler{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			h.Update(&Routes{Pools: map[string]*route.Pool{}, Keys: []Key{NewKey("app", "app-key-0123456789abcdef")}})
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &got); err != nil {
				t.Fatalf("want one request log line, got %q: %v", logs.String(), err)
			}
			if got["msg"] != "request" || got["method"] != tc.method || got["path"] != tc.path ||
				got["status"] != float64(tc.status) || got["request_id"] != resp.Header.Get("X-Request-Id") {
				t.Fatalf("log line %v", got)
			}
		})
	}
}
