package engine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/switchover-gw/switchover/internal/testpki"
)

// countingServer is an upstream that counts the connections opened to it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var opened atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	return up, &opened
}

func TestBackendsOnOneHostShareConnections(t *testing.T) {
	// Two deployments of one resource (a, b) share a transport, and so a
	// keep-alive connection; a backend on the same host with other
	// connection settings (c), or on another host (d), has its own.
	up1, opened1 := countingServer(t)
	up2, _ := countingServer(t)
	y := fmt.Sprintf(`backends:
  - {name: a, type: azure, url: %[1]q, api_key: k1}
  - {name: b, type: azure, url: %[1]q, api_key: k2}
  - {name: c, type: azure, url: %[1]q, api_key: k3, connect_timeout: 2s}
  - {name: d, type: azure, url: %[2]q, api_key: k4}
pools:
  - name: chat
    members: [{backend: a}, {backend: b}, {backend: c}, {backend: d}]
`, up1.URL, up2.URL)
	e := build(t, y, nil, Deps{})
	tr := func(e *Engine, name string) http.RoundTripper { return e.Backends[name].Transport }
	if tr(e, "a") != tr(e, "b") {
		t.Error("a and b, on one host with the same settings, have transports of their own")
	}
	if tr(e, "a") == tr(e, "c") || tr(e, "a") == tr(e, "d") {
		t.Error("c (another connect timeout) or d (another host) shares a's transport")
	}
	for i := range 6 {
		name := []string{"a", "b"}[i%2]
		req, _ := http.NewRequest(http.MethodGet, up1.URL, nil)
		resp, err := tr(e, name).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := opened1.Load(); n != 1 {
		t.Errorf("six calls in turn through a and b opened %d connections, want 1", n)
	}
	// A reload: a backend added on the host shares the transport in
	// force, connections and all; a's, renewed (another key), keeps it.
	y2 := fmt.Sprintf(`backends:
  - {name: a, type: azure, url: %[1]q, api_key: k1-new}
  - {name: b, type: azure, url: %[1]q, api_key: k2}
  - {name: e, type: azure, url: %[1]q, api_key: k5}
pools:
  - name: chat
    members: [{backend: a}, {backend: b}, {backend: e}]
`, up1.URL)
	e2 := build(t, y2, e, Deps{})
	e2.Replace()
	if tr(e2, "a") != tr(e, "a") || tr(e2, "e") != tr(e, "a") {
		t.Error("after the reload, a or the added e does not use the host's transport in force")
	}
	req, _ := http.NewRequest(http.MethodGet, up1.URL, nil)
	resp, err := tr(e2, "e").RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := opened1.Load(); n != 1 {
		t.Errorf("the added backend's call opened a connection (%d in all), want the one kept", n)
	}
}

func TestReloadReadsCAFileOfCarriedBackend(t *testing.T) {
	// A backend whose reload keeps its identity and connection settings
	// (only its timeout changes) reads its ca_file again, as documented:
	// its old transport, trusting the old CA, does not carry over.
	old, other := testpki.NewCA(t, "old CA"), testpki.NewCA(t, "other CA")
	cert, err := tls.X509KeyPair(old.Server(t, "up", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	up.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	up.StartTLS()
	t.Cleanup(up.Close)
	dir := t.TempDir()
	caFile := testpki.Write(t, dir, "ca.pem", old.PEM)
	y := func(timeout string) string {
		return fmt.Sprintf(`backends:
  - {name: a, type: azure, url: %q, api_key: k1, ca_file: %q, timeout: %s}
pools:
  - name: chat
    members: [{backend: a}]
`, up.URL, caFile, timeout)
	}
	call := func(e *Engine) error {
		req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
		resp, err := e.Backends["a"].Transport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	e := build(t, y("10m"), nil, Deps{})
	if err := call(e); err != nil {
		t.Fatalf("a call trusting the server's CA: %v", err)
	}
	testpki.Write(t, dir, "ca.pem", other.PEM)
	e2 := build(t, y("20m"), e, Deps{})
	if got := e2.Reload.Carried; len(got) != 1 || got[0] != "a" {
		t.Fatalf("carried %v, want [a]", got)
	}
	e2.Replace()
	if e2.Backends["a"].Transport == e.Backends["a"].Transport {
		t.Error("the reloaded backend kept the transport of the old CA file")
	}
	var unknown x509.UnknownAuthorityError
	if err := call(e2); !errors.As(err, &unknown) {
		t.Errorf("a call after the CA file changed to another CA: %v, want an unknown authority", err)
	}
}
