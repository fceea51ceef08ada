package engine

import (
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
