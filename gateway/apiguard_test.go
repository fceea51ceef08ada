package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// noKeys removes the harness's key: no-key mode.
func noKeys(y string) string {
	return strings.Replace(y, "keys:\n  - name: app-team\n    key: ${TEST_APP_KEY}\n", "", 1)
}

// call sends method path with body and the headers given (Host sets the
// Host header; an empty value removes a header) and returns the status,
// the answer's headers and its body.
func call(t *testing.T, base, method, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		switch {
		case hdr[i] == "Host":
			req.Host = hdr[i+1]
		case hdr[i+1] == "":
			req.Header.Del(hdr[i])
		default:
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, string(b)
}

// Regression (issue 23, Medium 8): without keys the API listener had no
// Host or Origin check: a cross-site text/plain POST with Origin: evil,
// a DNS-rebinding Host and a cross-site WebSocket upgrade to
// /v1/realtime were served with the operator's backend keys.
func TestNoKeyModeRefusesCrossSiteBrowserRequestsAndUnknownHosts(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu"), answer("weu"), answer("weu"), answer("weu")}, nil, "", noKeys,
		func(y string) string {
			return strings.Replace(y, "listen: 127.0.0.1:0\n", "listen: 127.0.0.1:0\nallowed_hosts: [gw.internal]\nallowed_origins: [\"https://app.example.com\"]\n", 1)
		})
	self := h.url
	for _, c := range []struct {
		name       string
		path       string
		hdr        []string
		want       int
		code, form string
	}{
		{"cross-site text/plain POST", "/v1/chat/completions", []string{"Origin", "http://evil.example", "Content-Type", "text/plain"}, 403, "cross_origin_refused", "openai"},
		{"cross-site POST with Origin null", "/v1/chat/completions", []string{"Origin", "null"}, 403, "cross_origin_refused", "openai"},
		{"cross-site without Origin", "/v1/chat/completions", []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross_origin_refused", "openai"},
		{"cross-site Anthropic call", "/v1/messages", []string{"Origin", "http://evil.example", "Anthropic-Version", "2023-06-01"}, 403, "", "anthropic"},
		{"DNS-rebinding Host", "/v1/chat/completions", []string{"Host", "evil.example:8080"}, 403, "host_not_allowed", "openai"},
		{"DNS-rebinding Host on the model list", "/v1/models", []string{"Host", "evil.example"}, 403, "host_not_allowed", "openai"},
		{"DNS-rebinding Host on the metrics", "/metrics", []string{"Host", "evil.example"}, 403, "host_not_allowed", "openai"},
		{"a key does not lift the check", "/v1/chat/completions", []string{"Origin", "http://evil.example", "Authorization", "Bearer " + appKey}, 403, "cross_origin_refused", "openai"},
		{"same origin", "/v1/chat/completions", []string{"Origin", self, "Sec-Fetch-Site", "same-origin"}, 200, "", ""},
		{"an allowed origin", "/v1/chat/completions", []string{"Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site"}, 200, "", ""},
		{"an allowed host", "/v1/chat/completions", []string{"Host", "gw.internal:8080"}, 200, "", ""},
		{"a non-browser caller", "/v1/chat/completions", nil, 200, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := append([]string{"Content-Type", "application/json"}, c.hdr...)
			code, _, body := call(t, h.url, "POST", c.path, chat, hdr...)
			if code != c.want {
				t.Fatalf("%d %s, want %d", code, body, c.want)
			}
			switch c.form {
			case "openai":
				if !strings.Contains(body, `"code":"`+c.code+`"`) || !strings.Contains(body, `"type":"invalid_request_error"`) {
					t.Fatalf("not OpenAI's error with code %s: %s", c.code, body)
				}
			case "anthropic":
				if !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, `"permission_error"`) {
					t.Fatalf("not Anthropic's error: %s", body)
				}
			}
		})
	}
	if n := h.weu.Calls(); n != 4 {
		t.Errorf("the backend got %d calls, want 4 (only the accepted ones)", n)
	}
	// Probes reach a pod by whatever name: exempt.
	if code, _, body := call(t, h.url, "GET", "/readyz", "", "Host", "evil.example"); code != 200 {
		t.Errorf("/readyz with another Host: %d %s", code, body)
	}
	if !strings.Contains(h.logs.String(), "no keys are configured: the API accepts only same-origin and non-browser callers") {
		t.Errorf("no start-up line on no-key mode:\n%s", h.logs.String())
	}
}

// TestNoKeyModeLineListsEachHostOnce: the start-up line of no-key mode
// named 127.0.0.1 twice when the gateway listened on it (the demo's
// "127.0.0.1, localhost, 127.0.0.1, [::1], ...").
func TestNoKeyModeLineListsEachHostOnce(t *testing.T) {
	h := start(t, nil, nil, "", noKeys)
	var line string
	poll.Until(t, 10*time.Second, func() bool { // Serve logs it as it starts
		for _, l := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(l, "no keys are configured") {
				line = l
			}
		}
		return line != ""
	}, func() string { return "no start-up line on no-key mode:\n" + h.logs.String() })
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]"} {
		if n := strings.Count(line, host); n != 1 {
			t.Errorf("%s named %d times: %s", host, n, line)
		}
	}
}

// Regression (issue 23, Medium 8): a cross-site WebSocket upgrade to
// /v1/realtime succeeded in no-key mode, with the operator's api-key
// sent upstream.
func TestNoKeyModeRefusesCrossSiteRealtimeUpgrade(t *testing.T) {
	h := start(t, nil, nil, "", noKeys)
	code, _, body := call(t, h.url, "GET", "/v1/realtime?model=chat-prod", "",
		"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Origin", "https://evil.example")
	if code != 403 || !strings.Contains(body, "cross_origin_refused") {
		t.Fatalf("cross-site WebSocket upgrade: %d %s", code, body)
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 0 {
		t.Fatalf("the upgrade reached a backend (%d calls)", n)
	}
}

// With keys, the key decides: another origin with a key is served (an
// SDK in a browser app may hold one), and without one gets 401.
func TestKeyedModeLeavesOriginToTheKey(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, nil, "")
	if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat, "Origin", "http://evil.example",
		"Content-Type", "application/json", "Authorization", "Bearer "+appKey); code != 200 {
		t.Fatalf("another origin with the key: %d %s", code, body)
	}
	if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat, "Origin", "http://evil.example",
		"Content-Type", "application/json"); code != 401 {
		t.Fatalf("another origin without a key: %d %s", code, body)
	}
	if strings.Contains(h.logs.String(), "no keys are configured") {
		t.Fatal("the no-key line was logged with keys configured")
	}
}
