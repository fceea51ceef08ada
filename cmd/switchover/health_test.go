package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/testpki"
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

// TestHealthAgainstGateway checks the command against the gateway's own
// handler: its readiness and liveness endpoints, on the paths the image's
// HEALTHCHECK and the Helm chart's probes use.
func TestHealthAgainstGateway(t *testing.T) {
	cfg, err := config.Parse("health.yaml", []byte(`backends: [{name: a, type: openai_compatible, url: "http://127.0.0.1:1"}]
pools: [{name: p, members: [{backend: a}]}]
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	srv := httptest.NewServer(g.Handler)
	t.Cleanup(srv.Close)
	if !strings.HasSuffix(defaultHealthURL, "/readyz") {
		t.Fatalf("default URL %s is not the readiness endpoint", defaultHealthURL)
	}
	for path, want := range map[string]string{"/readyz": "ready", "/healthz": "ok"} {
		code, out, errOut := run2(t, "health", "-url", srv.URL+path)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("health %s: exit %d, stdout %q stderr %q", path, code, out, errOut)
		}
	}
}

// TestHealthOverTLS: an https check verifies the gateway's certificate
// with the system's roots, -cacert's, or not at all with -insecure, and
// shows -cert to a listener that requires a client certificate.
func TestHealthOverTLS(t *testing.T) {
	ca := testpki.NewCA(t, "health CA")
	dir := t.TempDir()
	certPEM, keyPEM := ca.Server(t, "gw", "127.0.0.1")
	serverCert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := ca.Client(t, "kubelet")
	clientCert := testpki.Write(t, dir, "client.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: client.Certificate[0]}))
	kder, _ := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	clientKey := testpki.Write(t, dir, "client.key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
	caFile := testpki.Write(t, dir, "ca.crt", ca.PEM)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ready\n")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/readyz"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"CA file and client certificate", []string{"-cacert", caFile, "-cert", clientCert, "-key", clientKey}, exitOK, ""},
		{"insecure and client certificate", []string{"-insecure", "-cert", clientCert, "-key", clientKey}, exitOK, ""},
		{"system roots", []string{"-cert", clientCert, "-key", clientKey}, exitError, "certificate"},
		{"no client certificate", []string{"-cacert", caFile}, exitError, "certificate required"},
		{"cert without key", []string{"-cert", clientCert}, exitUsage, "-cert and -key go together"},
		{"CA file not PEM", []string{"-cacert", clientKey}, exitUsage, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A minute, not the default 2 s: under load, reading the
			// system's roots alone took longer, and the check ended on
			// its deadline instead of the certificate.
			code, out, errOut := run2(t, append([]string{"health", "-url", url, "-timeout", "1m"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d (want %d); stdout %q stderr %q", code, tc.code, out, errOut)
			}
		})
	}
}
