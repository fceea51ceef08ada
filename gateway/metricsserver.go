package gateway

import (
	"fmt"
	"net"
	"net/http"
)

// metricsServer opens server.metrics_listen, when set, and returns the
// server that answers GET /metrics on it, and nothing else, without a
// key (over TLS with server.metrics_tls); nil when it is not set. The address it is bound to is
// MetricsAddr.
func (g *Gateway) metricsServer() (*http.Server, net.Listener, error) {
	s := g.Config().Server
	if s.MetricsListen == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", s.MetricsListen)
	if err != nil {
		return nil, nil, fmt.Errorf("server.metrics_listen: %w", err)
	}
	tc, err := g.tlsConfig(listenerMetrics, s.MetricsTLS, defaultProtocols())
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	g.metricsAddr.Store(ln.Addr())
	g.Logger.Info("metrics served without a key on their own listener", "metrics_listen", ln.Addr().String(), "tls", tc != nil)
	ln = tlsListener(ln, tc)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.Metrics.Handler())
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(),
		ReadTimeout:       s.ReadTimeout.D(),
		IdleTimeout:       s.IdleTimeout.D(),
		MaxHeaderBytes:    1 << 16,
	}, ln, nil
}

// MetricsAddr is the address server.metrics_listen is bound to once
// Serve has opened it; nil before, or when it is not set.
func (g *Gateway) MetricsAddr() net.Addr {
	a, _ := g.metricsAddr.Load().(net.Addr)
	return a
}
