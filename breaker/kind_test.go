package breaker

import (
	"encoding/json"
	"testing"
	"time"
)

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for k := KindUnknown; k < kindCount; k++ {
		raw, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back Kind
		if err := json.Unmarshal(raw, &back); err != nil || back != k {
			t.Errorf("%v: marshalled %s, read back %v (%v)", k, raw, back, err)
		}
		if n := k.String(); n == "" || seen[n] {
			t.Errorf("kind %d has the name %q, empty or taken", k, n)
		}
		seen[k.String()] = true
	}
	var k Kind = KindThrottled
	if err := json.Unmarshal([]byte(`"from_a_newer_replica"`), &k); err != nil || k != KindUnknown {
		t.Errorf("an unknown name: %v, %v; want KindUnknown and no error", k, err)
	}
	if !KindThrottled.Failure() || !KindCredential.Failure() || KindManual.Failure() || KindUnknown.Failure() || KindTripEnded.Failure() {
		t.Error("Failure() misclassifies")
	}
}

// The transitions say what caused them and describe the open state, so that
// an observer (the fleet) never reads a Snapshot that may be newer.
func TestTransitionsCarryKindAndOpenState(t *testing.T) {
	b, clk, rec := newTest(Settings{Failures: 1, Trip: time.Minute, FollowRetryAfter: true})
	call(t, b, Outcome{Result: Failure, Kind: KindThrottled, Throttled: true, RetryAfter: 20 * time.Second, Class: "stream", Cause: "429"})
	tr := rec.last(t)
	s := b.Snapshot()
	if tr.Kind != KindThrottled || !tr.Throttled || !tr.NoProbe || tr.Class != "stream" || !tr.RetryAt.Equal(s.RetryAt) || tr.RetryAt.IsZero() || tr.Probe {
		t.Fatalf("throttled trip: %+v; snapshot %+v", tr, s)
	}
	if s.Kind != KindThrottled || !s.NoProbe {
		t.Fatalf("snapshot of a throttled trip: %+v", s)
	}
	clk.Advance(20 * time.Second)
	if tr := rec.last(t); tr.To != Closed || tr.Kind != KindRetryAfter || tr.Probe {
		t.Fatalf("end of a followed Retry-After: %+v", tr)
	}

	b, clk, rec = newTest(Settings{Failures: 1, Trip: time.Minute})
	call(t, b, Outcome{Result: Failure, Kind: KindServerError, Cause: "503"})
	if tr := rec.last(t); tr.Kind != KindServerError || tr.NoProbe || tr.Throttled || !tr.RetryAt.IsZero() {
		t.Fatalf("5xx trip: %+v", tr)
	}
	clk.Advance(time.Minute)
	if tr := rec.last(t); tr.To != HalfOpen || tr.Kind != KindTripEnded {
		t.Fatalf("trip end: %+v", tr)
	}
	if s := b.Snapshot(); s.Kind != KindServerError {
		t.Fatalf("half-open keeps the kind that opened it: %+v", s)
	}
	call(t, b, Outcome{Result: Failure, Kind: KindTimeout, Cause: "first_byte_timeout"})
	if tr := rec.last(t); tr.To != Open || tr.Kind != KindTimeout || !tr.Probe {
		t.Fatalf("failed probe: %+v", tr)
	}
	clk.Advance(time.Minute)
	call(t, b, okOut)
	if tr := rec.last(t); tr.To != Closed || tr.Kind != KindProbe || !tr.Probe {
		t.Fatalf("probe succeeded: %+v", tr)
	}
	if s := b.Snapshot(); s.Kind != KindUnknown {
		t.Fatalf("closed: %+v", s)
	}

	b.Force(Open, time.Time{}, KindManual, "manual: forced open")
	if tr := rec.last(t); tr.Kind != KindManual || tr.Probe {
		t.Fatalf("forced: %+v", tr)
	}
	b.Adopt(Snapshot{State: Open, Until: clk.Now().Add(time.Hour), RetryAt: clk.Now().Add(time.Hour), Throttled: true}, KindThrottled, "fleet")
	if tr := rec.last(t); tr.Kind != KindThrottled || !tr.Adopted || !tr.Throttled || tr.RetryAt.IsZero() {
		t.Fatalf("adopted: %+v", tr)
	}
}
