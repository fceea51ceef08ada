package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsURL turns an http URL into a ws one.
func wsURL(u string) string { return "ws" + strings.TrimPrefix(u, "http") }

type rtEvent struct {
	Type     string         `json:"type"`
	EventID  string         `json:"event_id"`
	Delta    string         `json:"delta"`
	Session  map[string]any `json:"session"`
	Error    map[string]any `json:"error"`
	Response struct {
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	} `json:"response"`
}

func readEvent(t *testing.T, ctx context.Context, c *websocket.Conn) rtEvent {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var ev rtEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("event %s: %v", b, err)
	}
	return ev
}

func sendEvent(t *testing.T, ctx context.Context, c *websocket.Conn, v string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(v)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func TestRealtimeSession(t *testing.T) {
	s := startSim(t, Config{Seed: 1, Deployments: []Deployment{
		{Name: "oa", Flavour: OpenAI, Deployment: "gpt-rt", Key: "ok", Reply: Reply{Tokens: 5}},
		{Name: "az", Flavour: Azure, Deployment: "gpt-rt", Key: "ak", Reply: Reply{Tokens: 5}},
	}})
	oa, az := s.Deployments()[0], s.Deployments()[1]
	tests := []struct {
		name    string
		url     string
		hdr     http.Header
		protos  []string
		beta    bool
		statsOf string
	}{
		{"openai", wsURL(oa.URL) + "/realtime?model=gpt-rt", http.Header{"Authorization": {"Bearer ok"}}, nil, false, "oa"},
		{"openai key as subprotocol", wsURL(oa.URL) + "/realtime?model=gpt-rt", nil, []string{"realtime", "openai-insecure-api-key.ok"}, false, "oa"},
		{"azure v1", wsURL(az.URL) + "/openai/v1/realtime?model=gpt-rt", http.Header{"Api-Key": {"ak"}}, nil, false, "az"},
		{"azure preview", wsURL(az.URL) + "/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-rt", http.Header{"Api-Key": {"ak"}}, nil, true, "az"},
		{"azure key in query", wsURL(az.URL) + "/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-rt&api-key=ak", nil, nil, true, "az"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			before := s.Stats()[tc.statsOf].Answered
			c, resp, err := websocket.Dial(ctx, tc.url, &websocket.DialOptions{HTTPHeader: tc.hdr, Subprotocols: tc.protos})
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer c.CloseNow()
			if ev := readEvent(t, ctx, c); ev.Type != "session.created" || ev.Session["model"] == nil {
				t.Fatalf("first event = %+v", ev)
			}
			sendEvent(t, ctx, c, `{"type":"session.update","session":{"instructions":"be brief"}}`)
			if ev := readEvent(t, ctx, c); ev.Type != "session.updated" || ev.Session["instructions"] != "be brief" {
				t.Errorf("session.update answered %+v", ev)
			}
			sendEvent(t, ctx, c, `{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`)
			added, textDelta, textDone := "conversation.item.added", "response.output_text.delta", "response.output_text.done"
			if tc.beta {
				added, textDelta, textDone = "conversation.item.created", "response.text.delta", "response.text.done"
			}
			if ev := readEvent(t, ctx, c); ev.Type != added {
				t.Errorf("item create answered %s, want %s", ev.Type, added)
			}
			if !tc.beta {
				if ev := readEvent(t, ctx, c); ev.Type != "conversation.item.done" {
					t.Errorf("then %s, want conversation.item.done", ev.Type)
				}
			}
			sendEvent(t, ctx, c, `{"type":"response.create"}`)
			var types []string
			var text strings.Builder
			var done rtEvent
			for {
				ev := readEvent(t, ctx, c)
				types = append(types, ev.Type)
				if ev.Type == textDelta {
					text.WriteString(ev.Delta)
				}
				if ev.Type == "response.done" {
					done = ev
					break
				}
			}
			wantStart := []string{"response.created", "response.output_item.added", added, "response.content_part.added", textDelta}
			if strings.Join(types[:5], ",") != strings.Join(wantStart, ",") || !contains(types, textDone) || !contains(types, "response.output_item.done") {
				t.Errorf("response events = %v", types)
			}
			if done.Response.Status != "completed" || done.Response.Usage.OutputTokens != 5 || len(done.Response.Output) != 1 ||
				done.Response.Output[0].Content[0].Text != text.String() || text.Len() == 0 {
				t.Errorf("response.done = %+v, deltas %q", done.Response, text.String())
			}
			sendEvent(t, ctx, c, `{"type":"bogus.event","event_id":"evt_1"}`)
			if ev := readEvent(t, ctx, c); ev.Type != "error" || ev.Error["code"] != "invalid_value" || ev.Error["event_id"] != "evt_1" || ev.Error["type"] != "invalid_request_error" {
				t.Errorf("unknown event answered %+v", ev)
			}
			sendEvent(t, ctx, c, `not json`)
			if ev := readEvent(t, ctx, c); ev.Type != "error" {
				t.Errorf("bad JSON answered %+v", ev)
			}
			if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
				t.Errorf("close: %v", err)
			}
			eventually(t, "the session to be counted", func() bool { return s.Stats()[tc.statsOf].Answered == before+1 })
		})
	}
}

