package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/tenant"
)

// readRequestBody is the stage that reads the request's body whole, once,
// bounded by Routes.MaxBody (413) and, with the bodies of every request
// in flight, by Routes.MaxBodyMemory (503 request_body_memory_full,
// counted with Refusals), and with its key's, by its key's share of it,
// Routes.MaxBodyMemoryPerKey (429 rate_limit_exceeded). The request holds
// its share of that memory until it ends: the engine keeps the body for
// retries, and the transport until the answer is read. The read is
// bounded by BodyReadTimeout and Routes.MinBodyRate (bodyDeadline; 408).
func readRequestBody(x *exchange) error {
	r, rt := x.r, x.rt
	if r.ContentLength > rt.MaxBody {
		// Refused before a byte of it is read. The connection closes,
		// but not before the client, which is likely still writing the
		// body, can read the answer (linger).
		x.lingers = true
		return bodyTooLarge(rt.MaxBody).with("Connection", "close")
	}
	var keyMemory *atomic.Int64
	if x.hold != nil {
		keyMemory = &x.hold.memory
	}
	if err := x.h.bodies.open(&x.res, r.ContentLength, rt.MaxBodyMemory, keyMemory, rt.MaxBodyMemoryPerKey); err != nil {
		return x.bodyReadError(err) // not worth draining either
	}
	src := io.Reader(r.Body)
	if r.ContentLength < 0 {
		// A chunked body may run past the bound. One of a declared length
		// cannot: the length was checked above, and net/http reads no
		// more of it (a bound that can never trip was an allocation).
		src = http.MaxBytesReader(x.w, r.Body, rt.MaxBody)
	}
	x.watching = x.deadline().watch(x.w, x.h.BodyReadTimeout, rt.MinBodyRate)
	if x.watching {
		src = x.watch.reader(src)
	}
	body, err := readBody(x.res.reader(src), r.ContentLength)
	if x.watching {
		x.watching = false
		if x.watch.stop() {
			err = errBodyTooSlow // even if the last byte came as it ended
		}
	}
	if err != nil {
		return x.bodyReadError(err)
	}
	x.body = body
	return nil
}

// ignoreBody is the stage of the paths that take no body (the model list,
// calls on a stored response): a request that sends one anyway is
// answered without it being read, and its connection closes after the
// answer, so that net/http does not wait for the rest of it, holding the
// request's slot, before the answer goes out (end stops its read after).
func ignoreBody(x *exchange) error {
	if x.bodyUnread() {
		x.w.Header().Set("Connection", "close")
	}
	return nil
}

// bodyUnread reports whether the request came with a body that has not
// been read.
func (x *exchange) bodyUnread() bool { return x.body == nil && x.r.ContentLength != 0 }

// stopBodyRead ends what net/http would read of an unread body once the
// handler returns (up to 256 KiB, for as long as the client takes): a
// read deadline in the past fails that read at once, and the connection,
// whose answer says Connection: close, closes. The answer is written all
// the same.
func (x *exchange) stopBodyRead() {
	http.NewResponseController(x.w).SetReadDeadline(time.Unix(1, 0))
}

// lingerBytes and lingerTime bound what end reads and discards of a body
// refused for its declared size, once the answer is out: a client still
// writing the body would otherwise meet a closed connection and report
// a reset, not the answer (nginx's lingering close does the same). Other
// refusals of an unread body (no key, a slow body) close at once.
const (
	lingerBytes = 4 << 20
	lingerTime  = 2 * time.Second
)

// linger sends the answer, then reads and discards what the client still
// sends of the unread body, up to lingerBytes for lingerTime, before the
// connection closes; the request's slots are already given back.
func (x *exchange) linger() {
	rc := http.NewResponseController(x.w)
	_ = rc.EnableFullDuplex()
	if rc.Flush() == nil && rc.SetReadDeadline(time.Now().Add(lingerTime)) == nil {
		_, _ = io.CopyN(io.Discard, x.r.Body, lingerBytes)
	}
	x.stopBodyRead()
}

// errBodyTooSlow is the cause of a body read ended by its bodyDeadline.
var errBodyTooSlow = errors.New("the request body arrived too slowly (server.read_timeout, server.min_body_rate)")

// deadline returns the exchange's bodyDeadline, on the handler's clock:
// the one its exchange kept from an earlier request, or a new one.
func (x *exchange) deadline() *bodyDeadline {
	clk := x.h.clock()
	if x.watch == nil || x.watch.clk != clk {
		x.watch = newBodyDeadline(clk)
	}
	return x.watch
}

// bodyReadError is the answer to a body that could not be read whole.
func (x *exchange) bodyReadError(err error) *apiError {
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, errKeyBodyMemoryFull):
		used := int64(0)
		if x.hold != nil {
			used = x.hold.memory.Load()
		}
		return keyBodyMemoryFull(x.lg.key, used, x.rt.MaxBodyMemoryPerKey, x.h.now())
	case errors.Is(err, errBodyMemoryFull):
		return bodyMemoryFull() // the rest is unread
	case errors.As(err, &tooBig):
		return bodyTooLarge(x.rt.MaxBody)
	case errors.Is(err, errBodyTooSlow), errors.As(err, &ne) && ne.Timeout():
		return requestError(http.StatusRequestTimeout, "request_timeout", "switchover: the request body took too long to arrive (server.read_timeout, then server.min_body_rate)").
			with("Connection", "close").because(err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.As(err, &ne):
		return clientGone(err) // while sending: the connection ended or broke
	}
	// The connection is up, but its bytes are not a body: net/http's
	// chunked decoding refused them (a malformed chunk size or trailer, a
	// line too long), with errors it does not export.
	return requestError(http.StatusBadRequest, "invalid_body",
		"switchover: the request body is malformed (its chunked transfer encoding could not be read)").
		with("Connection", "close").because(err)
}

// keyBodyMemoryFull is the refusal of a body that would take its key's
// bodies in flight (used bytes now) over the key's share of the memory
// for them, limit: 429, the connection closed, the rest of the body
// unread.
func keyBodyMemoryFull(key string, used, limit int64, now time.Time) *apiError {
	msg := fmt.Sprintf("switchover: key %s holds %d bytes of request bodies in flight, and this one would take it over its share of the gateway's memory for them (server.max_body_memory_per_key, %d bytes); retry when one ends", key, used, limit)
	return keyRefusal(&tenant.Refusal{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Subject: "key", Name: key,
		Limit: "request body memory", Max: float64(limit), Used: float64(used), Reset: now.Add(time.Second), RetryAfter: time.Second,
		Message: msg}).with("Connection", "close")
}

func bodyTooLarge(maxBody int64) *apiError {
	return requestError(http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("switchover: request body is over the %d byte limit", maxBody))
}

// bodyMemoryFull is the refusal of a body the memory for request bodies
// has no room for; the connection is closed, the rest of the body unread.
func bodyMemoryFull() *apiError {
	return gatewayBusy(codeBodyMemoryFull, msgBodyMemoryFull).with("Connection", "close")
}

const msgBodyMemoryFull = "switchover: the gateway holds as many request bodies as its memory for them allows (server.max_body_memory); retry shortly"

// readBody reads a request body of declared length n (-1: unknown). A
// declared length is read into a slice of exactly that size, so the
// memory a body takes is the length it reserved; io.ReadAll's doubling
// would take up to twice as much.
func readBody(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}
