package breaker

import (
	"fmt"
)

// Kind classifies what caused an outcome or a transition. Code that decides
// on a cause (the fleet publishing a trip, a notification naming why a
// region left) reads Kind; Outcome.Cause and Transition.Cause only describe
// it to people, and nothing parses them.
//
// The failure kinds are set by the routing engine on an Outcome, and a
// transition that a failure caused carries that failure's kind. The other
// kinds name who decided a transition: the breaker itself (KindTripEnded,
// KindRetryAfter, KindProbe), an operator (KindManual) or a health probe
// (KindHealthProbe). A transition adopted from another replica keeps the
// kind it had there, with Transition.Adopted set.
type Kind uint8

const (
	// KindUnknown: not classified (an outcome that set no Kind).
	KindUnknown Kind = iota
	// KindThrottled: the backend refused for quota (HTTP 429).
	KindThrottled
	// KindQuotaExhausted: the account is out of credit
	// (insufficient_quota): asking again soon is no use.
	KindQuotaExhausted
	// KindServerError: a 5xx.
	KindServerError
	// KindStatus: another status configured to count.
	KindStatus
	// KindTimeout: no first byte, or no end, within the attempt's bounds.
	KindTimeout
	// KindConnection: the connection could not be made, or broke.
	KindConnection
	// KindUnresponsive: calls waited with no first byte and a health check
	// found the backend not answering.
	KindUnresponsive
	// KindInvalidResponse: a success whose body could not be read or
	// translated.
	KindInvalidResponse
	// KindStreamBroken: a stream that ended with the backend's error event
	// or before its answer was complete.
	KindStreamBroken
	// KindMisconfigured: the backend refused its own credentials or lacks
	// the deployment (401, 403, 404).
	KindMisconfigured
	// KindCredential: no credential could be had for the backend (a token
	// request failed).
	KindCredential
	// KindTripEnded: the trip ended; the breaker waits for a probe.
	KindTripEnded
	// KindRetryAfter: the backend's own Retry-After elapsed: the breaker
	// closed without a probe, or let an early probe through.
	KindRetryAfter
	// KindProbe: a half-open probe's verdict closed the breaker.
	KindProbe
	// KindHealthProbe: the gateway's active health probe decided.
	KindHealthProbe
	// KindManual: an operator forced the state.
	KindManual
	kindCount
)

var kindNames = [kindCount]string{
	KindUnknown:         "unknown",
	KindThrottled:       "throttled",
	KindQuotaExhausted:  "quota_exhausted",
	KindServerError:     "server_error",
	KindStatus:          "status",
	KindTimeout:         "timeout",
	KindConnection:      "connection",
	KindUnresponsive:    "unresponsive",
	KindInvalidResponse: "invalid_response",
	KindStreamBroken:    "stream_broken",
	KindMisconfigured:   "misconfigured",
	KindCredential:      "credential",
	KindTripEnded:       "trip_ended",
	KindRetryAfter:      "retry_after",
	KindProbe:           "probe",
	KindHealthProbe:     "health_probe",
	KindManual:          "manual",
}

func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MarshalText names the kind, so that replicas exchange kinds by name and
// a replica of another version reads them right.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name; a name it does not know (a newer
// replica's) is KindUnknown, never an error.
func (k *Kind) UnmarshalText(b []byte) error {
	*k = KindUnknown
	for i, n := range kindNames {
		if n == string(b) {
			*k = Kind(i)
			break
		}
	}
	return nil
}

// Failure reports whether k is a kind of failure (set on an Outcome), as
// opposed to a decision taken by the breaker, an operator or a probe.
func (k Kind) Failure() bool { return k >= KindThrottled && k <= KindCredential }
