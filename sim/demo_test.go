package sim

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestDemoConfig(t *testing.T) {
	cfg := DemoConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		region string
		median time.Duration
	}{{"uksouth", 300 * time.Millisecond}, {"swedencentral", 365 * time.Millisecond}, {"westeurope", 480 * time.Millisecond}}
	if len(cfg.Deployments) != len(want) {
		t.Fatalf("%d deployments", len(cfg.Deployments))
	}
	widest := 0.0
	for i, d := range cfg.Deployments {
		if d.Region != want[i].region || d.Latency.Median != want[i].median || d.Flavour != Azure || d.Deployment != "chat-prod" || d.Key != "" || d.Quota.RPM != 60 || d.Quota.TPM == 0 {
			t.Errorf("deployment %d = %+v", i, d)
		}
		widest = max(widest, d.Latency.Spread)
	}
	if cfg.Deployments[2].Latency.Spread != widest {
		t.Error("westeurope should have the widest spread")
	}
	if q := quickConfig("uksouth,swedencentral,westeurope", Azure, DemoDeployment, "", DemoRPM, DemoTPM, time.Second); !sameDeployments(q.Deployments, cfg.Deployments) {
		t.Errorf("the CLI's default quick form differs from DemoConfig:\n%+v\n%+v", q.Deployments, cfg.Deployments)
	}
}

func sameDeployments(a, b []Deployment) bool {
	return reflect.DeepEqual(a, b)
}

func TestDemoTripsOnEleventhQuickRequest(t *testing.T) {
	s := startSim(t, DemoConfig())
	ep := s.Deployments()[0]
	for i := 1; i <= 11; i++ {
		resp, b := chat(t, ep, "hello", 0)
		want := http.StatusOK
		if i == 11 {
			want = http.StatusTooManyRequests
		}
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d %s, want %d", i, resp.StatusCode, b, want)
		}
	}
}
