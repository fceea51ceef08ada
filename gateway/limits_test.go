package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// rawGet sends GET /healthz on c, keeping the connection open.
func rawGet(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
}

func readStatus(c net.Conn) (int, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Regression: with no connection limit about 20,000 idle connections took
// every file descriptor. Past max_connections, with every connection busy,
// a connection waits, unserved, until one closes.
func TestMaxConnectionsHoldsTheNextUntilOneCloses(t *testing.T) {
	h := start(t, nil, nil, "", func(y string) string {
		return strings.Replace(y, "server: {", "server: {max_connections: 1, ", 1)
	})
	addr := strings.TrimPrefix(h.url, "http://")
	// The first connection is busy (a call whose body the gateway waits
	// for): it holds the one slot. (An idle one would be closed to make
	// room: see conns_test.go.)
	first := busyConn(t, addr, nil)
	second, err := net.Dial("tcp", addr) // accepted, then held unserved
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	rawGet(t, second)
	// A bounded wait that only a broken limit ends early: the second
	// connection must not be answered while the first is open.
	second.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var one [1]byte
	if n, err := second.Read(one[:]); n > 0 || err == nil {
		t.Fatalf("the second connection was served while the first held the only slot")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("second connection: %v", err)
	}
	first.Close()
	second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if code, err := readStatus(second); err != nil || code != 200 {
		t.Fatalf("second connection after the first closed: %d, %v", code, err)
	}
}

// Regression: http.Server's own errors (accept4: too many open files, a
// handler's panic) were logged at DEBUG and so hidden at the default level.
func TestServerErrorLogIsAtErrorLevel(t *testing.T) {
	h := start(t, nil, nil, "")
	h.gw.Server().ErrorLog.Print("http: Accept error: accept tcp: accept4: too many open files; retrying in 5ms")
	logs := h.logs.String()
	if !strings.Contains(logs, `"level":"ERROR","msg":"http: Accept error`) {
		t.Fatalf("the server's error was not logged at ERROR:\n%s", logs)
	}
}

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

// TestBodyReadDeadlineOnTheGatewayClock: a request body that stops
// coming is cut with a 408 once read_timeout has passed on the gateway's
// injected clock (Options.Clock), not the wall clock, which here never
// gets that far.
func TestBodyReadDeadlineOnTheGatewayClock(t *testing.T) {
	h := startAnswering(t,
		func(y string) string {
			return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 5s, read_timeout: 1h", 1)
		})
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() }) // the rest never comes
	go pw.Write([]byte(`{"model":"chat-prod",`))
	req, _ := http.NewRequest("POST", h.url+"/v1/chat/completions", pr)
	req.Header.Set("Authorization", "Bearer "+appKey)
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		done <- result{resp, err}
	}()
	var got result
	poll.Until(t, 10*time.Second, func() bool {
		h.clock.Advance(time.Hour)
		select {
		case got = <-done:
			return true
		default:
			return false
		}
	}, func() string { return "no answer as the gateway's clock passed read_timeout" })
	if got.err != nil {
		t.Fatal(got.err)
	}
	got.resp.Body.Close()
	if got.resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", got.resp.StatusCode)
	}
}
