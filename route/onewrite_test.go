package route_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// newWriteCountingEnv is a pool of weu (priority 1) and sec (priority
// 2) at scripted upstreams, both through one HTTP/1.1 transport from
// NewTransport that counts the writes on its connections.
func newWriteCountingEnv(t *testing.T, weu, sec []step) (*env, *atomic.Int64) {
	t.Helper()
	tr := route.NewTransport(route.TransportSettings{})
	dial := tr.DialContext
	writes := new(atomic.Int64)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, writes: writes}, nil
	}
	t.Cleanup(tr.CloseIdleConnections)
	useIt := func(b *route.Backend) { b.Transport = tr }
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: weu, tune: useIt},
		memberSpec{name: "sec", priority: 2, script: sec, tune: useIt},
	)
	return e, writes
}

// TestUpstreamRequestLeavesInOneWrite guards that a request with a small
// body goes to the backend in a single write (one syscall, one TCP
// segment), headers and body together, on the first attempt and on a
// retry to another member. net/http flushes the headers on their own
// unless the body is one it knows to be in memory, which a request body
// of our own type was not.
func TestUpstreamRequestLeavesInOneWrite(t *testing.T) {
	t.Run("first attempt", func(t *testing.T) {
		e, writes := newWriteCountingEnv(t, []step{answer("weu"), answer("weu")}, nil)
		for i := range 2 { // a new connection, then a reused one
			before := writes.Load()
			resp, _, body := e.do(t, chatBody)
			if resp.StatusCode != 200 || !strings.Contains(body, "hello from weu") {
				t.Fatalf("request %d: status %d body %q", i, resp.StatusCode, body)
			}
			if n := writes.Load() - before; n != 1 {
				t.Fatalf("request %d went upstream in %d writes, want 1", i, n)
			}
		}
	})
	t.Run("retry to another member", func(t *testing.T) {
		e, writes := newWriteCountingEnv(t, []step{status(503)}, []step{answer("sec")})
		resp, rep, body := e.do(t, chatBody)
		if resp.StatusCode != 200 || !strings.Contains(body, "hello from sec") || len(rep.Attempts) != 2 {
			t.Fatalf("status %d body %q attempts %+v", resp.StatusCode, body, rep.Attempts)
		}
		if calls := e.ups["weu"].Calls() + e.ups["sec"].Calls(); calls != 2 {
			t.Fatalf("upstreams got %d calls, want 2", calls)
		}
		if n := writes.Load(); n != 2 {
			t.Fatalf("2 attempts went upstream in %d writes, want 2", n)
		}
	})
}
