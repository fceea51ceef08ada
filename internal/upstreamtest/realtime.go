package upstreamtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// RealtimeTurn plays one turn of a Realtime session on c, a WebSocket just
// opened: it expects session.created first, sends a user message and
// response.create, and reads until response.done. It fails t on an error
// event or an answer without text, and returns the text.
func RealtimeTurn(t testing.TB, ctx context.Context, c *websocket.Conn) string {
	t.Helper()
	if ev := readRealtime(t, ctx, c); ev.Type != "session.created" {
		t.Fatalf("first event %+v", ev)
	}
	for _, ev := range []string{
		`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`,
		`{"type":"response.create"}`,
	} {
		if err := c.Write(ctx, websocket.MessageText, []byte(ev)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	var text strings.Builder
	for {
		ev := readRealtime(t, ctx, c)
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
	return text.String()
}

type realtimeEvent struct {
	Type  string         `json:"type"`
	Delta string         `json:"delta"`
	Error map[string]any `json:"error"`
}

func readRealtime(t testing.TB, ctx context.Context, c *websocket.Conn) realtimeEvent {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var ev realtimeEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("event %s: %v", data, err)
	}
	return ev
}
