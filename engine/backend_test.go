package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

// TestBreakerOutlierSettingsFromConfig: max_trip and slow_start reach the
// breaker, and slow_start: 0s turns the slow start off rather than taking
// the breaker's default.
func TestBreakerOutlierSettingsFromConfig(t *testing.T) {
	e := build(t, `backends:
  - {name: weu, type: azure, url: "http://127.0.0.1:1", api_key: k1, breaker: {max_trip: 3m, slow_start: 45s}}
  - {name: sec, type: azure, url: "http://127.0.0.1:2", api_key: k2, breaker: {slow_start: 0s}}
pools:
  - name: chat-prod
    members: [{backend: weu}, {backend: sec}]
`, nil, Deps{})
	weu := e.Backends["weu"].Breaker.(*breaker.Breaker).Settings()
	sec := e.Backends["sec"].Breaker.(*breaker.Breaker).Settings()
	if weu.MaxTrip != 3*time.Minute || weu.SlowStart != 45*time.Second {
		t.Errorf("weu: max trip %v, slow start %v; want 3m, 45s", weu.MaxTrip, weu.SlowStart)
	}
	if sec.MaxTrip != breaker.DefaultMaxTrip || sec.SlowStart >= 0 {
		t.Errorf("sec: max trip %v, slow start %v; want the default 5m, and none", sec.MaxTrip, sec.SlowStart)
	}
}

// TestBackendHTTP2FromConfig: a backend's transport offers HTTP/2 unless
// its http2 is false.
func TestBackendHTTP2FromConfig(t *testing.T) {
	e := build(t, `backends:
  - {name: weu, type: azure, url: "https://127.0.0.1:1", api_key: k1}
  - {name: sec, type: azure, url: "https://127.0.0.1:2", api_key: k2, http2: false}
pools:
  - name: chat-prod
    members: [{backend: weu}, {backend: sec}]
`, nil, Deps{})
	for name, want := range map[string]bool{"weu": true, "sec": false} {
		tr, ok := e.Backends[name].Transport.(*route.Transport)
		if !ok || tr.Protocols == nil {
			t.Fatalf("%s: transport %T without protocols", name, e.Backends[name].Transport)
		}
		if tr.Protocols.HTTP2() != want || !tr.Protocols.HTTP1() {
			t.Errorf("%s: transport protocols %v, want HTTP/2 %v and HTTP/1", name, tr.Protocols, want)
		}
	}
}

// TestBackendHTTP1TransportFromConfig: http1_transport: net/http gives a
// backend net/http's HTTP/1.1 client, the default switchover's own; a
// reload that changes it gives the backend a new transport, one that
// keeps it keeps the transport and its connections.
func TestBackendHTTP1TransportFromConfig(t *testing.T) {
	const y = `backends:
  - {name: weu, type: azure, url: "http://127.0.0.1:1", api_key: k1}
  - {name: sec, type: azure, url: "http://127.0.0.1:2", api_key: k2, http1_transport: %s}
pools:
  - name: chat-prod
    members: [{backend: weu}, {backend: sec}]
`
	e := build(t, fmt.Sprintf(y, "net/http"), nil, Deps{})
	for name, want := range map[string]bool{"weu": false, "sec": true} {
		tr, ok := e.Backends[name].Transport.(*route.Transport)
		if !ok || tr.NetHTTP1() != want {
			t.Errorf("%s: transport %T, net/http's HTTP/1.1 client %v; want %v", name, e.Backends[name].Transport, ok && tr.NetHTTP1(), want)
		}
	}
	next := build(t, fmt.Sprintf(y, "switchover"), e, Deps{})
	if next.Backends["sec"].Transport == e.Backends["sec"].Transport {
		t.Error("a changed http1_transport kept the old transport")
	}
	if next.Backends["weu"].Transport != e.Backends["weu"].Transport {
		t.Error("an unchanged backend got a new transport")
	}
	if tr := next.Backends["sec"].Transport.(*route.Transport); tr.NetHTTP1() {
		t.Error("http1_transport: switchover still uses net/http's client")
	}
}
