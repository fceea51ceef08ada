package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// readRequestBody is the stage that reads the request's body whole, once,
// bounded by Routes.MaxBody (413) and, with the bodies of every request
// in flight, by Routes.MaxBodyMemory (503 request_body_memory_full,
// counted with Refusals). The request holds its share of that memory
// until it ends: the engine keeps the body for retries, and the transport
// until the answer is read. The read is bounded by BodyReadTimeout (408).
func readRequestBody(x *exchange) error {
	r, rt := x.r, x.rt
	if r.ContentLength > rt.MaxBody {
		// Refused before a byte of it is read; the connection is not
		// worth draining.
		return bodyTooLarge(rt.MaxBody).with("Connection", "close")
	}
	res, ok := x.h.bodies.open(r.ContentLength, rt.MaxBodyMemory)
	x.res = res
	if !ok {
		return bodyMemoryFull() // not worth draining either
	}
	rc := http.NewResponseController(x.w)
	if x.h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(x.start.Add(x.h.BodyReadTimeout))
	}
	body, err := readBody(res.reader(http.MaxBytesReader(x.w, r.Body, rt.MaxBody)), r.ContentLength)
	if x.h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return bodyReadError(err, rt.MaxBody)
	}
	x.body = body
	return nil
}

// bodyReadError is the answer to a body that could not be read whole.
func bodyReadError(err error, maxBody int64) *apiError {
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.Is(err, errBodyMemoryFull):
		return bodyMemoryFull() // the rest is unread
	case errors.As(err, &tooBig):
		return bodyTooLarge(maxBody)
	case errors.As(err, &ne) && ne.Timeout():
		return requestError(http.StatusRequestTimeout, "request_timeout", "switchover: the request body took too long to arrive").
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
