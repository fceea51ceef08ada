package sim

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/testpki"
)

// TestWithTLSServesHTTPS: with WithTLS, a deployment's URL and the control
// URL are https, a client that trusts the CA is answered over HTTP/2 (and
// one limited to HTTP/1.1 over that), and a plain HTTP request is not
// served.
func TestWithTLSServesHTTPS(t *testing.T) {
	ca := testpki.NewCA(t, "sim CA")
	cert, err := tls.X509KeyPair(ca.Server(t, "sim", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	s := startSim(t, one(Azure, nil), WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	ep := s.Deployments()[0]
	if !strings.HasPrefix(ep.URL, "https://") || !strings.HasPrefix(s.ControlURL(), "https://") {
		t.Fatalf("urls %s, %s", ep.URL, s.ControlURL())
	}
	url := ep.URL + "/openai/deployments/" + ep.Deployment + "/chat/completions?api-version=2024-10-21"
	for _, h2 := range []bool{true, false} {
		protos := new(http.Protocols)
		protos.SetHTTP1(true)
		protos.SetHTTP2(h2)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, Protocols: protos}}
		resp, err := c.Post(url, "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != map[bool]int{true: 2, false: 1}[h2] {
			t.Fatalf("h2 %t: %s %d %s", h2, resp.Proto, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(strings.Replace(ep.URL, "https://", "http://", 1) + "/_sim/deployments")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served")
		}
	}
}
