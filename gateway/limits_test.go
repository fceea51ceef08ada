package gateway_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
