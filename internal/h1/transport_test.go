package h1_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/switchover-gw/switchover/internal/h1"
	"github.com/switchover-gw/switchover/internal/poll"
)

// counted is a test server that counts the connections it accepted.
type counted struct {
	*httptest.Server
	conns atomic.Int64
}

func newCounted(t *testing.T, h http.HandlerFunc) *counted {
	t.Helper()
	s := &counted{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func post(t *testing.T, tr http.RoundTripper, u, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	resp.Body.Close()
	return string(b)
}

func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Method", r.Method)
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), b)
}

// TestCallsShareOneKeptConnection: calls one after another go over one
// connection, the request intact, and it is kept idle between them.
func TestCallsShareOneKeptConnection(t *testing.T) {
	srv := newCounted(t, echo)
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	for i := range 3 {
		resp, err := post(t, tr, srv.URL+"/v1/chat?x=1", fmt.Sprintf(`{"n":%d}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readAll(t, resp), fmt.Sprintf(`POST /v1/chat?x=1 {"n":%d}`, i); got != want {
			t.Fatalf("call %d: answer %q, want %q", i, got, want)
		}
		if resp.Header.Get("X-Method") != "POST" || resp.StatusCode != 200 {
			t.Fatalf("call %d: status %d, headers %v", i, resp.StatusCode, resp.Header)
		}
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 calls, want 1", n)
	}
	if n := tr.IdleConns(srv.Listener.Addr().String()); n != 1 {
		t.Errorf("%d idle connections, want 1", n)
	}
}

// TestStreamArrivesAsItIsSent: each event of a stream can be read before
// the server sends the next.
func TestStreamArrivesAsItIsSent(t *testing.T) {
	next := make(chan struct{})
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			if i < 2 {
				<-next
			}
		}
	})
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, srv.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		br.ReadString('\n')
		if i < 2 {
			next <- struct{}{}
		}
	}
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		t.Fatalf("left over %q", rest)
	}
	resp.Body.Close()
	if n := tr.IdleConns(srv.Listener.Addr().String()); n != 1 {
		t.Errorf("a stream read to its end left %d idle connections, want 1", n)
	}
}

// TestClosedEarlyClosesTheConnection: a body closed before its end
// closes its connection (what is left of the answer is never read into
// another call) and the next call dials anew.
func TestClosedEarlyClosesTheConnection(t *testing.T) {
	release := make(chan struct{})
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			io.WriteString(w, "first part")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		io.WriteString(w, "ok")
	})
	defer close(release)
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := post(t, tr, srv.URL+"/hold", "")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n, err := resp.Body.Read(buf); n != 0 || err == nil {
		t.Errorf("a read after Close gave %d, %v", n, err)
	}
	if n := tr.IdleConns(srv.Listener.Addr().String()); n != 0 {
		t.Errorf("%d idle connections after an early close, want 0", n)
	}
	resp, err = post(t, tr, srv.URL+"/next", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "ok" {
		t.Fatalf("next call: %q", got)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestCancelEndsAWaitingCall: cancelling the context ends a call waiting
// for its answer's headers, and one whose body read waits, with the
// context's error; neither connection is kept.
func TestCancelEndsAWaitingCall(t *testing.T) {
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()

	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/headers", strings.NewReader("{}"))
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("waiting for headers: %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/body", strings.NewReader("{}"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := resp.Body.Read(buf); n != 1 || err != nil {
		t.Fatalf("first read: %d, %v", n, err)
	}
	go cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting in the body: %v, want context.Canceled", err)
	}
	resp.Body.Close()
	if n := tr.IdleConns(srv.Listener.Addr().String()); n != 0 {
		t.Errorf("%d idle connections after cancels, want 0", n)
	}
}

// rawServer answers each connection with script, reading one request
// before each answer; close ends the connection after the answers.
type rawServer struct {
	ln       net.Listener
	conns    atomic.Int64
	requests chan string   // each request's body
	closed   chan struct{} // a connection closed by the server
	wg       sync.WaitGroup
}

func newRaw(t *testing.T, answers []string, closeAfter bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, requests: make(chan string, 16), closed: make(chan struct{}, 16)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { c.Close(); s.closed <- struct{}{} }()
				br := bufio.NewReader(c)
				for _, a := range answers {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					s.requests <- string(b)
					if _, err := io.WriteString(c, a); err != nil {
						return
					}
				}
				if !closeAfter {
					io.Copy(io.Discard, br)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// TestServerClosedIdleConnectionIsPassedOver: a kept connection the
// server closed while it was idle is found by the check before use, and
// the call goes over a new one without an error and without being sent
// twice.
func TestServerClosedIdleConnectionIsPassedOver(t *testing.T) {
	srv := newRaw(t, []string{okAnswer}, true)
	tr := &h1.Transport{}
	h1.SetCheckAfter(tr, time.Nanosecond)
	defer tr.CloseIdleConnections()
	for i := range 2 {
		// Without GetBody: a retry could not hide a connection not checked.
		body := fmt.Sprintf("call %d", i)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url(), io.NopCloser(strings.NewReader(body)))
		req.ContentLength = int64(len(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("call %d: %q", i, got)
		}
		if got := <-srv.requests; got != fmt.Sprintf("call %d", i) {
			t.Fatalf("server got %q", got)
		}
		if i == 0 {
			<-srv.closed // the server's end is closed: its FIN is on the way
		}
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	select {
	case r := <-srv.requests:
		t.Errorf("a request was sent twice: %q", r)
	default:
	}
}

// TestSweepClosesWhatTheServerClosedAndKeepsTheRest: the sweep, which
// checks idle connections outside the transport's lock, closes a kept
// connection its server closed and puts the live one back, which the
// next call then uses.
func TestSweepClosesWhatTheServerClosedAndKeepsTheRest(t *testing.T) {
	closing := newRaw(t, []string{okAnswer}, true)
	keeping := newRaw(t, []string{okAnswer, okAnswer}, false)
	tr := &h1.Transport{}
	h1.SetCheckAfter(tr, time.Nanosecond)
	defer tr.CloseIdleConnections()
	call := func(srv *rawServer) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url(), strings.NewReader("x"))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("answer %q", got)
		}
		<-srv.requests
	}
	call(closing)
	call(keeping)
	<-closing.closed
	hostOf := func(s *rawServer) string { return s.ln.Addr().String() }
	// The FIN may still be on its way: sweep until the check sees it.
	poll.Until(t, 5*time.Second, func() bool {
		h1.Sweep(tr)
		return tr.IdleConns(hostOf(closing)) == 0
	}, func() string { return "the connection the server closed is still kept" })
	if n := tr.IdleConns(hostOf(keeping)); n != 1 {
		t.Fatalf("%d live connections kept after the sweep, want 1", n)
	}
	call(keeping)
	if n := keeping.conns.Load(); n != 1 {
		t.Errorf("the server saw %d connections, want 1 (the one the sweep put back)", n)
	}
}

// staleKept returns a server that closes each connection after one
// answer, and a transport that does not check kept connections before
// use, holding one such connection the server has closed.
func staleKept(t *testing.T) (*rawServer, *h1.Transport) {
	t.Helper()
	srv := newRaw(t, []string{okAnswer}, true)
	tr := &h1.Transport{}
	h1.SetCheckAfter(tr, -1)
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := post(t, tr, srv.url(), "first")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	<-srv.requests
	<-srv.closed
	return srv, tr
}

// TestStaleKeptConnectionIsRetriedOnce: when the check before use is not
// made (a connection idle under a second) and the server had closed it,
// the call fails before any byte of its answer and is made once more on
// a new connection, with the same body.
func TestStaleKeptConnectionIsRetriedOnce(t *testing.T) {
	srv, tr := staleKept(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url(), bytes.NewReader([]byte("second")))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("the call on a stale connection: %v", err)
	}
	if got := readAll(t, resp); got != "ok" {
		t.Fatalf("answer %q", got)
	}
	if got := <-srv.requests; got != "second" {
		t.Errorf("the retried request's body: %q", got)
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestNoRetryOnANewConnection: a call whose new connection is closed
// without an answer fails once; nothing is sent again.
func TestNoRetryOnANewConnection(t *testing.T) {
	srv := newRaw(t, []string{""}, true)
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	_, err := post(t, tr, srv.url(), "once")
	if err == nil {
		t.Fatal("a call closed without an answer succeeded")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestNoRetryWithoutGetBody: a body that cannot be had again is not sent
// again, even on a stale kept connection.
func TestNoRetryWithoutGetBody(t *testing.T) {
	srv, tr := staleKept(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.url(), io.NopCloser(strings.NewReader("second")))
	req.ContentLength = 6
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a call on a stale connection without GetBody succeeded")
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestAnswersThatEndTheConnection: an answer with Connection: close, an
// HTTP/1.0 answer and one cut short are not kept; one without a body is,
// at once.
func TestAnswersThatEndTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		kept         bool
		err          bool
	}{
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", false, true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", true, false},
		{"empty", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", true, false},
		{"informational first", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" + okAnswer, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRaw(t, []string{tc.answer}, tc.name == "cut short")
			tr := &h1.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := post(t, tr, srv.url(), "x")
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if (err != nil) != tc.err {
				t.Errorf("reading the body: %v", err)
			}
			if got := tr.IdleConns(srv.ln.Addr().String()); (got == 1) != tc.kept {
				t.Errorf("%d idle connections, kept %v", got, tc.kept)
			}
		})
	}
}

// TestAnswersRefused: too many informational answers, headers past the
// bound, and a 101 to a request that did not ask to upgrade end the call
// with an error.
func TestAnswersRefused(t *testing.T) {
	hints := strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + okAnswer
	big := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 4096) + "\r\nContent-Length: 2\r\n\r\nok"
	for name, answer := range map[string]string{
		"too many 1xx":    hints,
		"headers too big": big,
		"unasked 101":     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := newRaw(t, []string{answer}, false)
			tr := &h1.Transport{MaxResponseHeaderBytes: 1024}
			defer tr.CloseIdleConnections()
			if resp, err := post(t, tr, srv.url(), "x"); err == nil {
				resp.Body.Close()
				t.Fatalf("answered %d", resp.StatusCode)
			}
		})
	}
}

// recorder is a fallback transport that records what it was given.
type recorder struct{ got []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.URL.String())
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: req}, nil
}

// TestCallsForTheFallback: https, upgrades, Expect: 100-continue and
// proxied hosts go to Fallback; without one they fail with ErrNoFallback.
func TestCallsForTheFallback(t *testing.T) {
	srv := newCounted(t, echo)
	proxied, _ := url.Parse(srv.URL)
	proxied.Host = "proxied.invalid:80"
	fb := &recorder{}
	tr := &h1.Transport{Fallback: fb, Proxy: func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == proxied.Host {
			return url.Parse("http://proxy.invalid:3128")
		}
		return nil, nil
	}}
	defer tr.CloseIdleConnections()
	mk := func(u string, h ...string) *http.Request {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		for i := 0; i < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		return req
	}
	for _, req := range []*http.Request{
		mk("https://example.invalid/v1"),
		mk(srv.URL+"/ws", "Upgrade", "websocket", "Connection", "Upgrade"),
		mk(srv.URL+"/big", "Expect", "100-continue"),
		mk(proxied.String() + "/p"),
	} {
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 299 {
			t.Errorf("%s: %v, %v; want the fallback's answer", req.URL, resp, err)
		}
	}
	if len(fb.got) != 4 {
		t.Errorf("fallback got %v", fb.got)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("%d connections made to the server, want 0", n)
	}
	_, err := (&h1.Transport{}).RoundTrip(mk("https://example.invalid/"))
	if !errors.Is(err, h1.ErrNoFallback) {
		t.Errorf("without a fallback: %v", err)
	}
}

// pipeServer dials in-memory connections answered by a loop of its own,
// so that tests of timing run in a synctest bubble.
type pipeServer struct {
	mu     sync.Mutex
	closed int // connections the client closed
	dialed int
}

func (p *pipeServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	p.mu.Lock()
	p.dialed++
	p.mu.Unlock()
	go func() {
		br := bufio.NewReader(server)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				p.mu.Lock()
				p.closed++
				p.mu.Unlock()
				server.Close()
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(server, okAnswer)
		}
	}()
	return client, nil
}

func (p *pipeServer) counts() (dialed, closed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialed, p.closed
}

// TestIdleConnectionsCloseAfterTheIdleTimeout: kept connections are
// closed once unused for IdleConnTimeout, and no timer is left behind.
func TestIdleConnectionsCloseAfterTheIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := &pipeServer{}
		tr := &h1.Transport{DialContext: ps.dial, IdleConnTimeout: 30 * time.Second}
		for range 2 {
			resp, err := post(t, tr, "http://backend.test/", "x")
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
		}
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if n := tr.IdleConns("backend.test:80"); n != 1 {
			t.Fatalf("%d idle connections before the timeout, want 1", n)
		}
		time.Sleep(12 * time.Second) // the sweep runs every 10 s
		synctest.Wait()
		if n := tr.IdleConns("backend.test:80"); n != 0 {
			t.Fatalf("%d idle connections after the timeout, want 0", n)
		}
		if dialed, closed := ps.counts(); dialed != 1 || closed != 1 {
			t.Errorf("dialed %d, closed %d; want 1 and 1", dialed, closed)
		}
	})
}

// TestIdleConnectionsBoundedPerHost: connections past
// MaxIdleConnsPerHost are closed as they come back.
func TestIdleConnectionsBoundedPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := &pipeServer{}
		tr := &h1.Transport{DialContext: ps.dial, MaxIdleConnsPerHost: 2}
		defer tr.CloseIdleConnections()
		var resps []*http.Response
		for range 4 {
			resp, err := post(t, tr, "http://backend.test/", "x")
			if err != nil {
				t.Fatal(err)
			}
			resps = append(resps, resp) // held: each call takes a connection of its own
		}
		for _, resp := range resps {
			readAll(t, resp)
		}
		synctest.Wait()
		if n := tr.IdleConns("backend.test:80"); n != 2 {
			t.Errorf("%d idle connections, want 2", n)
		}
		if dialed, closed := ps.counts(); dialed != 4 || closed != 2 {
			t.Errorf("dialed %d, closed %d; want 4 and 2", dialed, closed)
		}
		tr.CloseIdleConnections()
		synctest.Wait()
		if _, closed := ps.counts(); closed != 4 {
			t.Errorf("closed %d after CloseIdleConnections, want 4", closed)
		}
	})
}

// TestConcurrentCalls: many goroutines share the pool while idle
// connections are closed under them (run with -race).
func TestConcurrentCalls(t *testing.T) {
	srv := newCounted(t, echo)
	tr := &h1.Transport{MaxIdleConnsPerHost: 4}
	defer tr.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				body := fmt.Sprintf("g%d-%d", g, i)
				resp, err := post(t, tr, srv.URL+"/c", body)
				if err != nil {
					errs <- err
					return
				}
				if got := readAll(t, resp); got != "POST /c "+body {
					errs <- fmt.Errorf("answer %q for %q", got, body)
					return
				}
				if i%10 == 0 {
					tr.CloseIdleConnections()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkRoundTrip compares a call over this transport with one over
// net/http's, the same server, plain HTTP/1.1.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for name, tr := range map[string]http.RoundTripper{
		"h1":       &h1.Transport{},
		"net-http": &http.Transport{},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// closeTracker is a request body that records its Close.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error { c.closed.Store(true); return nil }

// TestDialFailureClosesTheBodyAndSaysDial: a call whose connection cannot
// be made fails with the dial's error (what the engine classifies as a
// connection failure) and its body is closed, as a RoundTripper must.
func TestDialFailureClosesTheBodyAndSaysDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	body := &closeTracker{Reader: strings.NewReader("x")}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/", body)
	_, err = (&h1.Transport{}).RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("error %v, want a dial error", err)
	}
	if !body.closed.Load() {
		t.Error("the request body was not closed")
	}
}

// TestLargeBodyIsStreamed: a body over the inline bound reaches the
// server whole.
func TestLargeBodyIsStreamed(t *testing.T) {
	srv := newCounted(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n, r.ContentLength)
	})
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	body := strings.Repeat("x", 3<<20)
	resp, err := post(t, tr, srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readAll(t, resp), fmt.Sprint(len(body), len(body)); got != want {
		t.Errorf("server read %s, want %s", got, want)
	}
}

// TestAnswerBeforeTheBodyIsRead: a server that answers 413 to the
// headers of a request whose body it will not read, and closes, gets its
// answer to the caller rather than the write's error (as net/http's
// transport does); the connection is not kept.
func TestAnswerBeforeTheBodyIsRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!")
		// Closed with most of the body unread: the client's write fails.
		c.(*net.TCPConn).SetLinger(0)
	}()
	tr := &h1.Transport{}
	defer tr.CloseIdleConnections()
	body := strings.Repeat("x", 64<<20) // beyond any socket buffer
	resp, err := post(t, tr, "http://"+ln.Addr().String()+"/v1/chat/completions", body)
	if err != nil {
		t.Fatalf("the early answer was lost: %v", err)
	}
	if got := readAll(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || got != "too big!" {
		t.Errorf("answer %d %q", resp.StatusCode, got)
	}
	if n := tr.IdleConns(ln.Addr().String()); n != 0 {
		t.Errorf("%d idle connections, want 0", n)
	}
}
