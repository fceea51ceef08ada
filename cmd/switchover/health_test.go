package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHealthCommand(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.Write([]byte("ready\n"))
		case "/draining":
			http.Error(w, "not ready: draining: the gateway is shutting down", http.StatusServiceUnavailable)
		case "/hang":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"ready", []string{"-url", srv.URL + "/readyz"}, exitOK, "ready", ""},
		{"ready without scheme", []string{"-url", strings.TrimPrefix(srv.URL, "http://") + "/readyz"}, exitOK, "ready", ""},
		{"quiet", []string{"-q", "-url", srv.URL + "/readyz"}, exitOK, "", ""},
		{"draining", []string{"-url", srv.URL + "/draining"}, exitError, "", "503 Service Unavailable not ready: draining"},
		{"not found", []string{"-url", srv.URL + "/nope"}, exitError, "", "404"},
		{"no answer in time", []string{"-timeout", "50ms", "-url", srv.URL + "/hang"}, exitError, "", "deadline exceeded"},
		{"nothing listening", []string{"-url", closed.URL + "/readyz"}, exitError, "", "connection refused"},
		{"bad timeout", []string{"-timeout", "0s"}, exitUsage, "", "-timeout must be positive"},
		{"arguments", []string{"extra"}, exitUsage, "", "no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := run2(t, append([]string{"health"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("stdout %q stderr %q", out, errOut)
			}
			if tc.stdout == "" && out != "" {
				t.Fatalf("stdout %q, want nothing", out)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}
