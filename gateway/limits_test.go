package gateway_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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
// every file descriptor. Past max_connections a connection waits, unserved,
// until one closes.
func TestMaxConnectionsHoldsTheNextUntilOneCloses(t *testing.T) {
	h := start(t, nil, nil, "", func(y string) string {
		return strings.Replace(y, "server: {", "server: {max_connections: 1, ", 1)
	})
	addr := strings.TrimPrefix(h.url, "http://")
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	rawGet(t, first)
	if code, err := readStatus(first); err != nil || code != 200 {
		t.Fatalf("first connection: %d, %v", code, err)
	}
	// The first connection stays open (keep-alive): it holds the one slot.
	second, err := net.Dial("tcp", addr) // accepted by the kernel, not by the server
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

// A request past server.max_concurrent_requests gets 503 at once and is
// counted in switchover_requests_refused_total by its code.
func TestMaxConcurrentRequestsRefusedAndCounted(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	held := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{held}, nil, "", func(y string) string {
		return strings.Replace(y, "server: {", "server: {max_concurrent_requests: 1, ", 1)
	})
	done := make(chan int, 1)
	go func() {
		resp, _ := h.post("/v1/chat/completions", chat)
		done <- resp.StatusCode
	}()
	<-arrived
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(body, `"code":"too_many_concurrent_requests"`) {
		t.Fatalf("past the limit: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := h.get("/healthz"); resp.StatusCode != 200 {
		t.Fatalf("/healthz at the limit: %d", resp.StatusCode)
	}
	if got := metric(t, h.gw, "switchover_requests_refused_total", "code", "too_many_concurrent_requests"); got != 1 {
		t.Fatalf("switchover_requests_refused_total = %v, want 1", got)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("the request in flight got %d", code)
	}
}
