// Package upstreamtest provides scripted loopback LLM backends for tests:
// each call plays the next step of a script (an answer, a status with
// headers, a hang, a connection reset, an SSE stream that may die).
package upstreamtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Step is one scripted upstream behaviour.
type Step func(w http.ResponseWriter, r *http.Request)

// Upstream is a loopback backend that plays a script: each call takes the
// next step, and the last step repeats.
type Upstream struct {
	*httptest.Server
	mu      sync.Mutex
	script  []Step
	calls   int
	bodies  []string
	headers []http.Header
	paths   []string
}

// New starts an upstream playing script, closed when the test ends.
func New(t testing.TB, script ...Step) *Upstream {
	t.Helper()
	u := &Upstream{script: script}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	i := min(u.calls, len(u.script)-1)
	u.calls++
	u.bodies = append(u.bodies, string(b))
	u.headers = append(u.headers, r.Header.Clone())
	u.paths = append(u.paths, r.URL.RequestURI())
	s := u.script[i]
	u.mu.Unlock()
	s(w, r)
}

// Calls is how many requests have arrived.
func (u *Upstream) Calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// Body is the body of request i.
func (u *Upstream) Body(i int) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bodies[i]
}

// Header is the header of request i.
func (u *Upstream) Header(i int) http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers[i]
}

// Path is the request URI of request i.
func (u *Upstream) Path(i int) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.paths[i]
}

// Answer replies 200 with a chat completion naming the backend.
func Answer(name string) Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "59")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hello from %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`, name)
	}
}

// Status replies with code, an OpenAI-style error body and headers given
// as key, value pairs.
func Status(code int, kv ...string) Step {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"code":"%d","message":"scripted %d"}}`, code, code)
	}
}

// Raw replies with code and body as given.
func Raw(code int, body string) Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// Hang never answers; it returns when the client gives up.
func Hang(w http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

// Reset closes the connection without a response, with a TCP RST.
func Reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// SSE streams events, each as a data line. After dieAfter events (when
// dieAfter >= 0) it cuts the connection off mid-stream.
func SSE(name string, n, dieAfter int) Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		for i := 0; i < n; i++ {
			if i == dieAfter {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err == nil {
					buf.Flush()
					conn.Close()
				}
				return
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s-%d \"}}]}\n\n", name, i)
			f.Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// HeadersThenHang sends stream headers and then nothing.
func HeadersThenHang(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// SetScript replaces the script; the next call takes its first step.
func (u *Upstream) SetScript(script ...Step) {
	u.mu.Lock()
	u.script = script
	u.calls = 0
	u.bodies, u.headers, u.paths = nil, nil, nil
	u.mu.Unlock()
}

// TwoRegions is the configuration the engine's and the gateway's tests
// serve: the key ${TEST_APP_KEY}; two backends, aoai-westeurope (azure,
// at weu, key ${TEST_WEU_KEY}, a breaker of 2 failures in 30s; weuExtra,
// YAML lines of that backend, after it) and aoai-swedencentral (openai,
// at sec, key ${TEST_SEC_KEY}); and the pool chat-prod (alias gpt-4o)
// with westeurope at priority 1 and swedencentral at 2.
func TwoRegions(weu, sec *Upstream, weuExtra string) string {
	return fmt.Sprintf(`
listen: 127.0.0.1:0
log: {format: json, level: debug}
server: {max_body: 64KiB, shutdown_grace: 5s, drain_delay: 0s}
keys:
  - name: app-team
    key: ${TEST_APP_KEY}
backends:
  - name: aoai-westeurope
    type: azure
    url: %s
    api_key: ${TEST_WEU_KEY}
    region: westeurope
    breaker: {failures: 2, window: 30s, trip: 60s}
%s
  - name: aoai-swedencentral
    type: openai
    url: %s/v1
    api_key: ${TEST_SEC_KEY}
    region: swedencentral
pools:
  - name: chat-prod
    aliases: [gpt-4o]
    members:
      - {backend: aoai-westeurope, priority: 1, weight: 100, model: gpt-4o-weu}
      - {backend: aoai-swedencentral, priority: 2, weight: 100, model: gpt-4o}
`, weu.URL, weuExtra, sec.URL)
}
