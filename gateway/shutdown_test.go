package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// TestDrainFailsReadinessWhileServing is the regression test for SIGTERM
// closing the listener at once: /readyz was refused before a load balancer
// had taken the replica out, and callers got refusals. During drain_delay
// /readyz says 503 while requests are still served; then the listener
// closes.
func TestDrainFailsReadinessWhileServing(t *testing.T) {
	h := startAnswering(t,
		func(y string) string { return strings.Replace(y, "drain_delay: 0s", "drain_delay: 10s", 1) })
	if resp, _ := h.get("/readyz"); resp.StatusCode != 200 {
		t.Fatalf("readyz before SIGTERM: %d", resp.StatusCode)
	}
	h.stop() // SIGTERM
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilTimer(ctx, 10*time.Second); err != nil {
		t.Fatal("Serve is not waiting out the drain delay")
	}
	resp, body := h.get("/readyz")
	if resp.StatusCode != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("readyz while draining: %d %q", resp.StatusCode, body)
	}
	resp, body = h.post("/v1/chat/completions", chat)
	if resp.StatusCode != 200 || !strings.Contains(body, "weu") {
		t.Fatalf("request while draining: %d %s", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Error("a draining gateway keeps connections alive")
	}
	select {
	case <-h.done:
		t.Fatal("Serve returned before the drain delay ended")
	default:
	}
	h.clock.Advance(10 * time.Second)
	serveReturned(t, h, "the drain delay")
	if _, err := testClient.Get(h.url + "/healthz"); err == nil {
		t.Fatal("still accepting after the drain delay")
	}
}

// TestStreamCutAtEndOfGraceGetsShutdownEvent: a stream still open when
// shutdown_grace ends gets an SSE error event saying the gateway is
// shutting down, in the client's format, and is logged as that, not as a
// client that went away (499).
func TestStreamCutAtEndOfGraceGetsShutdownEvent(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             []string // in the last event
	}{
		{"openai", "/v1/chat/completions", `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			[]string{`data: {"error":{"message":"switchover: the gateway is shutting down; the response is incomplete","type":"server_error","param":null,"code":"shutting_down"}}`}},
		{"anthropic", "/v1/messages", `{"model":"chat-prod","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
			[]string{"event: error", `"message":"switchover: the gateway is shutting down; the response is incomplete"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{})
			stream := func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`+"\n\n")
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done() // until the gateway gives up on it
			}
			// A grace no other timer shares, so the test knows when Serve
			// waits on it.
			h := start(t, []upstreamtest.Step{stream}, []upstreamtest.Step{answer("sec")}, "",
				func(y string) string { return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 7s", 1) })
			req, _ := http.NewRequest("POST", h.url+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+appKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			<-started
			h.stop() // SIGTERM
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.clock.BlockUntilTimer(ctx, 7*time.Second); err != nil {
				t.Fatal("Serve is not waiting out the grace period")
			}
			h.clock.Advance(7 * time.Second)
			var events []string
			var ev strings.Builder
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if sc.Text() == "" {
					events = append(events, ev.String())
					ev.Reset()
					continue
				}
				ev.WriteString(sc.Text() + "\n")
			}
			if len(events) == 0 {
				t.Fatalf("no events: %s", h.logs.String())
			}
			last := events[len(events)-1]
			for _, w := range tc.want {
				if !strings.Contains(last, w) {
					t.Fatalf("last event lacks %s:\n%s\nall: %q\nlogs: %s", w, last, events, h.logs.String())
				}
			}
			serveReturned(t, h, "the grace period")
			var line map[string]any
			for _, l := range strings.Split(h.logs.String(), "\n") {
				if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, tc.path) {
					json.Unmarshal([]byte(l), &line)
				}
			}
			if line["status"] != float64(200) || line["error"] != "the gateway is shutting down" {
				t.Fatalf("request logged as %v", line)
			}
		})
	}
}

// TestRequestWaitingAtEndOfGraceGets503: a request whose backend has not
// answered when shutdown_grace ends gets 503 shutting_down, not a cut
// connection.
func TestRequestWaitingAtEndOfGraceGets503(t *testing.T) {
	waiting := make(chan struct{})
	hang := func(w http.ResponseWriter, r *http.Request) {
		close(waiting)
		<-r.Context().Done()
	}
	h := start(t, []upstreamtest.Step{hang}, []upstreamtest.Step{answer("sec")}, "",
		func(y string) string { return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 7s", 1) })
	type result struct {
		status int
		body   string
	}
	got := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", strings.NewReader(chat))
		req.Header.Set("Authorization", "Bearer "+appKey)
		resp, err := testClient.Do(req)
		if err != nil {
			got <- result{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp.StatusCode, string(b)}
	}()
	<-waiting
	h.stop() // SIGTERM
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilTimer(ctx, 7*time.Second); err != nil {
		t.Fatal("Serve is not waiting out the grace period")
	}
	h.clock.Advance(7 * time.Second)
	r := <-got
	if r.status != 503 || !strings.Contains(r.body, `"code":"shutting_down"`) {
		t.Fatalf("answer %d %s", r.status, r.body)
	}
	serveReturned(t, h, "the grace period")
}

// serveReturned waits for the harness's Serve to return without error
// once what (the drain delay, the grace period) is over, and puts the
// result back for the cleanup. The 10 s bound guards against a hang; it
// is no timing assertion.
func serveReturned(t *testing.T, h *harness, what string) {
	t.Helper()
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
		h.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve did not return after %s", what)
	}
}

func TestGracefulShutdownLetsStreamsFinish(t *testing.T) {
	started := make(chan struct{})
	proceed := make(chan struct{})
	stream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		close(started)
		<-proceed
		io.WriteString(w, "data: {\"n\":2}\n\ndata: [DONE]\n\n")
	}
	h := start(t, []upstreamtest.Step{stream}, []upstreamtest.Step{answer("sec")}, "")
	req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", strings.NewReader(`{"model":"chat-prod","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+appKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	h.stop() // SIGTERM: stop accepting, let in-flight streams finish
	// New connections are refused once the listener is closed.
	select {
	case <-h.closed:
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("the listener was not closed after shutdown began")
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := c.Get(h.url + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown began")
	}
	close(proceed)
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	if err := sc.Err(); err != nil || len(lines) != 3 || lines[2] != "data: [DONE]" {
		t.Fatalf("stream during shutdown: %q, %v", lines, err)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
		h.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the stream finished")
	}
}
