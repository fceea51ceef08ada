package gateway

import (
	"testing"

	"github.com/switchover-gw/switchover/breaker"
)

func TestReasonOf(t *testing.T) {
	tests := []struct {
		to    breaker.State
		kind  breaker.Kind
		cause string
		want  string
	}{
		{breaker.Open, breaker.KindServerError, "2 failures in 30s, last 503", "5xx"},
		{breaker.Open, breaker.KindServerError, "probe failed: 503", "5xx"},
		{breaker.Open, breaker.KindThrottled, "throttled for 20s: 429", "429 quota"},
		{breaker.Open, breaker.KindHealthProbe, "health probe failed 3 times: 5xx", "health probe"},
		{breaker.Open, breaker.KindQuotaExhausted, "held open: insufficient_quota", "quota exhausted (insufficient_quota)"},
		{breaker.Open, breaker.KindTimeout, "probe failed: first_byte_timeout", "timeout"},
		{breaker.Open, breaker.KindConnection, "5 failures in 30s, last connect_error", "connection errors"},
		{breaker.Open, breaker.KindManual, "manual: forced open by an operator", "manual"},
		{breaker.Open, breaker.KindMisconfigured, "held open: misconfigured: 404", "breaker open"},
		{breaker.HalfOpen, breaker.KindTripEnded, "trip ended", "breaker half_open"},
		{breaker.HalfOpen, breaker.KindRetryAfter, "backend's retry-after elapsed, early probe", "breaker half_open"},
		{breaker.Closed, breaker.KindProbe, "probe answering", "recovered"},
		// The words of the cause decide nothing: only its kind does.
		{breaker.Open, breaker.KindUnknown, "manual 429 timeout last 5", "breaker open"},
	}
	for _, tc := range tests {
		got := reasonOf(breaker.Transition{Name: "weu", To: tc.to, Kind: tc.kind, Cause: tc.cause})
		if want := tc.want + " (weu: " + tc.cause + ")"; got != want {
			t.Errorf("reasonOf(%v, %v, %q) = %q, want %q", tc.to, tc.kind, tc.cause, got, want)
		}
	}
}
