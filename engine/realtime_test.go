package engine

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/route"
)

// TestRealtimeFailsOverAtConnect: a realtime session through the gateway
// goes to the next member when the first refuses the upgrade (down), with
// the backend's credential injected and the caller's never sent; then
// events flow both ways on that backend until the client closes.
func TestRealtimeFailsOverAtConnect(t *testing.T) {
	for _, tt := range []struct {
		name, first, second string
	}{
		{"azure down, openai answers", "aoai-weu", "openai"},
		{"openai down, azure answers", "openai", "aoai-weu"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := startProviders(t, []string{tt.first, tt.second}, nil, "")
			e.fault(t, tt.first, "down")
			ctx := t.Context()
			wsURL := "ws" + strings.TrimPrefix(e.url, "http") + "/v1/realtime?model=chat-prod"
			c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"realtime", "openai-insecure-api-key.caller-secret"}})
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.CloseNow()
			if got := resp.Header.Get(route.HeaderBackend); got != tt.second || resp.Header.Get(route.HeaderFailover) != "true" {
				t.Fatalf("session on %q (failover %q), want %s", got, resp.Header.Get(route.HeaderFailover), tt.second)
			}
			if c.Subprotocol() != "realtime" {
				t.Errorf("subprotocol %q", c.Subprotocol())
			}
			upstreamtest.RealtimeTurn(t, ctx, c)
			if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
				t.Fatalf("close: %v", err)
			}
			if strings.Contains(e.logs.String(), "caller-secret") {
				t.Error("the caller's key is in the log")
			}
		})
	}
}

// TestRealtimeRefusals: not a WebSocket, no model, an unknown pool, and
// every member down each get a clear error before any upgrade.
func TestRealtimeRefusals(t *testing.T) {
	e := startProviders(t, []string{"openai"}, nil, "")
	resp, err := http.Get(e.url + "/v1/realtime?model=chat-prod")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET: %d", resp.StatusCode)
	}
	ws := "ws" + strings.TrimPrefix(e.url, "http")
	for _, tt := range []struct {
		name, path string
		status     int
	}{
		{"no model", "/v1/realtime", 400},
		{"unknown pool", "/v1/realtime?model=nope", 404},
	} {
		_, resp, err := websocket.Dial(t.Context(), ws+tt.path, nil)
		if err == nil || resp == nil || resp.StatusCode != tt.status {
			t.Fatalf("%s: %v %v", tt.name, err, resp)
		}
	}
	e.fault(t, "openai", "down")
	_, resp, err = websocket.Dial(t.Context(), ws+"/v1/realtime?model=chat-prod", nil)
	if err == nil || resp == nil || resp.StatusCode < 500 {
		t.Fatalf("every member down: %v %v", err, resp)
	}
}