func TestRealtimeRefusedBeforeUpgrade(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		fault      *Fault
		rpm        int
		path       string
		hdr        http.Header
		wantStatus int
		wantBody   string
	}{
		{"openai down", OpenAI, &Fault{Mode: FaultDown}, 0, "/realtime?model=chat-prod", nil, 503, "overloaded"},
		{"azure down", Azure, &Fault{Mode: FaultDown}, 0, "/openai/realtime?api-version=1&deployment=chat-prod", nil, 503, "ServiceUnavailable"},
		{"openai 500", OpenAI, &Fault{Mode: FaultError500}, 0, "/realtime?model=chat-prod", nil, 500, "server_error"},
		{"openai rate limited", OpenAI, nil, 6, "/realtime?model=chat-prod", nil, 429, "rate_limit_exceeded"},
		{"azure rate limited", Azure, nil, 6, "/openai/v1/realtime?model=chat-prod", nil, 429, "Realtime_Connect"},
		{"wrong key", OpenAI, nil, 0, "/realtime?model=chat-prod", http.Header{"Authorization": {"Bearer nope"}}, 401, "invalid_api_key"},
		{"other model", OpenAI, nil, 0, "/realtime?model=gpt-x", nil, 404, "model_not_found"},
		{"azure other deployment", Azure, nil, 0, "/openai/realtime?api-version=1&deployment=nope", nil, 404, "DeploymentNotFound"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Key = "k"; d.Quota = Quota{RPM: tc.rpm} }))
			ep := s.Deployments()[0]
			if tc.fault != nil {
				if err := s.SetFault("d1", *tc.fault); err != nil {
					t.Fatal(err)
				}
			}
			hdr := tc.hdr
			if hdr == nil {
				hdr = http.Header{"Authorization": {"Bearer k"}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.rpm > 0 { // use up the slice's one request
				c, _, err := websocket.Dial(ctx, wsURL(ep.URL)+tc.path, &websocket.DialOptions{HTTPHeader: hdr})
				if err != nil {
					t.Fatalf("first connect: %v", err)
				}
				c.CloseNow()
			}
			_, resp, err := websocket.Dial(ctx, wsURL(ep.URL)+tc.path, &websocket.DialOptions{HTTPHeader: hdr})
			if err == nil || resp == nil {
				t.Fatalf("dial succeeded (%v), want %d", err, tc.wantStatus)
			}
			var body strings.Builder
			if resp.Body != nil {
				b := make([]byte, 4096)
				n, _ := resp.Body.Read(b)
				body.Write(b[:n])
			}
			if resp.StatusCode != tc.wantStatus || !strings.Contains(body.String(), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, body.String(), tc.wantStatus, tc.wantBody)
			}
			if tc.wantStatus == 429 && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		})
	}
}

func TestRealtimeNotAWebSocket(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	resp, _ := do(t, "GET", ep.URL+"/realtime?model=chat-prod", "", nil)
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("plain GET: %d, want 426", resp.StatusCode)
	}
	if st := s.Stats()["d1"]; st.Rejected != 1 {
		t.Errorf("stats = %+v, want the refused connect rejected", st)
	}
}

