package gateway_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

func TestReadTimeoutDoesNotCutStreams(t *testing.T) {
	// A stream that runs well past read_timeout must finish: the timeout
	// bounds reading the request, not the life of the response.
	slow := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 6; i++ {
			io.WriteString(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
	h := start(t, []upstreamtest.Step{slow}, []upstreamtest.Step{answer("sec")}, "",
		func(y string) string {
			return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 5s, read_timeout: 200ms", 1)
		})
	resp, body := h.post("/v1/chat/completions", `{"model":"chat-prod","stream":true}`)
	if resp.StatusCode != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream cut: %d %q", resp.StatusCode, body)
	}
}

func TestSlowRequestBodyTimesOut(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, []upstreamtest.Step{answer("sec")}, "",
		func(y string) string {
			return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 5s, read_timeout: 200ms", 1)
		})
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // the rest never comes
	go pw.Write([]byte(`{"model":"chat-prod",`))
	req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", pr)
	req.Header.Set("Authorization", "Bearer "+appKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
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
