package route

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Reason classifies why an attempt did not produce the answer. Reasons are
// metric label values; the set is small and fixed.
type Reason string

// Attempt reasons.
const (
	// ReasonOK: the backend answered with a status that is passed to the
	// client (2xx, or a 4xx that is the caller's own fault).
	ReasonOK Reason = ""
	// ReasonRateLimited: 429.
	ReasonRateLimited Reason = "rate_limited"
	// ReasonServerError: a 5xx.
	ReasonServerError Reason = "server_error"
	// ReasonStatus: another status configured to retry or count.
	ReasonStatus Reason = "status"
	// ReasonFirstByteTimeout: no headers (or first stream bytes) within
	// FirstByteTimeout.
	ReasonFirstByteTimeout Reason = "first_byte_timeout"
	// ReasonTimeout: the attempt's whole Timeout ran out.
	ReasonTimeout Reason = "timeout"
	// ReasonConnect: the connection could not be made (refused, DNS, dial
	// timeout, TLS).
	ReasonConnect Reason = "connect_error"
	// ReasonConnection: the connection failed after it was made (reset,
	// closed before a response).
	ReasonConnection Reason = "connection_error"
	// ReasonAuth: no credential could be had for the backend (an Entra ID
	// token request failed).
	ReasonAuth Reason = "auth_error"
	// ReasonInvalidResponse: a success whose body could not be read or
	// translated.
	ReasonInvalidResponse Reason = "invalid_response"
	// ReasonStreamError: a translated stream ended with the backend's own
	// error event, or before its answer was complete.
	ReasonStreamError Reason = "stream_error"
	// ReasonCanceled: the client went away. Never the backend's fault.
	ReasonCanceled Reason = "client_canceled"
	// ReasonUnavailable: the backend was skipped because its breaker was
	// open; used for failovers to a lower priority tier.
	ReasonUnavailable Reason = "breaker_open"
)

var (
	errFirstByteTimeout = errors.New("switchover: no first byte within first_byte_timeout")
	errAttemptTimeout   = errors.New("switchover: attempt timeout")
	errIdleTimeout      = errors.New("switchover: stream idle timeout")
)

// statusReason names a status that failed an attempt.
func statusReason(status int) Reason {
	switch {
	case status == http.StatusTooManyRequests:
		return ReasonRateLimited
	case status >= 500:
		return ReasonServerError
	}
	return ReasonStatus
}

// errReason classifies a transport error of an attempt whose context is
// actx, started under the client's context cctx.
func errReason(cctx, actx context.Context, err error) Reason {
	if cctx.Err() != nil {
		return ReasonCanceled
	}
	switch context.Cause(actx) {
	case errFirstByteTimeout:
		return ReasonFirstByteTimeout
	case errAttemptTimeout:
		return ReasonTimeout
	case errIdleTimeout:
		return ReasonTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return ReasonConnect
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return ReasonConnect
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ReasonConnect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return ReasonConnection
	}
	return ReasonConnection
}
