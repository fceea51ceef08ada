package gateway

import (
	"container/list"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// connLimits bounds the API listener's client connections
// (server.max_connections and its companions) so that idle ones never
// keep live requests out:
//
//   - past max open connections, a new one first closes the idlest idle
//     (or new, silent) connection; only when every open connection is
//     serving a request does it wait in the kernel's backlog;
//   - one remote address may hold perAddr connections; past that its
//     own idlest idle connection is closed, or, with none idle, the new
//     one is answered 503 too_many_connections and closed;
//   - from pressureAt open connections on, a connection idle for longer
//     than pressureIdle is closed as the next one arrives (a shorter
//     idle_timeout under pressure).
//
// It tracks each connection's state through http.Server.ConnState. It is
// safe for concurrent use.
type connLimits struct {
	max, perAddr, pressureAt int
	pressureIdle             time.Duration
	clk                      clock.Clock
	logger                   *slog.Logger

	mu     sync.Mutex
	freed  *sync.Cond // a slot was freed, a connection went idle, or the listener closed
	open   int
	byAddr map[string]int
	// idle holds the *trackedConn that are idle or new (accepted, no
	// byte of a request read yet), the idlest first.
	idle   list.List
	closed bool
	// tls is set when connections speak TLS (server.tls): a connection
	// refused is then closed, not answered in plain HTTP it could not
	// read. Set before the listener accepts.
	tls bool
	// lastLog is when shedding was last logged (at most once a minute).
	lastLog time.Time
	shed    int // connections closed or refused since lastLog
}

// newConnLimits returns the limits of s; nil when max_connections is 0.
func newConnLimits(max, perAddr, pressureAt int, pressureIdle time.Duration, clk clock.Clock, logger *slog.Logger) *connLimits {
	if max <= 0 {
		return nil
	}
	if perAddr <= 0 || perAddr > max {
		perAddr = max
	}
	if pressureAt <= 0 || pressureAt > max {
		pressureAt = max
	}
	l := &connLimits{max: max, perAddr: perAddr, pressureAt: pressureAt, pressureIdle: pressureIdle,
		clk: clock.Or(clk), logger: logger, byAddr: map[string]int{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// trackedConn is a connection counted by its connLimits until it closes.
type trackedConn struct {
	net.Conn
	l    *connLimits
	addr string
	// elem is its place in l.idle while it is idle or new, else nil;
	// idleSince is when it became so. Guarded by l.mu.
	elem      *list.Element
	idleSince time.Time
	closeOnce sync.Once
}

// Close closes the connection and frees its slot.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.release(c) })
	return err
}

// limitedListener is a listener under connLimits.
type limitedListener struct {
	net.Listener
	l *connLimits
}

// listener returns ln under the limits.
func (l *connLimits) listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, l: l}
}

// Accept accepts a connection, then waits for a slot for it (closing
// idle connections to make one) within its address's share. While it
// waits, the one connection it holds is not served, and the next ones
// wait in the kernel's backlog.
func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := ll.l.acquire(); err != nil {
			c.Close()
			return nil, err
		}
		if tc := ll.l.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (ll *limitedListener) Close() error {
	ll.l.mu.Lock()
	ll.l.closed = true
	ll.l.freed.Broadcast()
	ll.l.mu.Unlock()
	return ll.Listener.Close()
}

// acquire reserves a slot for a connection just accepted: under
// pressure it first closes the connections idle for longer than
// pressureIdle; when every slot is taken it closes the idlest idle
// connection, or waits until one is freed or goes idle.
func (l *connLimits) acquire() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.closed {
			return net.ErrClosed
		}
		var victims []*trackedConn
		if l.open >= l.pressureAt {
			victims = l.idleLongerThanLocked(l.pressureIdle)
		}
		if len(victims) == 0 && l.open >= l.max {
			if c := l.idlestLocked(""); c != nil {
				victims = append(victims, c)
			}
		}
		if len(victims) > 0 {
			l.closeLocked(victims)
			continue
		}
		if l.open < l.max {
			l.open++
			return nil
		}
		l.freed.Wait()
	}
}

