package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
)

// streamKey is the key of the gateways streamGateway starts.
const streamKey = "stream-test-key-0123456789abcdef0123456789"

// streamGateway serves a gateway, its API guard and key included, whose
// pool "chat" has one openai backend: upstream. It returns the gateway's
// chat completions URL.
func streamGateway(t *testing.T, upstream http.Handler) string {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	path := filepath.Join(t.TempDir(), "gw.yaml")
	yaml := `listen: 127.0.0.1:0
log: {level: warn}
keys:
  - {name: app, key: ` + streamKey + `}
backends:
  - {name: up, type: openai, url: "` + up.URL + `/v1", api_key: upstream-key-0123456789, region: loopback}
pools:
  - name: chat
    members: [{backend: up}]
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(cfg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := g.Server()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1/chat/completions"
}

// TestEveryStreamEventIsFlushedOnItsOwn sends a stream in lock step: the
// upstream sends its next event only once the client has read the one
// before through the gateway. An event held in a buffer of the gateway's
// (the copy, the line reader, net/http's) until more arrives would stop
// the stream; the test then fails at its deadline instead of hanging.
func TestEveryStreamEventIsFlushedOnItsOwn(t *testing.T) {
	const events = 5
	read := make(chan struct{})
	url := streamGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"w`+string(rune('0'+i))+`"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-read:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	// A bound for a stuck stream, not a measure: the call ends with it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"model":"chat","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+streamKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer (its header goes out with the first event): %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() != "" {
				lines <- sc.Text()
			}
		}
	}()
	for i := range events {
		line, ok := <-lines
		if !ok {
			t.Fatalf("event %d never reached the client: held until more arrives?", i)
		}
		if want := `"content":"w` + string(rune('0'+i)) + `"`; !strings.Contains(line, want) {
			t.Fatalf("event %d: %s, want %s in it", i, line, want)
		}
		read <- struct{}{}
	}
}
