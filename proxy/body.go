package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/switchover-gw/switchover/translate"
)

// readRequestBody reads r's body, bounded by the routes' limits, and
// answers the error itself when it cannot (ok false). The reservation of
// body memory it returns must be closed once the response has ended.
func (h *Handler) readRequestBody(w http.ResponseWriter, r *http.Request, rt *Routes, lg *logLine, format translate.Format, start time.Time) (body []byte, res *reservation, ok bool) {
	writeError := func(w http.ResponseWriter, status int, typ, code, msg string) {
		writeErrorAs(w, format, status, typ, code, msg)
	}
	if r.ContentLength > rt.MaxBody {
		// Refused before a byte of it is read; the connection is not
		// worth draining.
		lg.status = http.StatusRequestEntityTooLarge
		w.Header().Set("Connection", "close")
		writeError(w, lg.status, "invalid_request_error", "request_too_large", fmt.Sprintf("switchover: request body is over the %d byte limit", rt.MaxBody))
		return
	}
	res, ok = h.bodies.open(r.ContentLength, rt.MaxBodyMemory)
	if !ok {
		lg.status = http.StatusServiceUnavailable
		w.Header().Set("Connection", "close") // not worth draining either
		h.refused(codeBodyMemoryFull)
		writeBusy(w, format, codeBodyMemoryFull, msgBodyMemoryFull)
		return body, res, false
	}

	rc := http.NewResponseController(w)
	if h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(start.Add(h.BodyReadTimeout))
	}
	body, err := readBody(res.reader(http.MaxBytesReader(w, r.Body, rt.MaxBody)), r.ContentLength)
	if h.BodyReadTimeout > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.Is(err, errBodyMemoryFull):
			lg.status = http.StatusServiceUnavailable
			w.Header().Set("Connection", "close") // the rest is unread
			h.refused(codeBodyMemoryFull)
			writeBusy(w, format, codeBodyMemoryFull, msgBodyMemoryFull)
		case errors.As(err, &tooBig):
			lg.status = http.StatusRequestEntityTooLarge
			writeError(w, lg.status, "invalid_request_error", "request_too_large", fmt.Sprintf("switchover: request body is over the %d byte limit", rt.MaxBody))
		case errors.As(err, &ne) && ne.Timeout():
			lg.status, lg.err = http.StatusRequestTimeout, err
			w.Header().Set("Connection", "close")
			writeError(w, lg.status, "invalid_request_error", "request_timeout", "switchover: the request body took too long to arrive")
		default:
			lg.status, lg.err = 0, err // the client went away while sending
		}
		return nil, res, false
	}
	return body, res, true
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
