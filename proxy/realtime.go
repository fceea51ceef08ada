package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// switchedHeaders are the headers of a backend's 101 that reach the
// client: the WebSocket handshake's, and the engine's own.
var switchedHeaders = []string{"Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions",
	route.HeaderBackend, route.HeaderRegion, route.HeaderFailover, route.HeaderAttempts}

// serveRealtime proxies a realtime session (GET /v1/realtime?model=…, or
// Azure's /openai/realtime?deployment=…): the engine makes the upgrade
// request with the backend's credential, failing over until a backend
// switches protocols; the gateway then answers the client's upgrade with
// that backend's handshake and joins the two connections, byte for byte,
// until either end closes. The session stays on its backend.
func (h *Handler) serveRealtime(w http.ResponseWriter, r *http.Request, rt *Routes, who caller, id string) {
	start := time.Now()
	lg := &logLine{id: id, key: who.name, who: who.p, method: r.Method, path: r.URL.Path}
	defer func() { h.finish(lg, start) }()
	fail := func(status int, code, msg string) {
		lg.status = status
		writeErrorAs(w, translate.OpenAI, status, "invalid_request_error", code, msg)
	}
	if !headerHas(r.Header, "Connection", "upgrade") || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("Upgrade", "websocket")
		fail(http.StatusUpgradeRequired, "websocket_required", "switchover: the realtime API is a WebSocket: connect with an upgrade request")
		return
	}
	q := r.URL.Query()
	model := q.Get("model")
	if model == "" {
		model = q.Get("deployment") // Azure's preview form
	}
	lg.model = model
	if model == "" {
		fail(http.StatusBadRequest, "missing_model", "switchover: name the pool in the model query parameter: /v1/realtime?model=…")
		return
	}
	pool, ok := rt.Pools[model]
	if !ok {
		fail(http.StatusNotFound, "model_not_found", fmt.Sprintf("switchover: the model %q is not a pool of this gateway (GET /v1/models lists them)", truncate(model, 100)))
		return
	}
	lg.pool, lg.stream, lg.routed = pool.Name, true, true
	if !h.admit(w, lg, translate.OpenAI, pool.Name, model, 0) {
		return
	}

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	h.halting.add(lg, cancel)
	defer h.halting.remove(lg)
	req := &route.Request{Op: route.Realtime, Model: model, Header: r.Header, RawQuery: r.URL.RawQuery}
	resp, rep, err := pool.Do(ctx, req)
	lg.report = rep
	if err != nil {
		if r.Context().Err() != nil {
			lg.status, lg.err = 0, r.Context().Err()
			return
		}
		lg.err = err
		fail(http.StatusBadGateway, "bad_gateway", "switchover: "+err.Error())
		return
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// Every backend refused: the engine's answer, as for any call.
		defer resp.Body.Close()
		hdr := w.Header()
		route.RemoveHopHeaders(resp.Header)
		for k, vv := range resp.Header {
			hdr[k] = vv
		}
		lg.status = resp.StatusCode
		w.WriteHeader(resp.StatusCode)
		n, _ := io.Copy(w, resp.Body)
		lg.bytes = n
		return
	}
	up := resp.Body.(io.ReadWriteCloser)
	defer up.Close()

	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		lg.status, lg.err = http.StatusInternalServerError, err
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{}) // a session lasts as long as its ends keep it
	lg.status = http.StatusSwitchingProtocols
	var hs strings.Builder
	hs.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
	for _, k := range switchedHeaders {
		for _, v := range resp.Header.Values(k) {
			hs.WriteString(k + ": " + strings.NewReplacer("\r", "", "\n", "").Replace(v) + "\r\n")
		}
	}
	hs.WriteString("X-Request-Id: " + id + "\r\n\r\n")
	if _, err := brw.WriteString(hs.String()); err != nil {
		lg.err = err
		return
	}
	if err := brw.Flush(); err != nil {
		lg.err = err
		return
	}
	lg.firstByte = time.Since(start)
	lg.bytes, lg.err = join(ctx, conn, brw.Reader, up)
	if errors.Is(context.Cause(ctx), ErrShuttingDown) {
		lg.err = ErrShuttingDown
	}
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
