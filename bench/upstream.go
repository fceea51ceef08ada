package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// chatAnswer is the mock's non-streaming answer: an Azure OpenAI chat
// completion with usage, as the gateway reads it.
var chatAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1764633600,"model":"gpt-4o-2024-08-06",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":13,"completion_tokens":2,"total_tokens":15}}`)

// StreamShape is how the mock streams: Chunks content chunks, Interval
// apart, then [DONE]. With Hold, the stream stops after Chunks chunks and
// stays open until the mock is released or the caller goes away.
type StreamShape struct {
	Chunks   int
	Interval time.Duration
	Hold     bool
}

// Upstream is the built-in mock LLM upstream: any POST answers an Azure
// OpenAI chat completion, or, when the body asks for "stream":true, an SSE
// stream shaped by its StreamShape. It serves on 127.0.0.1 only. It is
// safe for concurrent use.
type Upstream struct {
	URL string
	// CAFile is the PEM file of the TLS upstream's certificate (empty for
	// plain HTTP): a client that trusts it reaches the upstream over h2.
	CAFile string

	srv   *httptest.Server
	shape atomic.Pointer[StreamShape]
	held  atomic.Int64
	calls atomic.Int64

	mu      sync.Mutex
	release chan struct{}
}

// NewUpstream starts a plain HTTP/1.1 mock upstream on 127.0.0.1.
func NewUpstream() (*Upstream, error) {
	return newUpstream(false, "")
}

// NewTLSUpstream starts a mock upstream serving HTTP/2 (and HTTP/1.1)
// over TLS, and writes its certificate to dir/upstream-ca.pem.
func NewTLSUpstream(dir string) (*Upstream, error) {
	return newUpstream(true, dir)
}

func newUpstream(withTLS bool, dir string) (*Upstream, error) {
	u := &Upstream{release: make(chan struct{})}
	u.shape.Store(&StreamShape{Chunks: 5, Interval: 10 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serve))
	u.srv.Listener.Close()
	u.srv.Listener = ln
	if !withTLS {
		u.srv.Start()
		u.URL = u.srv.URL
		return u, nil
	}
	u.srv.EnableHTTP2 = true
	u.srv.TLS = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	u.srv.StartTLS()
	u.URL = u.srv.URL
	u.CAFile = dir + "/upstream-ca.pem"
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
	if err := os.WriteFile(u.CAFile, pemBytes, 0o600); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// SetStream sets the shape of the streams answered from now on.
func (u *Upstream) SetStream(s StreamShape) { u.shape.Store(&s) }

// Held is how many streams are open and held.
func (u *Upstream) Held() int64 { return u.held.Load() }

// Calls is how many requests have arrived.
func (u *Upstream) Calls() int64 { return u.calls.Load() }

// Release ends every held stream, and makes ready for the next holds.
func (u *Upstream) Release() {
	u.mu.Lock()
	close(u.release)
	u.release = make(chan struct{})
	u.mu.Unlock()
}

func (u *Upstream) releaseCh() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.release
}

// Close stops the upstream, ending held streams first.
func (u *Upstream) Close() {
	u.Release()
	u.srv.CloseClientConnections()
	u.srv.Close()
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	h := w.Header()
	h.Set("X-Ratelimit-Remaining-Requests", "100000")
	h.Set("X-Ratelimit-Remaining-Tokens", "10000000")
	h.Set("X-Request-Id", "bench")
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(chatAnswer)))
		w.Write(chatAnswer)
		return
	}
	u.stream(w, r)
}

// stream writes the SSE answer, flushing each chunk on its own; the first
// leaves with the headers.
func (u *Upstream) stream(w http.ResponseWriter, r *http.Request) {
	s := *u.shape.Load()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	fl := http.NewResponseController(w)
	release := u.releaseCh()
	for i := 0; i < s.Chunks; i++ {
		if i > 0 && s.Interval > 0 {
			t := time.NewTimer(s.Interval)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1764633600,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
		if fl.Flush() != nil {
			return
		}
	}
	if s.Hold {
		u.held.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		u.held.Add(-1)
		if r.Context().Err() != nil {
			return
		}
	}
	io.WriteString(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1764633600,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
		"data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1764633600,\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":13,\"completion_tokens\":5,\"total_tokens\":18}}\n\n"+
		"data: [DONE]\n\n")
	fl.Flush()
}

// waitHeld waits until n streams are held, ctx ends, or timeout passes,
// and returns how many are held.
func (u *Upstream) waitHeld(ctx context.Context, n int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for u.Held() < n && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return u.Held()
		case <-t.C:
		}
	}
	return u.Held()
}
