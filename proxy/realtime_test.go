package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/route"
)

// switchingBackend is a backend that switches protocols for every
// upgrade and then holds the connection until its peer closes it; sessions
// counts the sessions it switched for, closed those whose peer closed.
type switchingBackend struct {
	url              string
	sessions, closed chan struct{}
}

func newSwitchingBackend(t *testing.T) *switchingBackend {
	b := &switchingBackend{sessions: make(chan struct{}, 8), closed: make(chan struct{}, 8)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("backend hijack: %v", err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: test\r\n\r\n")
		brw.Flush()
		b.sessions <- struct{}{}
		io.Copy(io.Discard, brw) // until the gateway closes its side
		b.closed <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// TestRealtimeHijackFailureIsAnswered500: when the client's connection
// cannot be taken over for a realtime session (here a ResponseWriter that
// hides its Hijacker, as HTTP/2 or a middleware's wrapper does), the
// client gets 500 upgrade_failed in OpenAI's error format, as the request
// log says, and the backend's session is closed. It used to get an empty
// 200 while the log said 500.
func TestRealtimeHijackFailureIsAnswered500(t *testing.T) {
	be := newSwitchingBackend(t)
	base, _ := url.Parse(be.url + "/v1")
	b := &route.Backend{Name: "rt", Provider: &route.OpenAI{BaseURL: base}}
	logs := &syncbuf.Buffer{}
	h := &Handler{Logger: slog.New(slog.NewJSONHandler(logs, nil))}
	h.Update(&Routes{Pools: map[string]*route.Pool{"chat-prod": {Name: "chat-prod", Members: []*route.Member{{Backend: b, Priority: 1}}}}})
	ended := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { ended <- struct{}{} }()
		h.ServeHTTP(struct{ http.ResponseWriter }{w}, r) // no Hijack, no Unwrap
	}))
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/realtime?model=chat-prod", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Version", "13")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	<-ended
	<-be.sessions
	<-be.closed

	var e struct {
		Error errorObject `json:"error"`
	}
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &e) != nil || e.Error.Code != "upgrade_failed" || e.Error.Type != "server_error" {
		t.Fatalf("client got %d %s, want 500 upgrade_failed", resp.StatusCode, body)
	}
	var line struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}
	for _, ln := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(ln, `"msg":"request"`) {
			if err := json.Unmarshal([]byte(ln), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line.Status != http.StatusInternalServerError || line.Error == "" {
		t.Fatalf("log line says %d (%q), want 500 with the hijack's error\n%s", line.Status, line.Error, logs.String())
	}
}
