package route

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/switchover-gw/switchover/breaker"
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
	// ReasonFirstByteTimeout: no headers (or, for a stream, no first
	// content: see readToContent) within FirstByteTimeout.
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
	// ReasonUnresponsive: the attempt was waiting for its first byte when a
	// health check found the backend not answering at all; it was
	// abandoned and failed over at once.
	ReasonUnresponsive Reason = "unresponsive"
	// ReasonMisconfigured: the backend answered 401, or 403 or 404 to a
	// chat call (the operation it is configured for; see
	// ReasonOperationUnsupported for the others): its key was refused or
	// its deployment does not exist. The caller's own
	// credentials never go upstream, so this is the backend's
	// configuration, not the caller's mistake: failed over, and the
	// backend benched for long.
	ReasonMisconfigured Reason = "backend_misconfigured"
	// ReasonTooLarge: a 429 for a request that can never fit the backend's
	// whole per-minute token limit. The backend is not benched for it.
	ReasonTooLarge Reason = "request_exceeds_limit"
	// ReasonCanceled: the client went away. Never the backend's fault.
	ReasonCanceled Reason = "client_canceled"
	// ReasonOutpaced: the attempt was cancelled because the other attempt
	// of a hedged request answered first (see Hedge). Not the backend's
	// fault: its breaker is not told.
	ReasonOutpaced Reason = "outpaced"
	// ReasonUnavailable: the backend was skipped because its breaker was
	// open; used for failovers to a lower priority tier.
	ReasonUnavailable Reason = "breaker_open"
	// ReasonDrained: the backend was skipped because an operator drained
	// it (Backend.Drain); used for failovers to a lower priority tier.
	ReasonDrained Reason = "drained"
	// ReasonQuotaHeld: the backend was skipped because its rate-limit
	// headers said the call would not fit (Backend.Quota): no call was
	// sent to find out. Used for failovers to a lower priority tier.
	ReasonQuotaHeld Reason = "quota_held"
	// ReasonUnsupported: the backend was skipped because it cannot
	// honour the request (an operation or a feature its provider lacks;
	// Report.Skipped says which). Used for failovers to a lower priority
	// tier.
	ReasonUnsupported Reason = "unsupported"
)

var (
	errFirstByteTimeout = errors.New("switchover: no first byte within first_byte_timeout")
	errAttemptTimeout   = errors.New("switchover: attempt timeout")
	errIdleTimeout      = errors.New("switchover: stream idle timeout")
	errBudget           = errors.New("switchover: the request's time budget ran out")
)

// kind classifies r for the breaker (breaker.Outcome.Kind): the failure
// kinds that the fleet and the notifications decide on.
func (r Reason) kind() breaker.Kind {
	switch r {
	case ReasonRateLimited:
		return breaker.KindThrottled
	case ReasonServerError:
		return breaker.KindServerError
	case ReasonStatus:
		return breaker.KindStatus
	case ReasonFirstByteTimeout, ReasonTimeout:
		return breaker.KindTimeout
	case ReasonConnect, ReasonConnection:
		return breaker.KindConnection
	case ReasonUnresponsive:
		return breaker.KindUnresponsive
	case ReasonInvalidResponse:
		return breaker.KindInvalidResponse
	case ReasonStreamError:
		return breaker.KindStreamBroken
	case ReasonMisconfigured:
		return breaker.KindMisconfigured
	case ReasonAuth:
		return breaker.KindCredential
	}
	return breaker.KindUnknown
}

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
	case errIdleTimeout, errStreamStalled, errBudget:
		return ReasonTimeout
	case errUnresponsive:
		return ReasonUnresponsive
	case errOutpaced:
		return ReasonOutpaced
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

// describeTransportError says what went wrong with an attempt that got no
// answer, in words that name no address: a dial error's text carries the
// backend's IP and port, which are the operator's business, not the
// caller's.
func describeTransportError(reason Reason, err error, b *Backend) string {
	switch reason {
	case ReasonFirstByteTimeout:
		return "no first byte within the first-byte timeout"
	case ReasonTimeout:
		return "the attempt timed out"
	case ReasonUnresponsive:
		return "the backend stopped answering; a health check failed"
	}
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return "the backend's host name did not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the backend"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the backend closed the connection before the answer was complete"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "the connection timed out"
	}
	if reason == ReasonConnect {
		return "the connection to the backend could not be made"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "the connection to the backend failed"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return b.redact(err.Error())
}
