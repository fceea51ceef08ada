package metrics

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

func TestCodeClass(t *testing.T) {
	for status, want := range map[int]string{0: "canceled", 99: "other", 100: "1xx", 200: "2xx", 201: "2xx", 400: "4xx", 429: "429", 500: "5xx", 503: "5xx", 599: "5xx", 600: "other", 999: "other"} {
		if got := CodeClass(status); got != want {
			t.Errorf("CodeClass(%d) = %q, want %q", status, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { CodeClass(503) }); n != 0 {
		t.Errorf("CodeClass allocates %v times, want 0: it runs for every attempt", n)
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.Request("p", "x", 200, 0, 0)
	mfs, err := b.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchover_requests_total" && len(mf.GetMetric()) > 0 {
			t.Fatal("a request recorded in one registry shows in another")
		}
	}
}

func TestNames(t *testing.T) {
	names := New().Names()
	want := map[string]bool{"switchover_requests_total": false, "switchover_failovers_total": false, "switchover_probe_up": false, "switchover_breaker_state": false}
	for _, n := range names {
		if _, ok := want[n]; ok {
			want[n] = true
		}
	}
	for n, seen := range want {
		if !seen {
			t.Errorf("Names lacks %s (got %v)", n, names)
		}
	}
	if len(names) < 19 {
		t.Errorf("%d names", len(names))
	}
}

func gauge(t *testing.T, m *Metrics, backend string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		out[st.String()] = testutil.ToFloat64(m.breakerState.WithLabelValues(backend, st.String()))
	}
	return out
}

func wantGauge(t *testing.T, m *Metrics, backend string, want breaker.State) {
	t.Helper()
	g := gauge(t, m, backend)
	for st, v := range g {
		if (st == want.String()) != (v == 1) || (v != 0 && v != 1) {
			t.Fatalf("switchover_breaker_state{backend=%q} = %v, want 1 for %s only", backend, g, want)
		}
	}
}

// TestBreakerStateGaugeNotStuckOnOpenWhenTransitionsArriveOutOfOrder is
// the regression test for the gauge stuck on open while the breaker was
// half-open: transitions are emitted outside the breaker's lock, so the
// trip's end can reach the collector before the opening.
func TestBreakerStateGaugeNotStuckOnOpenWhenTransitionsArriveOutOfOrder(t *testing.T) {
	// Real transitions: closed > open, the trip ends (open > half_open).
	clk := fakeclock.New()
	var evs []breaker.Transition
	b := breaker.New("weu", breaker.Settings{Failures: 1, Trip: time.Minute, Clock: clk,
		OnTransition: func(tr breaker.Transition) { evs = append(evs, tr) }})
	done, _ := b.Allow()
	done(breaker.Outcome{Result: breaker.Failure, Cause: "503"})
	clk.Advance(time.Minute)
	if len(evs) != 2 || evs[1].To != breaker.HalfOpen {
		t.Fatalf("transitions %+v", evs)
	}
	open, halfOpen := evs[0], evs[1]
	tests := []struct {
		name  string
		order []breaker.Transition
	}{
		{"in order", []breaker.Transition{open, halfOpen}},
		{"out of order", []breaker.Transition{halfOpen, open}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.AddBackend("weu", "westeurope", "azure")
			for _, tr := range tc.order {
				m.Transition(tr)
			}
			wantGauge(t, m, "weu", breaker.HalfOpen)
			// Each transition is counted, whatever its order.
			for _, tr := range tc.order {
				if n := testutil.ToFloat64(m.breakerTransitions.WithLabelValues("weu", tr.From.String(), tr.To.String())); n != 1 {
					t.Errorf("transitions{from=%s,to=%s} = %v, want 1", tr.From, tr.To, n)
				}
			}
		})
	}
}

// TestBreakerStateIsClosedFromRegistration is the regression test for the
// benched alert firing for every healthy backend at start: the state gauge
// read 0 for every state until a backend's first transition.
func TestBreakerStateIsClosedFromRegistration(t *testing.T) {
	m := New()
	m.AddBackend("weu", "westeurope", "azure")
	m.AddBackend("sec", "swedencentral", "azure")
	wantGauge(t, m, "weu", breaker.Closed)
	wantGauge(t, m, "sec", breaker.Closed)

	m.Transition(breaker.Transition{Name: "weu", From: breaker.Closed, To: breaker.Open, Seq: 4})
	m.AddBackend("weu", "westeurope", "azure") // a reload keeps the state
	wantGauge(t, m, "weu", breaker.Open)
	m.Transition(breaker.Transition{Name: "weu", From: breaker.Closed, To: breaker.Open, Seq: 3})
	m.Transition(breaker.Transition{Name: "weu", From: breaker.Open, To: breaker.HalfOpen, Seq: 5})
	wantGauge(t, m, "weu", breaker.HalfOpen)

	// Removed and added again: closed, and a new breaker's first
	// transition (Seq 1) applies.
	m.RemoveBackend("weu")
	m.AddBackend("weu", "westeurope", "azure")
	wantGauge(t, m, "weu", breaker.Closed)
	m.Transition(breaker.Transition{Name: "weu", From: breaker.Closed, To: breaker.Open, Seq: 1})
	wantGauge(t, m, "weu", breaker.Open)
}

