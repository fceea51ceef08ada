package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/switchover-gw/switchover/route"
)

type rtEvent struct {
	Type  string         `json:"type"`
	Delta string         `json:"delta"`
	Error map[string]any `json:"error"`
}

func rtRead(t *testing.T, ctx context.Context, c *websocket.Conn) rtEvent {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var ev rtEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	return ev
}

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
			if ev := rtRead(t, ctx, c); ev.Type != "session.created" {
				t.Fatalf("first event %+v", ev)
			}
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`))
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"response.create"}`))
			var text strings.Builder
			for {
				ev := rtRead(t, ctx, c)
				if ev.Type == "error" {
					t.Fatalf("error event %+v", ev)
				}
				if strings.HasSuffix(ev.Type, "text.delta") {
					text.WriteString(ev.Delta)
				}
				if ev.Type == "response.done" {
					break
				}
			}
			if text.Len() == 0 {
				t.Fatal("no text in the response")
			}
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
