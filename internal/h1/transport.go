// Package h1 is an HTTP/1.1 client transport for plain-HTTP hosts whose
// calls run on the caller's goroutine.
//
// net/http's Transport gives every HTTP/1.1 connection two goroutines of
// its own, a read loop and a write loop, and hands each call to them and
// its answer back over channels: four goroutine hand-offs a call, each of
// which may wake an idle thread (a futex, a spinning scheduler, a
// nanosleep), and two goroutine stacks for as long as the connection is
// open, a stream's whole life. A gateway in front of a self-hosted model
// server pays that on every call. This transport writes the request and
// reads the answer on the goroutine that called RoundTrip (and, for the
// body, the goroutine that reads it). Answers are read by net/http's own
// ReadResponse; a request is written by encode (head and body in one
// write, headers checked as net/http's transport checks them), or by
// Request.Write when its length is not known. What it does not do (TLS,
// a proxy, an upgrade, Expect: 100-continue) it hands to Fallback.
//
// Keep-alive connections are kept per host, most recently used first. A
// connection idle for a second or more is checked before it is used (a
// non-blocking peek: a server that closed it is seen without sending
// anything); a call that fails on a reused connection before any byte of
// its answer arrived, the server having closed it meanwhile, is made again
// once on a new connection when its body can be had again (GetBody).
package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport is an http.RoundTripper for http:// URLs over HTTP/1.1. The
// zero value is usable (dialing with net.Dialer, without a fallback); set
// its fields before the first call. Safe for concurrent use.
type Transport struct {
	// DialContext makes connections. Nil means a net.Dialer's.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Proxy says which proxy a request goes through, as
	// http.Transport.Proxy; requests it names one for are handed to
	// Fallback. Asked once per host. Nil means none.
	Proxy func(*http.Request) (*url.URL, error)
	// Fallback makes the calls this transport does not: https and other
	// schemes, proxied hosts, upgrades (WebSocket) and requests that
	// expect 100-continue. Nil means such calls fail.
	Fallback http.RoundTripper
	// MaxIdleConnsPerHost is how many idle keep-alive connections are
	// kept per host; more are closed as they come back. Default 256.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a keep-alive connection unused this long.
	// Default 90s.
	IdleConnTimeout time.Duration
	// ReadBufferSize is each connection's read buffer, held for as long
	// as the connection is open. Default 2 KiB.
	ReadBufferSize int
	// MaxResponseHeaderBytes bounds an answer's status line and
	// headers. Default 1 MiB.
	MaxResponseHeaderBytes int64

	// checkAfter overrides checkIdleAfter when set (tests).
	checkAfter time.Duration

	mu    sync.Mutex
	hosts map[string]*host
	sweep *time.Timer // armed while any connection is idle
}

var _ http.RoundTripper = (*Transport)(nil)

// host is one host's keep-alive connections. Requires t.mu.
type host struct {
	direct bool    // false: a proxy is named for this host; calls go to Fallback
	idle   []*conn // most recently used last
}

// ErrNoFallback is returned for a call this transport does not make when
// Fallback is nil.
var ErrNoFallback = errors.New("h1: no fallback transport for this request")

// errTooMany1xx ends an answer that keeps sending informational statuses.
var errTooMany1xx = errors.New("h1: too many 1xx informational responses")

// maxInformational bounds the 1xx answers read before the final one.
const maxInformational = 5

// checkIdleAfter is how long a connection may wait idle before it is
// checked for a close by the server before its next use.
const checkIdleAfter = time.Second

// aLongTimeAgo is a deadline in the past: it ends a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip makes req on a keep-alive connection of its host, or hands it
// to Fallback. The answer's body must be read to its end or closed: at its
// end the connection is kept for the next call, closed early it is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.fallback(req)
	}
	addr := hostPort(req.URL)
	h := t.host(addr, req)
	if !h.direct {
		return t.fallback(req)
	}
	ctx := req.Context()
	for try := 0; ; try++ {
		c, err := t.get(ctx, addr, try > 0)
		if err != nil {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the body, even on an error
			}
			return nil, err
		}
		resp, err := c.roundTrip(ctx, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The server closed a kept connection as the call went out: make
		// it once more on a new connection.
		if try == 0 && c.reused && errors.Is(err, errNothingRead) {
			if again, ok := rewind(req); ok {
				req = again
				continue
			}
		}
		return nil, unwrapNothingRead(err)
	}
}