func TestRealtimeSimCloseEndsSessions(t *testing.T) {
	s, err := Start(context.Background(), one(OpenAI, nil), WithWaiter(&recordWaiter{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, c := openSession(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := c.Read(ctx); err == nil {
		t.Error("the session is still open after Close")
	}
	if st := s.Stats()["d1"]; st.Abandoned != 1 || st.InFlight != 0 {
		t.Errorf("stats = %+v, want the session abandoned and nothing in flight", st)
	}
}

func TestRealtimeFaultEndsAnOpenSession(t *testing.T) {
	tests := []struct {
		name       string
		fault      FaultMode
		wantError  bool // a server_error event before the close
		wantStatus websocket.StatusCode
	}{
		{"down", FaultDown, true, websocket.StatusInternalError},
		{"error_500", FaultError500, true, websocket.StatusInternalError},
		{"reset", FaultReset, false, -1},
		{"drop_stream", FaultDropStream, false, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(OpenAI, nil))
			ctx, c := openSession(t, s)
			if err := s.SetFault("d1", Fault{Mode: tc.fault}); err != nil {
				t.Fatal(err)
			}
			sendEvent(t, ctx, c, `{"type":"session.update","session":{}}`)
			if tc.wantError {
				if ev := readEvent(t, ctx, c); ev.Type != "error" || ev.Error["type"] != "server_error" {
					t.Errorf("first event after the fault = %+v", ev)
				}
			}
			_, _, err := c.Read(ctx)
			if err == nil || websocket.CloseStatus(err) != tc.wantStatus {
				t.Errorf("read after the fault: %v (status %d), want close status %d", err, websocket.CloseStatus(err), tc.wantStatus)
			}
			eventually(t, "the session to be counted", func() bool { return s.Stats()["d1"].Errors == 1 })
		})
	}
}

func TestRealtimeBlackholeLeavesEventsUnanswered(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ctx, c := openSession(t, s)
	if err := s.SetFault("d1", Fault{Mode: FaultBlackhole}); err != nil {
		t.Fatal(err)
	}
	msgs := make(chan []byte, 10)
	go func() { // Ping needs a reader for its pong
		defer close(msgs)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			msgs <- b
		}
	}()
	sendEvent(t, ctx, c, `{"type":"session.update","session":{"instructions":"lost"}}`)
	// The server answers a ping only after it has handled the event before
	// it: once the pong is back, the event has been dropped.
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := s.SetFault("d1", Fault{}); err != nil {
		t.Fatal(err)
	}
	sendEvent(t, ctx, c, `{"type":"session.update","session":{"instructions":"seen"}}`)
	var ev rtEvent
	if err := json.Unmarshal(<-msgs, &ev); err != nil || ev.Type != "session.updated" || ev.Session["instructions"] != "seen" {
		t.Errorf("first answer = %+v (%v); the blackholed event should have none", ev, err)
	}
}

func TestRealtimeToolCall(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ctx, c := openSession(t, s)
	sendEvent(t, ctx, c, `{"type":"session.update","session":{"tools":[{"type":"function","name":"get_weather",`+
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}}`)
	readEvent(t, ctx, c) // session.updated
	respond := func(item string) (types []string, raw []string) {
		sendEvent(t, ctx, c, `{"type":"conversation.item.create","item":`+item+`}`)
		readEvent(t, ctx, c) // conversation.item.added
		readEvent(t, ctx, c) // conversation.item.done
		sendEvent(t, ctx, c, `{"type":"response.create"}`)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ev rtEvent
			_ = json.Unmarshal(b, &ev)
			types, raw = append(types, ev.Type), append(raw, string(b))
			if ev.Type == "response.done" {
				return types, raw
			}
		}
	}
	types, raw := respond(`{"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]}`)
	if !contains(types, "response.function_call_arguments.delta") || !contains(types, "response.function_call_arguments.done") ||
		!strings.Contains(raw[len(raw)-1], `"type":"function_call"`) || !strings.Contains(raw[len(raw)-1], `"arguments":"{\"city\":\"x\"}"`) {
		t.Errorf("tool response = %v\n%s", types, raw[len(raw)-1])
	}
	types, raw = respond(`{"type":"function_call_output","call_id":"call_1","output":"sunny"}`)
	if contains(types, "response.function_call_arguments.delta") || !contains(types, "response.output_text.delta") {
		t.Errorf("after the tool's output = %v\n%s", types, raw[len(raw)-1])
	}
}

// openSession dials the first deployment's realtime endpoint for the
// model chat-prod and reads its session.created; the session and its
// 10 s context end with the test.
func openSession(t *testing.T, s *Sim) (context.Context, *websocket.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, wsURL(s.Deployments()[0].URL)+"/realtime?model=chat-prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	if ev := readEvent(t, ctx, c); ev.Type != "session.created" {
		t.Fatalf("first event %s", ev.Type)
	}
	return ctx, c
}
