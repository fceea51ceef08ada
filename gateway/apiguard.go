package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/keysum"
	"github.com/switchover-gw/switchover/proxy"
)

// guardAPI is the API listener's handler: h, behind the checks made at
// the listener's edge before the request pipeline runs.
//
//   - While no keys are required (no-key mode), a browser on another
//     site must not use the operator's backends: a Host the API is not
//     known by (DNS rebinding), an Origin other than its own or one of
//     allowed_origins, or Sec-Fetch-Site: cross-site get 403. /healthz
//     and /readyz are exempt (probes reach a pod by its address).
//   - While keys are required, an address whose key checks keep failing
//     is throttled: see keyThrottle.
func (g *Gateway) guardAPI(h *proxy.Handler, kt *keyThrottle) http.Handler {
	return &apiGuard{g: g, h: h, kt: kt}
}

// apiGuard is guardAPI's handler. Its ServeHTTP is a method, not a
// closure behind http.HandlerFunc, and keeps its checks in admit and
// settle: a stream waits for its next event under this frame, and every
// frame under that wait is stack the stream holds (see proxy/relay.go).
type apiGuard struct {
	g  *Gateway
	h  *proxy.Handler
	kt *keyThrottle
}

// keyState is what the key throttle needs to learn a request's key check.
type keyState struct {
	addr string
	sum  [sha256.Size]byte
	kc   *proxy.KeyCheck // nil: no key was checked
}

func (a *apiGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ks keyState
	r = a.admit(w, r, &ks)
	if r == nil {
		return
	}
	a.h.ServeHTTP(w, r)
	if ks.kc != nil {
		a.settle(&ks)
	}
}

// admit makes the checks before r is served: it returns the request to
// serve (with a KeyCheck in ks when a presented key is checked), or nil
// once it has answered r itself.
//
//go:noinline
func (a *apiGuard) admit(w http.ResponseWriter, r *http.Request, ks *keyState) *http.Request {
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return r
	}
	if !a.h.KeysRequired() {
		if status, code, msg := browserRefusal(a.g.Config(), r); status != 0 {
			writeAPIError(w, r, status, code, msg)
			return nil
		}
		return r
	}
	secret, presented := proxy.PresentedKey(r)
	if !presented {
		return r
	}
	ks.addr = requestHost(r)
	ks.sum = keysum.Sum(secret)
	if wait := a.kt.wait(ks.addr, ks.sum); wait > 0 {
		secs := strconv.Itoa(int(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", secs)
		writeAPIError(w, r, http.StatusTooManyRequests, "too_many_failed_key_checks",
			"switchover: too many wrong gateway keys from your address; retry in "+secs+"s")
		return nil
	}
	r, ks.kc = proxy.WithKeyCheck(r)
	return r
}

// settle tells the key throttle how a checked key fared.
//
//go:noinline
func (a *apiGuard) settle(ks *keyState) {
	switch {
	case ks.kc.Failed:
		a.kt.failed(ks.addr)
	case ks.kc.Passed:
		a.kt.passed(ks.addr, ks.sum)
	}
}

// browserRefusal is why r, in no-key mode, is refused as a cross-site
// browser request or a request by a name the API is not known by: 403
// and its error code and message; status 0 when it is not.
func browserRefusal(cfg *config.Config, r *http.Request) (status int, code, msg string) {
	if !hostAllowed(cfg.Listen, cfg.AllowedHosts, r) {
		return http.StatusForbidden, "host_not_allowed", fmt.Sprintf(
			"switchover: host %q is not a name of this gateway (no keys are configured; add it to allowed_hosts)", truncate(r.Host, 100))
	}
	if o := r.Header.Get("Origin"); o != "" {
		if sameOrigin(o, r.Host) || slices.ContainsFunc(cfg.AllowedOrigins, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), o) }) {
			return 0, "", ""
		}
		return http.StatusForbidden, "cross_origin_refused", fmt.Sprintf(
			"switchover: cross-origin request from %q refused (no keys are configured; add the origin to allowed_origins)", truncate(o, 100))
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return http.StatusForbidden, "cross_origin_refused", "switchover: cross-site request refused (no keys are configured)"
	}
	return 0, "", ""
}

// writeAPIError answers an error in the caller's API format: Anthropic's
// on /v1/messages (and its count_tokens), OpenAI's otherwise.
func writeAPIError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	var body any
	if proxy.IsGeminiPath(r.URL.Path) {
		body = proxy.GeminiError(status, code, msg, w.Header())
	} else if strings.HasPrefix(r.URL.Path, "/v1/messages") {
		typ := "permission_error"
		if status == http.StatusTooManyRequests {
			typ = "rate_limit_error"
		}
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": nil} // no id yet at the edge
	} else {
		typ := "invalid_request_error"
		if status == http.StatusTooManyRequests {
			typ = "rate_limit_exceeded"
		}
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// requestHost is the IP address r came from.
func requestHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}
