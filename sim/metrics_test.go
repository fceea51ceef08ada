package sim

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Quota = Quota{RPM: 6} }))
	ep := s.Deployments()[0]
	chat(t, ep, "hello", 4) // ok, 6 tokens
	chat(t, ep, "hello", 4) // refused
	if err := s.SetFault("d1", Fault{Mode: FaultDown}); err != nil {
		t.Fatal(err)
	}
	chat(t, ep, "hello", 4) // error
	want := `
# HELP switchover_sim_requests_total Requests handled by a simulated deployment, by result (ok, refused, error, filtered, rejected, abandoned).
# TYPE switchover_sim_requests_total counter
switchover_sim_requests_total{deployment="d1",region="testregion",result="abandoned"} 0
switchover_sim_requests_total{deployment="d1",region="testregion",result="error"} 1
switchover_sim_requests_total{deployment="d1",region="testregion",result="filtered"} 0
switchover_sim_requests_total{deployment="d1",region="testregion",result="ok"} 1
switchover_sim_requests_total{deployment="d1",region="testregion",result="refused"} 1
switchover_sim_requests_total{deployment="d1",region="testregion",result="rejected"} 0
# HELP switchover_sim_tokens_total Estimated tokens charged against a simulated deployment's quota.
# TYPE switchover_sim_tokens_total counter
switchover_sim_tokens_total{deployment="d1",region="testregion"} 6
`
	if err := testutil.CollectAndCompare(s.Collector(), strings.NewReader(want), "switchover_sim_requests_total", "switchover_sim_tokens_total"); err != nil {
		t.Error(err)
	}
	resp, b := do(t, http.MethodGet, s.ControlURL()+"/metrics", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET metrics: %d", resp.StatusCode)
	}
	for _, line := range []string{
		`switchover_sim_requests_total{deployment="d1",region="testregion",result="ok"} 1`,
		`switchover_sim_fault{deployment="d1",mode="down",region="testregion"} 1`,
		`switchover_sim_fault{deployment="d1",mode="none",region="testregion"} 0`,
		`switchover_sim_in_flight{deployment="d1",region="testregion"} 0`,
	} {
		if !strings.Contains(string(b), line) {
			t.Errorf("/_sim/metrics lacks %s", line)
		}
	}
	if strings.Contains(string(b), "go_goroutines") {
		t.Error("sim metrics include the process collectors; the registry should be the sim's own")
	}
	// The collector can join another registry (the gateway's).
	reg := prometheus.NewRegistry()
	if err := reg.Register(s.Collector()); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "switchover_sim_requests_total"); err != nil || n != 6 {
		t.Errorf("gathered %d series, %v; want 6", n, err)
	}
}

func TestMetricsCountOverloadedAnthropic(t *testing.T) {
	s := startSim(t, oneAnthropic(func(d *Deployment) { d.Quota = Quota{RPM: 6} }))
	ep := s.Deployments()[0]
	url, body, hdr := flavourRequest(ep, false)
	do(t, http.MethodPost, url, body, hdr) // ok
	do(t, http.MethodPost, url, body, hdr) // refused
	if err := s.SetFault("d1", Fault{Mode: FaultOverloaded}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := do(t, http.MethodPost, url, body, hdr); resp.StatusCode != 529 {
		t.Fatalf("overloaded: %d", resp.StatusCode)
	}
	_, b := do(t, http.MethodGet, s.ControlURL()+"/metrics", "", nil)
	for _, line := range []string{
		`switchover_sim_requests_total{deployment="d1",region="testregion",result="ok"} 1`,
		`switchover_sim_requests_total{deployment="d1",region="testregion",result="refused"} 1`,
		`switchover_sim_requests_total{deployment="d1",region="testregion",result="error"} 1`,
		`switchover_sim_fault{deployment="d1",mode="overloaded",region="testregion"} 1`,
		`switchover_sim_fault{deployment="d1",mode="down",region="testregion"} 0`,
	} {
		if !strings.Contains(string(b), line) {
			t.Errorf("/_sim/metrics lacks %s", line)
		}
	}
}