// TestChangingLatencyBucketsLeavesTheHistograms is the regression test for
// the shared buckets: LatencyBuckets was an exported variable that every
// latency histogram used as its own bounds (Prometheus does not copy
// them), so a caller changing it changed the buckets of every series made
// afterwards, in every registry.
func TestChangingLatencyBucketsLeavesTheHistograms(t *testing.T) {
	want := []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}
	m := New()
	LatencyBuckets()[0] = 99
	m.Request("p", "b", 200, 10*time.Millisecond, 10*time.Millisecond)
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchover_request_duration_seconds" {
			continue
		}
		var got []float64
		for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("buckets %v, want %v", got, want)
		}
		return
	}
	t.Fatal("no switchover_request_duration_seconds")
}

// TestActiveDropsRemovedMembersOnly: a reload records every pool's
// active set; a member the reload took out of a pool loses its series,
// the others and other pools keep theirs (the removed members were
// found by a partial match over every pool's series, O(pools²) per
// reload with 10,000 pools), and a removed pool loses all of its own.
func TestActiveDropsRemovedMembersOnly(t *testing.T) {
	m := New()
	m.Active("chat", []string{"weu", "sec"}, map[string]bool{"weu": true})
	m.Active("other", []string{"weu"}, map[string]bool{"weu": true})
	m.Active("chat", []string{"weu"}, map[string]bool{"weu": true})
	if n := testutil.CollectAndCount(m.poolActive); n != 2 {
		t.Errorf("%d series after sec left chat, want 2 (chat/weu, other/weu)", n)
	}
	if v := testutil.ToFloat64(m.poolActive.WithLabelValues("chat", "weu")); v != 1 {
		t.Errorf("chat/weu %v, want 1", v)
	}
	m.RemovePool("chat")
	if n := testutil.CollectAndCount(m.poolActive); n != 1 {
		t.Errorf("%d series after chat was removed, want 1 (other/weu)", n)
	}
}

// TestAddBackendReplacesItsInfoOnly: a reload that moves a backend to
// another region leaves one info series for it, and other backends'
// series alone (the old one was found by a partial match over every
// backend's series, O(backends²) per reload).
func TestAddBackendReplacesItsInfoOnly(t *testing.T) {
	m := New()
	m.AddBackend("weu", "westeurope", "azure")
	m.AddBackend("sec", "swedencentral", "azure")
	m.AddBackend("weu", "francecentral", "azure")
	m.AddBackend("sec", "swedencentral", "azure")
	if n := testutil.CollectAndCount(m.backendInfo); n != 2 {
		t.Errorf("%d info series, want 2", n)
	}
	if v := testutil.ToFloat64(m.backendInfo.WithLabelValues("weu", "francecentral", "azure")); v != 1 {
		t.Errorf("weu's new info %v, want 1", v)
	}
	m.RemoveBackend("weu")
	m.AddBackend("weu", "westeurope", "openai")
	if n := testutil.CollectAndCount(m.backendInfo); n != 2 {
		t.Errorf("%d info series after weu was removed and added again, want 2", n)
	}
}

// TestEngineChecksCounted: the engine's own health checks of a slow
// backend (route.EventProbe) are counted by result in
// switchover_backend_checks_total, apart from the configured probes'
// switchover_probes_total. (They were counted nowhere.)
func TestEngineChecksCounted(t *testing.T) {
	m := New()
	weu := &route.Backend{Name: "weu"}
	m.Observe(route.Event{Kind: route.EventProbe, Backend: weu})
	m.Observe(route.Event{Kind: route.EventProbe, Backend: weu, Err: errors.New("no answer")})
	m.Observe(route.Event{Kind: route.EventProbe, Backend: weu, Err: errors.New("no answer")})
	if v := testutil.ToFloat64(m.checks.WithLabelValues("weu", "answered")); v != 1 {
		t.Errorf("answered %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.checks.WithLabelValues("weu", "failed")); v != 2 {
		t.Errorf("failed %v, want 2", v)
	}
	if n := testutil.CollectAndCount(m.probes); n != 0 {
		t.Errorf("%d probe series, want none: the engine's checks are not the probers'", n)
	}
}
