package route_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// h2Upstream is an https upstream speaking HTTP/2 (and HTTP/1.1) that
// streams chat chunks: the first at once, the second only once release
// is closed, so a client that reads the first before it is released
// shows the stream is passed on as it comes. It records the protocol
// and connection of each request.
type h2Upstream struct {
	srv     *httptest.Server
	release chan struct{}

	mu     sync.Mutex
	protos []int
	conns  map[string]bool
}

func newH2Upstream(t *testing.T, maxStreams uint32) *h2Upstream {
	u := &h2Upstream{release: make(chan struct{}), conns: map[string]bool{}}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.protos = append(u.protos, r.ProtoMajor)
		u.conns[r.RemoteAddr] = true
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"one "}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"two"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	u.srv.EnableHTTP2 = true
	if maxStreams > 0 {
		u.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: int(maxStreams)}
	}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

// pool is a pool of one backend at the upstream, through a transport of
// NewTransport with s, trusting the upstream's test certificate.
func (u *h2Upstream) pool(t *testing.T, s route.TransportSettings) *route.Pool {
	tr := route.NewTransport(s)
	tr.TLSClientConfig = &tls.Config{RootCAs: u.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	t.Cleanup(tr.CloseIdleConnections)
	base, _ := url.Parse(u.srv.URL + "/v1")
	b := &route.Backend{Name: "up", Provider: &route.OpenAI{BaseURL: base, APIKey: "k"}, Transport: tr,
		FirstByteTimeout: time.Minute, StreamFirstByteTimeout: time.Minute, Timeout: time.Minute, IdleTimeout: time.Minute}
	return &route.Pool{Name: "p", Members: []*route.Member{{Backend: b, Priority: 1}}}
}

func streamCall(ctx context.Context, p *route.Pool) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://gw.invalid/v1/chat/completions",
		strings.NewReader(`{"model":"p","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	return p.RoundTrip(req)
}

// firstEvent reads the stream's first data line.
func firstEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before its first event: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			return line
		}
	}
}

// TestTransportSpeaksHTTP2ToTLSBackends: a streamed call to an https
// backend that offers HTTP/2 goes over HTTP/2, its events passed on as
// they come; with HTTP1Only it goes over HTTP/1.1.
func TestTransportSpeaksHTTP2ToTLSBackends(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     route.TransportSettings
		proto int
	}{
		{"default", route.TransportSettings{}, 2},
		{"http2 off", route.TransportSettings{HTTP1Only: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newH2Upstream(t, 0)
			resp, err := streamCall(t.Context(), u.pool(t, tc.s))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if ev := firstEvent(t, br); !strings.Contains(ev, "one ") {
				t.Fatalf("first event %q", ev)
			}
			close(u.release) // the second event is sent only now
			rest, err := io.ReadAll(br)
			if err != nil || !strings.Contains(string(rest), `"two"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
				t.Fatalf("rest of the stream %q (%v)", rest, err)
			}
			if len(u.protos) != 1 || u.protos[0] != tc.proto {
				t.Fatalf("upstream saw HTTP/%v, want HTTP/%d", u.protos, tc.proto)
			}
		})
	}
}

// TestTransportOpensAnotherConnectionPastTheStreamLimit: with a backend
// that allows 2 concurrent streams on a connection, 5 streams at once
// are all answered (none waits for another to end) over at least 3
// HTTP/2 connections: the transport opens a connection rather than
// queue a call behind the limit.
func TestTransportOpensAnotherConnectionPastTheStreamLimit(t *testing.T) {
	u := newH2Upstream(t, 2)
	p := u.pool(t, route.TransportSettings{})
	const n = 5
	var bodies []io.ReadCloser
	for range n {
		resp, err := streamCall(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp.Body)
		// Each stream is open (its first event read) while the next starts.
		if ev := firstEvent(t, bufio.NewReader(resp.Body)); !strings.Contains(ev, "one ") {
			t.Fatalf("first event %q", ev)
		}
	}
	close(u.release)
	for _, b := range bodies {
		io.Copy(io.Discard, b)
		b.Close()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, pr := range u.protos {
		if pr != 2 {
			t.Fatalf("upstream saw HTTP/%v, want 2 for every call", u.protos)
		}
	}
	if len(u.conns) < 3 {
		t.Fatalf("%d streams at once over %d connections, want at least 3 with 2 streams a connection", n, len(u.conns))
	}
}
