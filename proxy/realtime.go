package proxy

import (
	"bufio"
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
	"time"

	"github.com/switchover-gw/switchover/route"
)

// switchedHeaders are the headers of a backend's 101 that reach the
// client: the WebSocket handshake's, and the engine's own.
var switchedHeaders = []string{"Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions",
	route.HeaderBackend, route.HeaderRegion, route.HeaderFailover, route.HeaderAttempts}

// routeRealtime is the stage that finds the pool of a realtime session
// (GET /v1/realtime?model=…, or Azure's /openai/realtime?deployment=…):
// 426 for a request that is not a WebSocket upgrade, 400 without a model,
// 404 for a name that is no pool's.
func routeRealtime(x *exchange) error {
	r := x.r
	if !headerHas(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return requestError(http.StatusUpgradeRequired, "websocket_required", "switchover: the realtime API is a WebSocket: connect with an upgrade request").
			with("Upgrade", "websocket")
	}
	q := r.URL.Query()
	model := q.Get("model")
	if model == "" {
		model = q.Get("deployment") // Azure's preview form
	}
	x.lg.model = model
	if model == "" {
		return requestError(http.StatusBadRequest, "missing_model", "switchover: name the pool in the model query parameter: /v1/realtime?model=…")
	}
	pool, ok := x.rt.Pools[model]
	if !ok {
		return requestError(http.StatusNotFound, "model_not_found",
			fmt.Sprintf("switchover: the model %q is not a pool of this gateway (GET /v1/models lists them)", truncate(model, 100)))
	}
	x.lg.stream, x.lg.routed = true, true
	hdr, query := withoutCallerKey(r)
	x.routeTo(pool, &route.Request{Op: route.Realtime, Model: model, Header: hdr, RawQuery: query})
	return nil
}

// withoutCallerKey returns the headers and query of a realtime upgrade
// without the key the caller presented, in whatever form the gateway took
// it: no header value, subprotocol or query parameter that holds it (in
// any case) goes on to the engine, which also drops every credential
// parameter and key subprotocol by name (route's prepareRealtime) and
// sets the backend's own credential.
func withoutCallerKey(r *http.Request) (http.Header, string) {
	key, ok := presentedKey(r)
	if !ok || len(key) < 4 {
		return r.Header, r.URL.RawQuery
	}
	holds := func(v string) bool { return containsFold(v, key) }
	h := make(http.Header, len(r.Header))
	for k, vv := range r.Header {
		for _, v := range vv {
			if k == "Sec-Websocket-Protocol" {
				var keep []string
				for _, p := range strings.Split(v, ",") {
					if !holds(p) {
						keep = append(keep, strings.TrimSpace(p))
					}
				}
				v = strings.Join(keep, ", ")
			}
			if v != "" && !holds(v) {
				h[k] = append(h[k], v)
			}
		}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return h, "" // a query that does not parse is not forwarded
	}
	for k, vv := range q {
		if holds(k) || slices.ContainsFunc(vv, holds) {
			delete(q, k)
		}
	}
	return h, q.Encode()
}

// containsFold reports whether s contains sub in any ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// tunnel is the stage that opens a realtime session: the engine makes the
// upgrade request with the backend's credential, failing over until a
// backend switches protocols; the gateway then answers the client's
// upgrade with that backend's handshake and joins the two connections,
// byte for byte, until either end closes. The session stays on its
// backend. When no backend switched, the engine's answer is passed on.
func tunnel(x *exchange) error {
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	x.h.halting.add(&x.lg, cancel)
	defer x.h.halting.remove(&x.lg)
	resp, rep, err := x.pool.Do(ctx, x.req)
	x.lg.report = rep
	if err != nil {
		if cerr := x.r.Context().Err(); cerr != nil {
			return clientGone(cerr)
		}
		// An invalid_request_error, unlike an API call's bad_gateway, as
		// it has always been.
		return requestError(http.StatusBadGateway, "bad_gateway", "switchover: "+err.Error()).because(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// Every backend refused: the engine's answer, as for any call.
		defer resp.Body.Close()
		hdr := x.w.Header()
		route.RemoveHopHeaders(resp.Header)
		for k, vv := range resp.Header {
			hdr[k] = vv
		}
		x.writeHeader(resp.StatusCode)
		x.lg.bytes, _ = io.Copy(x.w, resp.Body)
		return nil
	}
	up := resp.Body.(io.ReadWriteCloser)
	defer up.Close()
	return x.switchProtocols(ctx, resp, up)
}

// switchProtocols answers the client's upgrade, on its hijacked
// connection, with the handshake of the backend's 101 resp, and joins the
// connection to the backend's, up, until the session ends. When the
// connection cannot be taken over (its ResponseWriter cannot hijack, as
// over HTTP/2 or behind a wrapper that hides it), nothing has been
// written: that is answered 500 upgrade_failed, as any error, and the
// backend's session closed. Once hijacked, nothing can be answered on
// the connection: the log line records how the session ended.
func (x *exchange) switchProtocols(ctx context.Context, resp *http.Response, up io.ReadWriteCloser) error {
	conn, brw, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		return serverError(http.StatusInternalServerError, "upgrade_failed",
			"switchover: the connection could not be switched to a WebSocket session").because(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{}) // a session lasts as long as its ends keep it
	x.lg.status = http.StatusSwitchingProtocols
	var hs strings.Builder
	hs.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
	for _, k := range switchedHeaders {
		for _, v := range resp.Header.Values(k) {
			hs.WriteString(k + ": " + strings.NewReplacer("\r", "", "\n", "").Replace(v) + "\r\n")
		}
	}
	hs.WriteString("X-Request-Id: " + x.lg.id + "\r\n\r\n")
	if _, err := brw.WriteString(hs.String()); err != nil {
		x.lg.err = err
		return nil
	}
	if err := brw.Flush(); err != nil {
		x.lg.err = err
		return nil
	}
	x.lg.firstByte = time.Since(x.start)
	x.lg.bytes, x.lg.err = join(ctx, conn, brw.Reader, up)
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		x.lg.err = ErrShuttingDown
	}
	return nil
}

// join copies frames both ways between the client's connection (read
// through cr, which may hold bytes already buffered) and the backend's,
// until either side ends or ctx does; then both are closed. It returns the
// bytes sent to the client, and the error that ended the session, nil for
// a clean close.
func join(ctx context.Context, client net.Conn, cr *bufio.Reader, up io.ReadWriteCloser) (int64, error) {
	var once sync.Once
	var first error
	closeBoth := func(err error) {
		once.Do(func() {
			first = err
			client.Close()
			up.Close()
		})
	}
	stop := context.AfterFunc(ctx, func() { closeBoth(context.Cause(ctx)) })
	defer stop()
	var toClient atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := io.Copy(up, cr)
		closeBoth(err)
	})
	wg.Go(func() {
		n, err := io.Copy(client, up)
		toClient.Store(n)
		closeBoth(err)
	})
	wg.Wait()
	if errors.Is(first, net.ErrClosed) || errors.Is(first, io.EOF) {
		first = nil
	}
	return toClient.Load(), first
}

// headerHas reports whether a comma-separated header holds token, in any
// case.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
