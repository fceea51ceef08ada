package route

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestPrepareRealtimeSendsNoCallerSecret: the upgrade request carries the
// client's WebSocket headers and subprotocols, the member's model, and
// never the caller's key (a subprotocol or Azure's api-key query).
func TestPrepareRealtimeSendsNoCallerSecret(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:1/v1")
	m := &Member{Backend: &Backend{Name: "oa", Provider: &OpenAI{BaseURL: base, APIKey: "sk-backend"}}, Deployment: "gpt-rt"}
	r := &Request{Op: Realtime, Model: "chat", RawQuery: "model=chat&api-key=caller-secret&deployment=chat&api-version=2025-04-01-preview",
		Header: http.Header{
			"Sec-Websocket-Key":      {"k=="},
			"Sec-Websocket-Version":  {"13"},
			"Sec-Websocket-Protocol": {"realtime, openai-insecure-api-key.caller-secret"},
			"Authorization":          {"Bearer caller-secret"},
			"Cookie":                 {"session=caller-secret"},
		}}
	o := new(Outgoing)
	if err := prepareInto(r, m, o); err != nil {
		t.Fatal(err)
	}
	req, err := m.Backend.Provider.NewRequest(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != http.MethodGet || req.URL.Path != "/v1/realtime" || req.URL.Query().Get("model") != "gpt-rt" {
		t.Fatalf("upgrade request %s %s", req.Method, req.URL)
	}
	for k, vv := range req.Header {
		for _, v := range vv {
			if strings.Contains(v, "caller-secret") {
				t.Errorf("header %s carries the caller's secret: %q", k, v)
			}
		}
	}
	if strings.Contains(req.URL.RawQuery, "caller-secret") {
		t.Errorf("query carries the caller's secret: %q", req.URL.RawQuery)
	}
	if req.Header.Get("Sec-Websocket-Protocol") != "realtime" || req.Header.Get("Upgrade") != "websocket" || req.Header.Get("Authorization") != "Bearer sk-backend" {
		t.Errorf("headers %v", req.Header)
	}
}

func TestRealtimeOnlyOnOpenAIFormatBackends(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:1")
	m := &Member{Backend: &Backend{Name: "claude", Provider: &Anthropic{BaseURL: base}}}
	if err := prepareInto(&Request{Op: Realtime, Model: "x", Header: http.Header{}}, m, new(Outgoing)); err == nil {
		t.Fatal("a realtime session was prepared for an Anthropic backend")
	}
}
