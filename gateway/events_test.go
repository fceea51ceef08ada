package gateway

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/breaker"
)

func TestTransitionOrderDropsLateTransitions(t *testing.T) {
	tr := func(name string, seq uint64) breaker.Transition { return breaker.Transition{Name: name, Seq: seq} }
	var o transitionOrder
	steps := []struct {
		name  string
		t     breaker.Transition
		forg  string // forget this backend first
		fresh bool
	}{
		{"first", tr("weu", 2), "", true},
		{"older arrives late", tr("weu", 1), "", false},
		{"same again", tr("weu", 2), "", false},
		{"newer", tr("weu", 3), "", true},
		{"other backend", tr("sec", 1), "", true},
		{"not numbered", tr("weu", 0), "", true},
		{"after forget, a new breaker", tr("weu", 1), "weu", true},
	}
	for _, s := range steps {
		if s.forg != "" {
			o.forget(s.forg)
		}
		if got := o.fresh(s.t); got != s.fresh {
			t.Errorf("%s: fresh(%s, %d) = %v, want %v", s.name, s.t.Name, s.t.Seq, got, s.fresh)
		}
	}
}

func TestReasonOf(t *testing.T) {
	tests := []struct {
		to    breaker.State
		cause string
		want  string
	}{
		{breaker.Open, "2 failures in 30s, last 503", "5xx"},
		{breaker.Open, "probe failed: 503", "5xx"},
		{breaker.Open, "throttled for 20s: 429", "429 quota"},
		{breaker.Open, "health probe failed 3 times: 5xx", "health probe"},
		{breaker.Open, "held open: insufficient_quota", "quota exhausted (insufficient_quota)"},
		{breaker.Open, "probe failed: first_byte_timeout", "timeout"},
		{breaker.HalfOpen, "trip ended", "breaker half_open"},
		{breaker.HalfOpen, "backend's retry-after elapsed, early probe", "breaker half_open"},
		{breaker.Closed, "probe answering", "recovered"},
	}
	for _, tc := range tests {
		got := reasonOf(breaker.Transition{Name: "weu", To: tc.to, Cause: tc.cause})
		if !strings.HasPrefix(got, tc.want+" (weu: ") {
			t.Errorf("reasonOf(%v, %q) = %q, want %q first", tc.to, tc.cause, got, tc.want)
		}
	}
}
