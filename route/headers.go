package route

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// The header lists, both ways, in one place. A caller of the gateway is not
// the operator: whatever a caller sends reaches the upstream next to the
// operator's credential, and whatever the upstream answers reaches a
// caller who does not own the account. So both directions are allowlists,
// and a header not named here is dropped. docs/providers.md has the same
// tables; keep them in step.

// forwardedRequest reports whether a caller's request header (in canonical
// form) goes upstream to a backend speaking format.
//
//   - X-Request-Id: the gateway's request id (the caller's when it is sane,
//     else a new one; proxy sets it), so both sides can find one call.
//   - Traceparent, Tracestate: W3C trace context, the gateway's own span
//     when tracing is on. Baggage is not forwarded: it is the caller's
//     free-form data.
//   - Anthropic-Beta, to Anthropic backends only: the documented way to opt
//     in to a feature (it changes what the request may contain, not who
//     pays for it). Values from the backend's configured headers come
//     first.
//
// Not forwarded, on purpose: Content-Type, Accept and Accept-Encoding
// (each provider sets its own: the body is always JSON, and compression
// is the transport's), User-Agent and the SDKs' X-Stainless-* telemetry
// (the caller's platform is not the upstream's business), Idempotency-Key
// and OpenAI-Beta (not part of the routed operations; a key reused across
// backends and accounts would mean something else to each), OpenAI-
// Organization and OpenAI-Project (they pick whose account is billed:
// the operator sets them per backend), Anthropic-Version (set per backend),
// every credential (Authorization, Api-Key, X-Api-Key, X-Goog-Api-Key),
// Cookie, X-Forwarded-* and Forwarded (the caller's address), and the
// hop-by-hop headers.
func forwardedRequest(format translate.Format, key string) bool {
	switch key {
	case "X-Request-Id", "Traceparent", "Tracestate":
		return true
	case "Anthropic-Beta":
		return format == translate.Anthropic
	}
	return false
}

// maxForwardedValues bounds the values of one forwarded header, and
// maxForwardedBytes their total size: a caller cannot make the gateway
// send the upstream a header block it would refuse.
const (
	maxForwardedValues = 16
	maxForwardedBytes  = 8 << 10
)

// forwardHeaders returns the caller's headers that go upstream to a
// backend speaking format (see forwardedRequest). The values are the
// caller's own slices, capped at their length (a later append copies):
// only read, by the provider that copies them into the upstream request
// (newUpstream), so a copy of them was an allocation for nothing. This
// package's providers do without the map: newUpstream copies the same
// headers straight from the caller's (Outgoing.fwd, forwardedInto).
func forwardHeaders(format translate.Format, src http.Header) http.Header {
	keys := 0
	for k := range src {
		if forwardedRequest(format, k) {
			keys++
		}
	}
	dst := make(http.Header, keys)
	if keys == 0 {
		return dst
	}
	size := 0
	for k, vv := range src {
		if !forwardedRequest(format, k) {
			continue
		}
		out, full := capForwarded(k, vv, &size)
		if len(out) > 0 {
			dst[k] = out
		}
		if full {
			return dst
		}
	}
	return dst
}

// capForwarded is what goes upstream of the caller's values vv of
// forwarded header k: at most maxForwardedValues of them, and only while
// the forwarded headers' size so far (*size, which it adds to) stays
// within maxForwardedBytes; full reports that the size is reached and no
// other header goes. The slice is vv's own, capped at its length.
func capForwarded(k string, vv []string, size *int) (out []string, full bool) {
	n := 0
	for _, v := range vv[:min(len(vv), maxForwardedValues)] {
		if *size += len(k) + len(v); *size > maxForwardedBytes {
			return vv[:n:n], true
		}
		n++
	}
	return vv[:n:n], false
}

// forwardedInto sets in hb the caller's headers of o that go upstream:
// o.Header as it is, or, for this package's providers, the forwarded
// part of the caller's header (o.fwd), as forwardHeaders would have made
// it, without the map in between.
func (o *Outgoing) forwardedInto(hb *headerBuf) {
	for k, vv := range o.Header {
		hb.setAll(k, vv)
	}
	size := 0
	for k, vv := range o.fwd {
		if !forwardedRequest(o.fwdFormat, k) {
			continue
		}
		out, full := capForwarded(k, vv, &size)
		if len(out) > 0 {
			hb.setAll(k, out)
		}
		if full {
			return
		}
	}
}

// forwardedCount is an upper bound of the keys and values forwardedInto
// sets, to size the header set.
func (o *Outgoing) forwardedCount() (keys, vals int) {
	keys = len(o.Header)
	for _, vv := range o.Header {
		vals += len(vv)
	}
	for k, vv := range o.fwd {
		if forwardedRequest(o.fwdFormat, k) {
			keys++
			vals += min(len(vv), maxForwardedValues)
		}
	}
	return keys, vals
}

