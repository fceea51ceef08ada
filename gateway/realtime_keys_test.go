package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// switchProtocols is an upstream step that switches protocols for an
// upgrade and holds the connection until the gateway closes it.
func switchProtocols(w http.ResponseWriter, r *http.Request) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: test\r\n\r\n")
	brw.Flush()
	io.Copy(io.Discard, brw)
}

// TestRealtimeNeverForwardsCallerKey is the regression test of issue 23's
// item 11: a Bearer header plus the subprotocol
// OpenAI-Insecure-API-Key.<key> in mixed case reached upstream, as did
// API-Key= and key= query parameters. Each form a caller may send its
// key in is tried through the listener; what arrives upstream carries
// the backend's credential and none of the caller's. Without a key, or
// with another, no upgrade reaches an upstream.
func TestRealtimeNeverForwardsCallerKey(t *testing.T) {
	tests := []struct {
		name, query, bearer, protocols string
		// ok: the key is taken (101); either: the gateway may take it or
		// not (401), but it never goes upstream.
		ok, either bool
	}{
		{"bearer and mixed-case subprotocol", "", appKey, "realtime, OpenAI-Insecure-API-Key." + appKey, true, false},
		{"mixed-case subprotocol alone", "", "", "realtime, OpenAI-Insecure-API-Key." + appKey, true, true},
		{"lower-case subprotocol alone", "", "", "openai-insecure-api-key." + appKey + ", realtime", true, false},
		{"bearer and API-Key query", "&API-Key=" + appKey, appKey, "realtime", true, false},
		{"bearer and key query", "&key=" + appKey, appKey, "realtime", true, false},
		{"api-key query alone", "&api-key=" + appKey, "", "realtime", true, false},
		{"bearer and the key in another query parameter", "&x=" + strings.ToUpper(appKey), appKey, "realtime", true, false},
		{"no key", "", "", "realtime", false, false},
		{"another key as a subprotocol", "", "", "realtime, openai-insecure-api-key.not-the-key-0123456789", false, false},
		{"another key as a bearer", "&key=" + appKey[:8], "not-the-key-0123456789", "realtime", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, []upstreamtest.Step{switchProtocols}, []upstreamtest.Step{switchProtocols}, "")
			req := upgradeRequest(h.url+"/v1/realtime?model=chat-prod"+tc.query, tc.protocols)
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			}
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if tc.either && resp.StatusCode == http.StatusUnauthorized {
				tc.ok = false
			}
			h.checkUpgrade(t, resp, tc.ok)
		})
	}
}

// TestRealtimeNeverForwardsCallerKeyWithoutGatewayKeys: with no gateway
// keys configured, whatever a caller sends as a key (a Bearer header, a
// subprotocol in mixed case, API-Key= and key= parameters) is not
// forwarded either.
func TestRealtimeNeverForwardsCallerKeyWithoutGatewayKeys(t *testing.T) {
	noKeys := func(y string) string {
		return strings.Replace(y, "keys:\n  - name: app-team\n    key: ${TEST_APP_KEY}\n", "", 1)
	}
	h := start(t, []upstreamtest.Step{switchProtocols}, []upstreamtest.Step{switchProtocols}, "", noKeys)
	req := upgradeRequest(h.url+"/v1/realtime?model=chat-prod&API-Key="+appKey+"&key="+appKey, "realtime, OpenAI-Insecure-API-Key."+appKey)
	req.Header.Set("Authorization", "Bearer "+appKey)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.checkUpgrade(t, resp, true)
}

func upgradeRequest(url, protocols string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Protocol", protocols)
	return req
}

// checkUpgrade checks the answer to an upgrade: with ok, 101 and an
// upgrade upstream carrying the backend's credential and none of the
// caller's; without, 401 and nothing upstream.
func (h *harness) checkUpgrade(t *testing.T, resp *http.Response, ok bool) {
	t.Helper()
	if !ok {
		if resp.StatusCode != http.StatusUnauthorized || h.weu.Calls()+h.sec.Calls() != 0 {
			t.Fatalf("%d, %d upgrades upstream; want 401 and none", resp.StatusCode, h.weu.Calls()+h.sec.Calls())
		}
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || h.weu.Calls() != 1 {
		t.Fatalf("%d, %d upgrades to the first backend", resp.StatusCode, h.weu.Calls())
	}
	var seen strings.Builder
	seen.WriteString(h.weu.Path(0) + "\n")
	h.weu.Header(0).Write(&seen)
	if strings.Contains(strings.ToLower(seen.String()), strings.ToLower(appKey)) {
		t.Errorf("the caller's key reached upstream:\n%s", seen.String())
	}
	if got := h.weu.Header(0).Get("Api-Key"); got != weuSecret {
		t.Errorf("upstream got api-key %q, want the backend's own", got)
	}
	if got := h.weu.Header(0).Get("Sec-Websocket-Protocol"); got != "realtime" {
		t.Errorf("upstream got subprotocols %q, want realtime", got)
	}
}
