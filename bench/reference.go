package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// ServeReference runs the reference proxy until ctx ends: Go's stock
// httputil.ReverseProxy from listen to upstream, with a keep-alive pool
// as large as the gateway's and nothing else. It is what net/http alone
// costs, the floor a Go gateway can reach without leaving net/http.
func ServeReference(ctx context.Context, listen, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		},
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// Full duplex: net/http's server otherwise closes a request body it has
	// not seen the end of once the answer's headers are written, and the
	// Transport, still reading the body for its EOF when a stream's
	// upstream answers at once, then closes the upstream connection and
	// cuts the stream (a few in a hundred held streams). The gateway reads
	// the body before it calls the upstream, so it never meets this.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
	return serveUntilDone(ctx, ln, h)
}

// ServeAnswer serves, on listen until ctx ends, net/http's server and
// nothing else: each request's body is read and the mock upstream's chat
// completion answered. Its CPU and syscalls per request at a fixed rate
// are what net/http's server alone costs on the machine, the floor of
// any Go server of HTTP/1.1 built on it (docs/performance.md).
func ServeAnswer(ctx context.Context, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(chatAnswer)))
		w.Write(chatAnswer)
	})
	return serveUntilDone(ctx, ln, h)
}

// serveUntilDone serves h on ln until ctx ends, then shuts down.
func serveUntilDone(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