// forwardedValues returns the values of the caller's header k (in
// canonical form) that go upstream: in o.Header, or forwarded from the
// caller's header (o.fwd) within the caps on one header.
func (o *Outgoing) forwardedValues(k string) []string {
	if vv := o.Header[k]; len(vv) > 0 || o.fwd == nil || !forwardedRequest(o.fwdFormat, k) {
		return vv
	}
	size := 0
	out, _ := capForwarded(k, o.fwd[k], &size)
	return out
}

// relayedResponse reports whether an upstream response header (in
// canonical form) is passed on to the caller:
//
//   - the body's framing: Content-Type, Content-Length, Content-Encoding;
//   - whether it may be stored: Cache-Control (the response cache keeps
//     no answer marked no-store);
//   - rate limits and back-off: X-Ratelimit-*, Anthropic-Ratelimit-*,
//     Retry-After, Retry-After-Ms, X-Should-Retry (the SDKs honour them);
//   - request ids, for support tickets: X-Request-Id (the proxy passes it
//     on as X-Upstream-Request-Id), Request-Id (Anthropic), Apim-Request-Id
//     and X-Ms-Request-Id (Azure);
//   - what served it: Openai-Processing-Ms, Openai-Model, Openai-Version;
//   - a WebSocket handshake's answer (realtime sessions):
//     Sec-Websocket-Accept, Sec-Websocket-Protocol, Sec-Websocket-Extensions.
//
// Everything else is dropped: Set-Cookie (a session with the operator's
// account), headers that name the operator's account (Openai-Organization,
// Openai-Project, Anthropic-Organization-Id), and any header the upstream
// might echo a credential in. The values of relayed headers are redacted
// too (see Backend.relayHeader).
func relayedResponse(key string) bool {
	switch key {
	case "Content-Type", "Content-Length", "Content-Encoding", "Cache-Control",
		"Retry-After", "Retry-After-Ms", "X-Should-Retry",
		"X-Request-Id", "Request-Id", "Apim-Request-Id", "X-Ms-Request-Id",
		"Openai-Processing-Ms", "Openai-Model", "Openai-Version",
		"Sec-Websocket-Accept", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions":
		return true
	}
	return strings.HasPrefix(key, "X-Ratelimit-") || strings.HasPrefix(key, "Anthropic-Ratelimit-")
}

// relayHeader returns the headers of upstream response h that may reach
// a caller (see relayedResponse), with the backend's credentials redacted
// from their values.
func (b *Backend) relayHeader(h http.Header) http.Header {
	return b.relayHeaderRoom(h, 0).h
}

// relayHeaderRoom is relayHeader with room for n single-valued headers
// that the caller adds with set. Every value, the added ones included,
// lives in one backing array: one allocation instead of one per header.
func (b *Backend) relayHeaderRoom(h http.Header, n int) headerBuf {
	keys, vals := n, n
	for k, vv := range h {
		if relayedResponse(k) {
			keys++
			vals += len(vv)
		}
	}
	out := headerBuf{h: make(http.Header, keys), vals: make([]string, 0, vals)}
	for k, vv := range h {
		if !relayedResponse(k) {
			continue
		}
		i := len(out.vals)
		for _, v := range vv {
			out.vals = append(out.vals, b.redact(v))
		}
		out.h[k] = out.vals[i:len(out.vals):len(out.vals)]
	}
	return out
}

// relayHeaderInPlace is relayHeaderRoom on h itself, an upstream
// response's own header, which the caller owns and passes on: the
// headers that may not reach a caller are deleted from it and the
// backend's credentials redacted from the values of the rest. room,
// empty, is the backing of the values of the headers the caller adds
// (set): no allocation while they fit, where a copy took three.
func (b *Backend) relayHeaderInPlace(h http.Header, room []string) headerBuf {
	if h == nil {
		h = make(http.Header, cap(room))
	}
	for k, vv := range h {
		if !relayedResponse(k) {
			delete(h, k)
			continue
		}
		for i, v := range vv {
			vv[i] = b.redact(v)
		}
	}
	return headerBuf{h: h, vals: room[:0]}
}

// headerBuf is a header under construction whose values share one
// backing array. Each header's slice is capped at its length, so a later
// Add copies instead of writing over its neighbour.
type headerBuf struct {
	h    http.Header
	vals []string
}

// set sets key k (in canonical form) to the single value v, in the
// backing array while it has room.
func (hb *headerBuf) set(k, v string) {
	hb.vals = append(hb.vals, v)
	n := len(hb.vals)
	hb.h[k] = hb.vals[n-1 : n : n]
}

// setAll sets key k to the values vv followed by more, in the backing
// array while it has room.
func (hb *headerBuf) setAll(k string, vv []string, more ...string) {
	i := len(hb.vals)
	hb.vals = append(append(hb.vals, vv...), more...)
	n := len(hb.vals)
	hb.h[k] = hb.vals[i:n:n]
}

// hopHeaders are response headers a proxy must not pass on.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// RemoveHopHeaders deletes hop-by-hop headers, including those named by
// Connection, from a response header before it is passed on.
func RemoveHopHeaders(h http.Header) {
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				h.Del(tok)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