// handles reports whether t makes req itself.
func (t *Transport) handles(req *http.Request) bool {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		return false
	}
	h := req.Header
	if len(h["Upgrade"]) > 0 || len(h["Expect"]) > 0 {
		return false
	}
	return true
}

func (t *Transport) fallback(req *http.Request) (*http.Response, error) {
	if t.Fallback == nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrNoFallback
	}
	return t.Fallback.RoundTrip(req)
}

// host returns addr's entry, made on first use.
func (t *Transport) host(addr string, req *http.Request) *host {
	t.mu.Lock()
	h := t.hosts[addr]
	t.mu.Unlock()
	if h != nil {
		return h
	}
	h = &host{direct: true}
	if t.Proxy != nil {
		if u, err := t.Proxy(req); err != nil || u != nil {
			h.direct = false
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hosts == nil {
		t.hosts = make(map[string]*host)
	}
	if old := t.hosts[addr]; old != nil {
		return old
	}
	t.hosts[addr] = h
	return h
}

// get returns a kept connection to addr that is still open, or a new one
// (always when fresh).
func (t *Transport) get(ctx context.Context, addr string, fresh bool) (*conn, error) {
	for !fresh {
		c := t.takeIdle(addr)
		if c == nil {
			break
		}
		if time.Since(c.idleAt) < t.checkIdle() || c.alive() {
			c.reused = true
			return c, nil
		}
		c.nc.Close()
	}
	dial := t.DialContext
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	size := t.ReadBufferSize
	if size <= 0 {
		size = 2 << 10
	}
	c := &conn{t: t, addr: addr, nc: nc}
	c.lr = headerLimit{c: nc}
	c.br = bufio.NewReaderSize(&c.lr, size)
	c.abort = c.setPastDeadline
	return c, nil
}

func (t *Transport) takeIdle(addr string) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hosts[addr]
	if h == nil || len(h.idle) == 0 {
		return nil
	}
	c := h.idle[len(h.idle)-1]
	h.idle[len(h.idle)-1] = nil
	h.idle = h.idle[:len(h.idle)-1]
	return c
}

// put keeps c for the next call to its host, or closes it.
func (t *Transport) put(c *conn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	h := t.hosts[c.addr]
	if h == nil || len(h.idle) >= t.maxIdle() {
		t.mu.Unlock()
		c.nc.Close()
		return
	}
	h.idle = append(h.idle, c)
	if t.sweep == nil {
		t.sweep = time.AfterFunc(t.sweepEvery(), t.sweepIdle)
	}
	t.mu.Unlock()
}

func (t *Transport) maxIdle() int {
	if t.MaxIdleConnsPerHost > 0 {
		return t.MaxIdleConnsPerHost
	}
	return 256
}

func (t *Transport) checkIdle() time.Duration {
	if t.checkAfter != 0 {
		return t.checkAfter
	}
	return checkIdleAfter
}

func (t *Transport) idleTimeout() time.Duration {
	if t.IdleConnTimeout > 0 {
		return t.IdleConnTimeout
	}
	return 90 * time.Second
}

// sweepEvery is how often idle connections are looked over: closed past
// the idle timeout, and checked for a close by the server, so that a
// server's short keep-alive (5 s is common) does not leave sockets
// half-closed in the pool until the idle timeout.
func (t *Transport) sweepEvery() time.Duration {
	return min(t.idleTimeout(), 10*time.Second)
}

// sweepIdle closes the idle connections past the idle timeout or closed
// by the server, and re-arms itself while any are left. The connections
// to check are taken out of the pool and checked (a syscall each)
// outside the lock, so that calls are not held up by the sweep; those
// alive go back to the oldest end of their host's pool.
func (t *Transport) sweepIdle() {
	var closing, checking []*conn
	t.mu.Lock()
	now := time.Now()
	for _, h := range t.hosts {
		kept := h.idle[:0]
		for _, c := range h.idle {
			switch idle := now.Sub(c.idleAt); {
			case idle >= t.idleTimeout():
				closing = append(closing, c)
			case idle >= t.checkIdle():
				checking = append(checking, c)
			default:
				kept = append(kept, c)
			}
		}
		clear(h.idle[len(kept):])
		h.idle = kept
	}
	t.mu.Unlock()
	alive := checking[:0]
	for _, c := range checking {
		if c.alive() {
			alive = append(alive, c)
		} else {
			closing = append(closing, c)
		}
	}
	t.mu.Lock()
	for i := len(alive) - 1; i >= 0; i-- { // each to the front: their order kept
		c := alive[i]
		if h := t.hosts[c.addr]; h != nil && len(h.idle) < t.maxIdle() {
			h.idle = slices.Insert(h.idle, 0, c)
		} else {
			closing = append(closing, c)
		}
	}
	t.sweep = nil
	if t.idleCount() > 0 {
		t.sweep = time.AfterFunc(t.sweepEvery(), t.sweepIdle)
	}
	t.mu.Unlock()
	for _, c := range closing {
		c.nc.Close()
	}
}

// idleCount requires t.mu.
func (t *Transport) idleCount() int {
	n := 0
	for _, h := range t.hosts {
		n += len(h.idle)
	}
	return n
}

// CloseIdleConnections closes the kept connections; calls in flight
// finish on theirs. It closes Fallback's too when it has the method.
func (t *Transport) CloseIdleConnections() {
	var idle []*conn
	t.mu.Lock()
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	if t.sweep != nil {
		t.sweep.Stop()
		t.sweep = nil
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
	if f, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// IdleConns is how many connections are kept idle for addr (host:port).
func (t *Transport) IdleConns(addr string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hosts[addr]; h != nil {
		return len(h.idle)
	}
	return 0
}

// conn is one connection. Used by one call at a time.
type conn struct {
	t      *Transport
	addr   string
	nc     net.Conn
	lr     headerLimit
	br     *bufio.Reader
	abort  func() // setPastDeadline, made once
	idleAt time.Time
	reused bool
}

// errNothingRead wraps a failure on a connection before any byte of the
// answer arrived.
var errNothingRead = errors.New("h1: connection closed before the answer began")

type nothingRead struct{ err error }

func (e nothingRead) Error() string { return e.err.Error() }
func (e nothingRead) Unwrap() []error {
	return []error{e.err, errNothingRead}
}

func unwrapNothingRead(err error) error {
	var nr nothingRead
	if errors.As(err, &nr) {
		return nr.err
	}
	return err
}

func (c *conn) setPastDeadline() { c.nc.SetDeadline(aLongTimeAgo) }

// roundTrip writes req and reads its answer's status and headers. On an
// error c is closed.
func (c *conn) roundTrip(ctx context.Context, req *http.Request) (*http.Response, error) {
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abort)
	}
	fail := func(err error) (*http.Response, error) {
		if stop != nil {
			stop()
		}
		c.nc.Close()
		return nil, err
	}
	werr := c.write(req)
	if werr != nil {
		// A server may answer before it has read the whole request (a 413
		// for a body over its limit) and close: its answer is worth more
		// than the write's error. It has a moment to be read.
		if ctx.Err() != nil || c.nc.SetReadDeadline(time.Now().Add(earlyAnswerWait)) != nil {
			return fail(nothingRead{werr})
		}
	}
	limit := c.t.MaxResponseHeaderBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	var resp *http.Response
	for n := 0; ; n++ {
		c.lr.n = limit
		before := c.lr.read
		r, err := http.ReadResponse(c.br, req)
		if err != nil && werr != nil {
			return fail(nothingRead{werr}) // no early answer: the write's error
		}
		if err != nil {
			if c.lr.n <= 0 {
				err = fmt.Errorf("h1: the answer's headers exceed %d bytes", limit)
			} else if n == 0 && c.lr.read == before && c.br.Buffered() == 0 {
				err = nothingRead{err}
			}
			return fail(err)
		}
		c.lr.n = -1
		if r.StatusCode >= 200 || r.StatusCode == http.StatusSwitchingProtocols {
			resp = r
			break
		}
		if n+1 >= maxInformational {
			return fail(errTooMany1xx)
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// Upgrades go to Fallback; a server switching unasked is broken.
		return fail(errors.New("h1: 101 Switching Protocols to a request that did not ask to upgrade"))
	}
	if werr != nil {
		// The early answer: read it whole, then the connection goes.
		c.nc.SetReadDeadline(time.Time{})
		resp.Close = true
	}
	b := &body{c: c, rc: resp.Body, ctx: ctx, stop: stop, keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody || resp.ContentLength == 0 {
		b.release(true)
		resp.Body = http.NoBody
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// writeBufs are the buffers requests are written into: the head and a
// body already in memory leave in one write.
var writeBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// earlyAnswerWait is how long an answer is waited for after a request's
// write failed (net/http's transport waits 50 ms).
const earlyAnswerWait = 100 * time.Millisecond

// maxInlineBody is the largest body copied into the buffer of its
// request's head.
const maxInlineBody = 1 << 20

// maxPooledWrite is the largest buffer put back in writeBufs.
const maxPooledWrite = 64 << 10

func (c *conn) write(req *http.Request) error {
	if req.ContentLength > maxInlineBody {
		// Not copied whole: streamed through a buffer of net/http's size.
		bw := bufio.NewWriter(c.nc)
		if err := req.Write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	buf := writeBufs.Get().(*bytes.Buffer)
	buf.Reset()
	err := encode(buf, req)
	if err == nil {
		_, err = c.nc.Write(buf.Bytes())
	}
	if buf.Cap() <= maxPooledWrite {
		writeBufs.Put(buf)
	}
	return err
}

// alive reports whether the server has not closed c while it was idle: a
// peek that would block (nothing sent, nothing closed) says it is open.
func (c *conn) alive() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = raw.Read(func(fd uintptr) bool {
		open = peekOpen(fd)
		return true
	})
	return err == nil && open
}

// rewind returns a copy of req with a fresh body for a second try, and
// whether it could make one (req itself is the caller's and not changed).
func rewind(req *http.Request) (*http.Request, bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, true
	}
	if req.GetBody == nil {
		return nil, false
	}
	b, err := req.GetBody()
	if err != nil {
		return nil, false
	}
	again := *req
	again.Body = b
	return &again, true
}

// body is an answer's body on c: at its end c is kept, closed early c is
// closed.
type body struct {
	c    *conn
	rc   io.ReadCloser
	ctx  context.Context
	stop func() bool
	keep bool
	done atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(b.keep)
	case err != nil:
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
		b.release(false)
	}
	return n, err
}

// Close closes the connection unless the body was read to its end.
func (b *body) Close() error {
	b.release(false)
	return nil
}

// release ends b's use of its connection once: kept for the next call
// when keep and nothing is left over, else closed.
func (b *body) release(keep bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	c := b.c
	if b.stop != nil && !b.stop() {
		keep = false // the context ended: its deadline is set, or about to be
	}
	if keep && c.br.Buffered() == 0 {
		c.t.put(c)
		return
	}
	c.nc.Close()
}

// headerLimit counts what is read from a connection and, while n is not
// negative, refuses to read past n bytes: the bound on an answer's
// headers.
type headerLimit struct {
	c    net.Conn
	n    int64 // bytes left; negative: no limit
	read int64
}

func (l *headerLimit) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeaderLimit
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	l.read += int64(n)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

var errHeaderLimit = errors.New("h1: answer headers too large")

// hostPort is u's host with its port, 80 when it names none.
func hostPort(u *url.URL) string {
	h := u.Host
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		return h
	}
	return net.JoinHostPort(u.Hostname(), "80")
}