// admit counts c, accepted in a reserved slot, against its address's
// share and returns it tracked; or, when its address holds perAddr
// connections all busy, refuses it and returns nil.
func (l *connLimits) admit(c net.Conn) *trackedConn {
	addr := remoteHost(c)
	l.mu.Lock()
	for l.byAddr[addr] >= l.perAddr {
		v := l.idlestLocked(addr)
		if v == nil {
			l.open--
			attrs := l.countShedLocked()
			l.freed.Signal()
			l.mu.Unlock()
			l.logShed(attrs)
			if l.tls {
				c.Close()
			} else {
				refuseConn(c)
			}
			return nil
		}
		l.closeLocked([]*trackedConn{v})
	}
	tc := &trackedConn{Conn: c, l: l, addr: addr}
	l.byAddr[addr]++
	tc.idleSince = l.clk.Now()
	tc.elem = l.idle.PushBack(tc)
	l.mu.Unlock()
	return tc
}

// closeLocked closes the victims, taken out of the idle list, with l.mu
// released meanwhile (Close frees their slots). Requires l.mu held.
func (l *connLimits) closeLocked(victims []*trackedConn) {
	var attrs []any
	for _, v := range victims {
		l.unidleLocked(v)
		if a := l.countShedLocked(); a != nil {
			attrs = a
		}
	}
	l.mu.Unlock()
	l.logShed(attrs)
	for _, v := range victims {
		v.Close()
	}
	l.mu.Lock()
}

// idlestLocked is the connection idle (or new) the longest, of addr when
// addr is not empty; nil when there is none. Requires l.mu held.
func (l *connLimits) idlestLocked(addr string) *trackedConn {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*trackedConn); addr == "" || c.addr == addr {
			return c
		}
	}
	return nil
}

// idleLongerThanLocked are the connections idle (or new) for longer
// than d. Requires l.mu held.
func (l *connLimits) idleLongerThanLocked(d time.Duration) []*trackedConn {
	now := l.clk.Now()
	var out []*trackedConn
	for e := l.idle.Front(); e != nil; e = e.Next() {
		c := e.Value.(*trackedConn)
		if now.Sub(c.idleSince) <= d {
			break // the list is in the order they went idle
		}
		out = append(out, c)
	}
	return out
}

func (l *connLimits) unidleLocked(c *trackedConn) {
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
}

// release frees c's slot; its Close calls it once.
func (l *connLimits) release(c *trackedConn) {
	l.mu.Lock()
	l.unidleLocked(c)
	l.open--
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
	l.freed.Signal()
	l.mu.Unlock()
}

// connState follows the server's connections: idle ones join the idle
// list at its end, busy and hijacked ones leave it. For
// http.Server.ConnState.
func (l *connLimits) connState(nc net.Conn, st http.ConnState) {
	if tc, ok := nc.(*tls.Conn); ok { // server.tls: the tracked connection is under it
		nc = tc.NetConn()
	}
	c, ok := nc.(*trackedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateIdle:
		l.unidleLocked(c)
		c.idleSince = l.clk.Now()
		c.elem = l.idle.PushBack(c)
		l.freed.Signal() // an Accept waiting for a slot may close it
	case http.StateActive, http.StateHijacked, http.StateClosed:
		l.unidleLocked(c)
	}
}

// idleCount is the number of connections idle or new.
func (l *connLimits) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

// countShedLocked counts a connection closed or refused to make room,
// and returns what to log, at most once a minute (nil otherwise): the
// caller logs it once l.mu is released. Requires l.mu held.
func (l *connLimits) countShedLocked() []any {
	l.shed++
	now := l.clk.Now()
	if l.logger == nil || now.Sub(l.lastLog) < time.Minute {
		return nil
	}
	attrs := []any{"closed_or_refused", l.shed, "open", l.open, "max_connections", l.max, "max_connections_per_address", l.perAddr}
	l.lastLog, l.shed = now, 0
	return attrs
}

// logShed logs what countShedLocked returned, if anything.
func (l *connLimits) logShed(attrs []any) {
	if attrs != nil {
		l.logger.Warn("connections near server.max_connections: idle ones closed, or refused past max_connections_per_address", attrs...)
	}
}

// remoteHost is the IP address c comes from.
func remoteHost(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return hostOnly(c.RemoteAddr().String())
}

// refusedBody is the answer to a connection over its address's share,
// in OpenAI's error format; refusedConn, with its headers.
const refusedBody = `{"error":{"message":"switchover: too many connections from your address (server.max_connections_per_address)","type":"server_error","code":"too_many_connections"}}` + "\n"

var refusedConn = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(refusedBody)) + "\r\n\r\n" + refusedBody)

// refuseConn answers c 503 too_many_connections and closes it, without
// reading its request: a few hundred bytes a new socket's buffer takes
// at once (the deadline is a guard only).
func refuseConn(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write(refusedConn)
	c.Close()
}
