package metrics

import "testing"

func TestCodeClass(t *testing.T) {
	for status, want := range map[int]string{0: "canceled", 200: "2xx", 201: "2xx", 400: "4xx", 429: "429", 500: "5xx", 503: "5xx", 999: "other"} {
		if got := CodeClass(status); got != want {
			t.Errorf("CodeClass(%d) = %q, want %q", status, got, want)
		}
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
