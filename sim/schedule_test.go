package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestScheduledAt(t *testing.T) {
	entries := []ScheduledFault{
		{Deployment: "a", From: 30 * time.Second, To: 90 * time.Second, Fault: Fault{Mode: FaultDown}},
		{Deployment: "a", From: 60 * time.Second, Fault: Fault{Mode: FaultSlow, Factor: 3}},
	}
	tests := []struct {
		name string
		at   time.Duration
		want FaultMode
	}{
		{"before any", 29 * time.Second, ""},
		{"start is inclusive", 30 * time.Second, FaultDown},
		{"first listed wins an overlap", 75 * time.Second, FaultDown},
		{"end is exclusive", 90 * time.Second, FaultSlow},
		{"open end", 10 * time.Hour, FaultSlow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := scheduledAt(entries, tc.at)
			mode := FaultMode("")
			if got != nil {
				mode = got.Mode
			}
			if mode != tc.want {
				t.Errorf("at %s: %q, want %q", tc.at, mode, tc.want)
			}
		})
	}
}

func TestScheduleOnFakeClock(t *testing.T) {
	clock := fakeclock.New()
	cfg := Config{Seed: 1, Deployments: []Deployment{{Name: "westeurope"}, {Name: "uksouth"}},
		Schedule: []ScheduledFault{{Deployment: "westeurope", From: 30 * time.Second, To: 90 * time.Second, Fault: Fault{Mode: FaultDown}}}}
	s := startSim(t, cfg, WithClock(clock))
	we, uk := s.Deployments()[0], s.Deployments()[1]
	steps := []struct {
		name    string
		advance time.Duration
		ep      Endpoint
		want    int
	}{
		{"t=0 up", 0, we, 200},
		{"t=29.999s up", 29999 * time.Millisecond, we, 200},
		{"t=30s down", time.Millisecond, we, 503},
		{"other region unaffected", 0, uk, 200},
		{"t=89.999s still down", 59999 * time.Millisecond, we, 503},
		{"t=90s back up", time.Millisecond, we, 200},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		resp, b := chat(t, st.ep, "hi", 3)
		if resp.StatusCode != st.want {
			t.Fatalf("%s: %d %s, want %d", st.name, resp.StatusCode, b, st.want)
		}
	}
}

func TestRunTimeFaultOverridesSchedule(t *testing.T) {
	clock := fakeclock.New()
	cfg := one(Azure, nil)
	cfg.Schedule = []ScheduledFault{{Deployment: "d1", Fault: Fault{Mode: FaultError500}}}
	s := startSim(t, cfg, WithClock(clock))
	ep := s.Deployments()[0]
	check := func(step string, want int) {
		t.Helper()
		if resp, _ := chat(t, ep, "hi", 3); resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", step, resp.StatusCode, want)
		}
	}
	check("scheduled error500", 500)
	setFaultHTTP(t, s, "d1", `{"mode":"down"}`)
	check("run-time down wins", 503)
	st, _ := s.Fault("d1")
	if st.Scheduled == nil || st.Scheduled.Mode != FaultError500 || st.Effective.Mode != FaultDown {
		t.Errorf("state = %+v", st)
	}
	resp, _ := do(t, http.MethodDelete, s.ControlURL()+"/deployments/d1/fault", "", nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	check("schedule applies again", 500)
}
