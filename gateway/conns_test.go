package gateway_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// attacker is the address the connection attacks come from: loopback,
// but not the legitimate caller's 127.0.0.1.
var attacker = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// keptConn is a keep-alive connection that has been answered once.
type keptConn struct {
	net.Conn
	br *bufio.Reader
}

// idleConn opens a connection from from, sends GET /healthz without a
// key, reads its answer and leaves the connection open and idle.
func idleConn(t *testing.T, addr string, from *net.TCPAddr) *keptConn {
	t.Helper()
	d := net.Dialer{LocalAddr: from, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	k := &keptConn{Conn: c, br: bufio.NewReader(c)}
	if code, err := k.get("/healthz"); err != nil || code != 200 {
		t.Fatalf("GET /healthz: %d, %v", code, err)
	}
	return k
}

// get sends GET path on the connection and reads the answer's status.
func (k *keptConn) get(path string) (int, error) {
	k.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(k, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// closedByServer reports whether the server has closed the connection:
// a read ends with EOF or a reset. Call it only once the server is known
// to have closed it or to be about to; it waits at most 10s.
func (k *keptConn) closedByServer() bool {
	k.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := k.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func serverLimits(limits string) func(string) string {
	return func(y string) string { return strings.Replace(y, "server: {", "server: {"+limits+", ", 1) }
}

// Regression (issue 23, High 3): 10,000 connections from one address,
// each sending GET /healthz without a key and then idling, filled
// max_connections for idle_timeout (120s): a chat call timed out, and
// /readyz too. Scaled down: max_connections 50, 60 idle connections; the
// idlest are closed to make room, and the chat call and /readyz answer.
func TestIdleConnectionsFromOneAddressDoNotKeepAChatCallOut(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, nil, "",
		serverLimits("max_connections: 50, max_connections_per_address: 50"))
	addr := strings.TrimPrefix(h.url, "http://")
	var idle []*keptConn
	for range 60 {
		idle = append(idle, idleConn(t, addr, attacker))
	}
	resp, body := h.post("/v1/chat/completions", chat)
	if resp.StatusCode != 200 {
		t.Fatalf("chat call with 60 idle connections open: %d %s", resp.StatusCode, body)
	}
	if resp, body := h.get("/readyz"); resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}
	// At least ten idle ones made room (the idlest: about the first ten).
	closed := map[int]bool{}
	poll.Until(t, 10*time.Second, func() bool {
		for i, c := range idle {
			if !closed[i] && c.closedNow() {
				closed[i] = true
			}
		}
		return len(closed) >= 10
	}, func() string { return fmt.Sprintf("%d idle connections closed, want 10 or more", len(closed)) })
	if !strings.Contains(h.logs.String(), "connections near server.max_connections") {
		t.Errorf("closing idle connections was not logged:\n%s", h.logs.String())
	}
}

// closedNow reports whether the server has closed the connection, as
// far as a read that waits 1ms can tell (false may be a late answer:
// poll it).
func (k *keptConn) closedNow() bool {
	k.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := k.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// busyConn opens a connection from from that stays busy: a chat call
// with the key whose body the gateway waits for once it has said
// "100 Continue".
func busyConn(t *testing.T, addr string, from *net.TCPAddr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: from, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+appKey+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("a busy connection: %v, %v", resp, err)
	}
	return c
}

// Regression (issue 23, High 3): one address could take every
// connection. Past max_connections_per_address, a connection from that
// address, all of whose connections are busy, is refused with 503
// too_many_connections (an idle one would be closed instead), while
// another address is still served.
func TestBusyConnectionsFromOneAddressAreCappedPerAddress(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu")}, nil, "",
		serverLimits("max_connections: 50, max_connections_per_address: 10"))
	addr := strings.TrimPrefix(h.url, "http://")
	for range 10 {
		busyConn(t, addr, attacker)
	}
	d := net.Dialer{LocalAddr: attacker, Timeout: 10 * time.Second}
	over, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatalf("the eleventh busy connection from one address: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), `"code":"too_many_connections"`) {
		t.Fatalf("the eleventh connection from one address: %d %s", resp.StatusCode, b)
	}
	if resp, body := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("chat call from another address: %d %s", resp.StatusCode, body)
	}
}

// Regression (issue 23, High 3): with an address at its share, its idle
// connection makes room for its next one rather than the next being
// refused.
func TestAnIdleConnectionMakesRoomForItsAddressNext(t *testing.T) {
	h := start(t, nil, nil, "", serverLimits("max_connections: 50, max_connections_per_address: 3"))
	addr := strings.TrimPrefix(h.url, "http://")
	first := idleConn(t, addr, attacker)
	busyConn(t, addr, attacker)
	busyConn(t, addr, attacker)
	poll.Until(t, 10*time.Second, func() bool { return h.gw.IdleConnections() == 1 },
		func() string { return fmt.Sprintf("%d idle connections, want the first only", h.gw.IdleConnections()) })
	idleConn(t, addr, attacker) // would be refused without closing the first
	if !first.closedByServer() {
		t.Fatal("the idle connection was not closed to make room")
	}
}

// Regression (issue 23, High 3): idle connections stayed for the whole
// idle_timeout (120s) however many were open. From 80% of
// max_connections, one idle for longer than idle_timeout_under_pressure
// is closed as the next connection arrives.
func TestIdleConnectionsAreClosedSoonerUnderPressure(t *testing.T) {
	h := start(t, []upstreamtest.Step{answer("weu"), answer("weu")}, nil, "",
		serverLimits("max_connections: 50, max_connections_per_address: 50, idle_timeout_under_pressure: 10s"))
	addr := strings.TrimPrefix(h.url, "http://")
	var idle []*keptConn
	for range 45 {
		idle = append(idle, idleConn(t, addr, attacker))
	}
	// Under pressure but not idle for long: a new connection closes none.
	if resp, body := h.post("/v1/chat/completions", chat, "Connection", "close"); resp.StatusCode != 200 {
		t.Fatalf("chat call: %d %s", resp.StatusCode, body)
	}
	if code, err := idle[0].get("/healthz"); err != nil || code != 200 {
		t.Fatalf("the idlest connection, idle for less than 10s, was closed: %d, %v", code, err)
	}
	// Every one has gone idle (the server marks it so just after its
	// answer) before the clock moves.
	poll.Until(t, 10*time.Second, func() bool { return h.gw.IdleConnections() == 45 },
		func() string { return fmt.Sprintf("%d idle connections", h.gw.IdleConnections()) })
	h.clock.Advance(11 * time.Second)
	idleConn(t, addr, nil) // a new connection, from another address
	for i, c := range idle {
		if !c.closedByServer() {
			t.Fatalf("connection %d, idle for 11s under pressure, is still open", i)
		}
	}
}
