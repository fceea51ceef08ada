package route_test

import (
	"testing"

	"github.com/switchover-gw/switchover/breaker"
)

// Each failure an attempt meets trips the breaker with its kind, which is
// what the fleet and the notifications decide on (never the cause's words).
func TestTripsCarryTheFailuresKind(t *testing.T) {
	tests := []struct {
		name string
		step step
		want breaker.Kind
	}{
		{"429", status(429, "Retry-After", "7"), breaker.KindThrottled},
		{"503", status(503), breaker.KindServerError},
		{"404 misconfigured", raw(404, `{"error":{"code":"DeploymentNotFound","message":"Resource not found"}}`), breaker.KindMisconfigured},
		{"insufficient_quota", raw(429, `{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}`), breaker.KindQuotaExhausted},
		{"reset", reset, breaker.KindConnection},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{tc.step}, settings: breaker.Settings{Failures: 1, FollowRetryAfter: true}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			e.do(t, chatBody)
			e.events.mu.Lock()
			defer e.events.mu.Unlock()
			if len(e.events.trs) == 0 {
				t.Fatal("no transition")
			}
			if tr := e.events.trs[0]; tr.Name != "weu" || tr.To != breaker.Open || tr.Kind != tc.want {
				t.Fatalf("transition %+v; want weu open with kind %v", tr, tc.want)
			}
			if s := e.backends["weu"].Breaker.Snapshot(); s.Kind != tc.want {
				t.Fatalf("snapshot kind %v, want %v", s.Kind, tc.want)
			}
		})
	}
}
