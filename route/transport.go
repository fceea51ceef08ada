package route

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/switchover-gw/switchover/internal/h1"
)

// Transport is a backend's transport: HTTP/1.1 calls to http:// backends
// are made on the calling goroutine (package internal/h1: no read and
// write loop goroutines a connection, no hand-offs between them), the
// rest (https, HTTP/2, proxies, WebSocket upgrades) by the embedded
// net/http Transport, whose fields configure both. Safe for concurrent
// use.
type Transport struct {
	*http.Transport
	h1 *h1.Transport
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip makes the call on the connection pool that speaks its
// protocol.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.h1 == nil {
		return t.Transport.RoundTrip(req)
	}
	return t.h1.RoundTrip(req)
}

// NetHTTP1 reports whether HTTP/1.1 calls to http:// backends go
// through net/http's Transport (TransportSettings.NetHTTP1).
func (t *Transport) NetHTTP1() bool { return t.h1 == nil }

// CloseIdleConnections closes the idle connections of both pools.
func (t *Transport) CloseIdleConnections() {
	if t.h1 == nil {
		t.Transport.CloseIdleConnections()
		return
	}
	t.h1.CloseIdleConnections()
}

// TransportSettings configure NewTransport. The zero value is valid.
type TransportSettings struct {
	// ConnectTimeout bounds TCP connection set-up. Default 5s.
	ConnectTimeout time.Duration
	// RootCAs are the certificate authorities an https backend's
	// certificate must chain to. Nil means the system's.
	RootCAs *x509.CertPool
	// TLSHandshakeTimeout bounds the TLS handshake. Default 10s.
	TLSHandshakeTimeout time.Duration
	// MaxIdleConnsPerHost is how many idle keep-alive connections are kept
	// per backend host. Default 256.
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes keep-alive connections unused this long.
	// Default 90s.
	IdleConnTimeout time.Duration
	// HTTP1Only keeps every call on HTTP/1.1. Default false: HTTP/2 with
	// an https backend that offers it.
	HTTP1Only bool
	// NetHTTP1 makes HTTP/1.1 calls to http:// backends with net/http's
	// Transport too. Default false: on the calling goroutine
	// (internal/h1).
	NetHTTP1 bool
}

// HTTP/2 connection health: a connection on which nothing has been read
// for h2PingAfter is pinged, and closed (failing the calls on it, which
// the engine retries as connection errors where it may) when the ping
// is not answered within h2PingTimeout. Without it, calls multiplexed on
// a connection that died silently (a NAT or load balancer dropping it)
// would each wait for their own timeout.
const (
	h2PingAfter   = 30 * time.Second
	h2PingTimeout = 15 * time.Second
)

// NewTransport returns a transport tuned for a gateway: keep-alive pools
// sized for many concurrent calls to one host, HTTP/2 where the backend
// offers it, and no transparent decompression, so bodies pass through as
// the backend encoded them.
//
// HTTP/2 is attempted (ALPN h2, then http/1.1) with https backends
// unless HTTP1Only; an http:// backend gets HTTP/1.1 (no h2c). Calls
// share an HTTP/2 connection up to the backend's
// SETTINGS_MAX_CONCURRENT_STREAMS (100 until its SETTINGS arrive); a
// call beyond that opens another connection rather than waiting (the
// transport's StrictMaxConcurrentRequests is false), so a burst is never
// queued behind one connection's limit. WebSocket upgrades (Realtime)
// always go over HTTP/1.1 connections of their own.
func NewTransport(s TransportSettings) *Transport {
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = 5 * time.Second
	}
	if s.TLSHandshakeTimeout <= 0 {
		s.TLSHandshakeTimeout = 10 * time.Second
	}
	if s.MaxIdleConnsPerHost <= 0 {
		s.MaxIdleConnsPerHost = 256
	}
	if s.IdleConnTimeout <= 0 {
		s.IdleConnTimeout = 90 * time.Second
	}
	d := &net.Dialer{Timeout: s.ConnectTimeout, KeepAlive: 30 * time.Second}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	protos.SetHTTP2(!s.HTTP1Only)
	var tc *tls.Config
	if s.RootCAs != nil {
		tc = &tls.Config{RootCAs: s.RootCAs}
	}
	t := &Transport{Transport: &http.Transport{
		TLSClientConfig:       tc,
		Protocols:             protos,
		HTTP2:                 &http.HTTP2Config{SendPingTimeout: h2PingAfter, PingTimeout: h2PingTimeout},
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   s.MaxIdleConnsPerHost,
		IdleConnTimeout:       s.IdleConnTimeout,
		TLSHandshakeTimeout:   s.TLSHandshakeTimeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		// An HTTP/1.1 connection holds its buffers for as long as it is
		// open, for a stream minutes: the request goes out in one write
		// (its body is one net/http knows to be in memory, see
		// newUpstream; bodies larger than the buffer bypass it), and
		// answers are read by the event; the defaults are 4 KiB each.
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  2 << 10,
	}}
	if s.NetHTTP1 {
		return t
	}
	t.h1 = &h1.Transport{
		// Read at each call, so that a change to the embedded transport's
		// dialer or proxy applies to both.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return t.Transport.DialContext(ctx, network, addr)
		},
		Proxy: func(r *http.Request) (*url.URL, error) {
			if t.Transport.Proxy == nil {
				return nil, nil
			}
			return t.Transport.Proxy(r)
		},
		Fallback:            t.Transport,
		MaxIdleConnsPerHost: s.MaxIdleConnsPerHost,
		IdleConnTimeout:     s.IdleConnTimeout,
		ReadBufferSize:      2 << 10,
	}
	return t
}

var defaultTransport = NewTransport(TransportSettings{})

func (b *Backend) transport() http.RoundTripper {
	if b.Transport != nil {
		return b.Transport
	}
	return defaultTransport
}
