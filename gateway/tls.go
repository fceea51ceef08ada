package gateway

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/certreload"
)

// Names of the listeners, as the TLS metrics and logs call them.
const (
	listenerAPI     = "api"
	listenerAdmin   = "admin"
	listenerMetrics = "metrics"
)

// tlsConfig is the server TLS of listener (api, admin, metrics) as t
// configures it, nil when t is nil: its certificate from t's files, read
// again when they change (at most every reload.interval, and on SIGHUP),
// the client certificates it asks for (client_ca_file's authorities, read
// again when the file changes, as the certificate is), TLS 1.2 or 1.3 at
// least, Go's
// default cipher suites. A new certificate or a bad one is logged and
// counted; the certificate in force keeps serving through a bad one.
// ALPN offers h2 only when protos says HTTP/2 is served.
func (g *Gateway) tlsConfig(listener string, t *config.TLS, protos *http.Protocols) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	onChange := func(c *tls.Certificate, err error) {
		if err != nil {
			g.Logger.Error("TLS certificate files changed but do not load; the certificate in force keeps serving",
				"listener", listener, "cert_file", t.CertFile, "key_file", t.KeyFile, "error", err)
			if cur := g.tlsCerts.current(listener); cur != nil {
				g.Metrics.TLSCertificate(listener, "invalid", cur.Leaf.NotAfter)
			}
			return
		}
		g.Logger.Info("TLS certificate reloaded", "listener", listener, "subject", c.Leaf.Subject.String(),
			"not_after", c.Leaf.NotAfter, "cert_file", t.CertFile)
		g.Metrics.TLSCertificate(listener, "ok", c.Leaf.NotAfter)
	}
	p, err := certreload.Load(certreload.Settings{CertFile: t.CertFile, KeyFile: t.KeyFile,
		Interval: g.Config().Reload.Interval.D(), Clock: g.opts.Clock, OnChange: onChange})
	if err != nil {
		return nil, fmt.Errorf("%s listener's TLS: %w", listener, err)
	}
	g.tlsCerts.set(listener, p)
	g.Metrics.TLSCertificate(listener, "", p.Certificate().Leaf.NotAfter)
	tc := &tls.Config{GetCertificate: p.GetCertificate, MinVersion: tls.VersionTLS12}
	if t.MinVersion == "1.3" {
		tc.MinVersion = tls.VersionTLS13
	}
	if protos != nil && protos.HTTP2() {
		tc.NextProtos = []string{"h2"}
	}
	tc.NextProtos = append(tc.NextProtos, "http/1.1")
	switch t.ClientAuth {
	case config.ClientAuthRequest:
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	case config.ClientAuthRequire:
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if t.ClientCAFile != "" {
		cas, err := certreload.LoadCAs(certreload.CASettings{File: t.ClientCAFile,
			Interval: g.Config().Reload.Interval.D(), Clock: g.opts.Clock,
			OnChange: func(n int, err error) {
				if err != nil {
					g.Logger.Error("TLS client_ca_file changed but does not load; the authorities in force stay",
						"listener", listener, "client_ca_file", t.ClientCAFile, "error", err)
					return
				}
				g.Logger.Info("TLS client CAs reloaded", "listener", listener, "client_ca_file", t.ClientCAFile, "certificates", n)
			}})
		if err != nil {
			return nil, fmt.Errorf("%s listener's client_ca_file: %w", listener, err)
		}
		cas.Serve(tc) // last: each handshake gets tc as it is now, with the authorities in force
		g.tlsCerts.setCAs(listener, cas)
	}
	return tc, nil
}

// tlsListeners are the listeners' certificate pairs, by listener name:
// for the metrics of a bad pair (the certificate still served), for
// SIGHUP (check) and TLSCertificate. It is safe for concurrent use.
type tlsListeners struct {
	byName sync.Map // listener name -> *certreload.Pair
	cas    sync.Map // listener name -> *certreload.CAs, with client_ca_file
}

func (l *tlsListeners) set(listener string, p *certreload.Pair) { l.byName.Store(listener, p) }

func (l *tlsListeners) setCAs(listener string, c *certreload.CAs) { l.cas.Store(listener, c) }

// current is the certificate listener serves, nil without TLS.
func (l *tlsListeners) current(listener string) *tls.Certificate {
	if p, ok := l.byName.Load(listener); ok {
		return p.(*certreload.Pair).Certificate()
	}
	return nil
}

// check reads every pair's files, and every client_ca_file, again now,
// whatever the interval.
func (l *tlsListeners) check() {
	l.byName.Range(func(_, p any) bool {
		p.(*certreload.Pair).Check()
		return true
	})
	l.cas.Range(func(_, c any) bool {
		c.(*certreload.CAs).Check()
		return true
	})
}

// listenersTLS is the TLS of the API and admin listeners, each nil
// without it; api is offered the protocols apiProtos (the admin API
// speaks HTTP/1.1 and HTTP/2, as Go's server does by default).
func (g *Gateway) listenersTLS(apiProtos *http.Protocols) (api, admin *tls.Config, err error) {
	cfg := g.Config()
	if api, err = g.tlsConfig(listenerAPI, cfg.Server.TLS, apiProtos); err != nil {
		return nil, nil, err
	}
	if cfg.Admin != nil {
		if admin, err = g.tlsConfig(listenerAdmin, cfg.Admin.TLS, defaultProtocols()); err != nil {
			return nil, nil, err
		}
	}
	return api, admin, nil
}

// defaultProtocols are HTTP/1.1 and HTTP/2 over TLS.
func defaultProtocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	return p
}

// apiProtocols are the protocols of the API listener: HTTP/1.1; HTTP/2
// over TLS unless server.http2 is false; cleartext HTTP/2 with server.h2c.
func apiProtocols(s config.Server) *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(s.HTTP2 == nil || *s.HTTP2)
	p.SetUnencryptedHTTP2(s.H2C)
	return p
}

// tlsListener wraps ln in tc's TLS; ln itself when tc is nil.
func tlsListener(ln net.Listener, tc *tls.Config) net.Listener {
	if tc == nil {
		return ln
	}
	return tls.NewListener(ln, tc)
}

// TLSCertificate is the certificate listener ("api", "admin" or
// "metrics") serves now; nil when it serves no TLS.
func (g *Gateway) TLSCertificate(listener string) *tls.Certificate {
	return g.tlsCerts.current(listener)
}

// serverErrorLog is an http.Server's ErrorLog on logger: its lines at
// error, but for failed TLS handshakes, which any client or scanner can
// cause at will, at debug.
func serverErrorLog(logger *slog.Logger) *log.Logger {
	return log.New(serverLogWriter{logger}, "", 0)
}

type serverLogWriter struct{ logger *slog.Logger }

func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelError
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.logger.Log(context.Background(), level, msg)
	return len(p), nil
}
