package drill

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/pgtest"
	"github.com/switchover-gw/switchover/internal/redistest"
)

// tiny is a drill small and short enough for a unit test. Its figures
// mean nothing: the tests check the wiring and the report's shape only.
func tiny(only ...string) Options {
	return Options{Only: only, Budget: 0.002, Callers: 2, Burst: 3, LargeChars: 400,
		Latency: time.Millisecond, MaxRequests: 60, RunTimeout: 20 * time.Second,
		RPM: 600, Window: 300 * time.Millisecond, Interval: 50 * time.Millisecond}
}

// redisServer is a redistest server as the drill's Redis.
type redisServer struct{ *redistest.Server }

func (s redisServer) Restart() error { s.Server.Restart(); return nil }

func TestDrillOnSQLiteReportsEveryBudgetRun(t *testing.T) {
	// Mostly waiting on servers and timeouts: beside the package's others.
	t.Parallel()
	rep, err := Run(t.Context(), tiny(Burst, Even))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ scenario, sent string }{
		{Burst, "3 small + 3×400 chars"}, {Burst, "3 small + 3×100 chars"}, {Burst + " (team)", "3 small + 3×100 chars"},
		{Even, "small until refused"},
	}
	if len(rep.Budget) != len(want) {
		t.Fatalf("%d budget rows, want %d: %+v", len(rep.Budget), len(want), rep.Budget)
	}
	for i, w := range want {
		r := rep.Budget[i]
		if r.Scenario != w.scenario || r.Sent != w.sent || r.Store != "sqlite" || r.Replicas != 1 || r.Budget != 0.002 {
			t.Errorf("row %d: %+v, want %s on sqlite, %q", i, r, w.scenario, w.sent)
		}
		if n := r.Admitted + r.Refused + r.Errors; w.scenario != Even && n != 3+3 {
			t.Errorf("row %d counts %d answers, want the 6 sent", i, n)
		}
	}
	if len(rep.Rollout) != 0 {
		t.Errorf("rollout rows without the rollout: %+v", rep.Rollout)
	}
	if len(rep.Skipped) != 2 || !strings.Contains(rep.Skipped[0], "PostgreSQL") {
		t.Errorf("skipped %q, want the two PostgreSQL runs", rep.Skipped)
	}
	var text, md bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "scenario") || strings.Count(out, "sqlite") != 4 || strings.Contains(out, "phase") {
			t.Errorf("report:\n%s", out)
		}
	}
}

func TestDrillFleetRunsOnPostgresAndRedis(t *testing.T) {
	// Mostly waiting on servers and timeouts: beside the package's others.
	t.Parallel()
	o := tiny(Replicas, Rollout)
	o.Postgres = pgtest.Start(t)
	o.Redis = redisServer{redistest.StartServer(t)}
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Budget {
		got = append(got, fmt.Sprintf("%s %s×%d", r.Scenario, r.Store, r.Replicas))
		if r.Callers != 2*r.Replicas {
			t.Errorf("%+v: want 2 callers a replica", r)
		}
		if r.Admitted == 0 || !r.Recorded {
			t.Errorf("%+v: want requests admitted and recorded", r)
		}
	}
	want := "replicas postgres×2,replicas postgres×3,replicas (org) postgres×3,replicas (pool) postgres×3,replicas (end user) postgres×3," +
		"replicas postgres+redis×2,replicas postgres+redis×3,replicas (org) postgres+redis×3,replicas (pool) postgres+redis×3,replicas (end user) postgres+redis×3"
	if strings.Join(got, ",") != want {
		t.Errorf("replicas runs %q, want %q", got, want)
	}
	phases := []struct {
		replicas string
		allowed  float64
	}{{"gw-a,gw-b,gw-c", 3 + 100}, {"gw-a,gw-b,gw-d", 3}, {"gw-a,gw-b", 3}, {"gw-a,gw-b,gw-e", 3}, {"gw-a,gw-b,gw-e", 3}}
	if len(rep.Rollout) != len(phases) {
		t.Fatalf("%d rollout rows, want %d: %+v", len(rep.Rollout), len(phases), rep.Rollout)
	}
	for i, p := range phases {
		r := rep.Rollout[i]
		if r.Replicas != p.replicas || r.Allowed != p.allowed || r.Window != o.Window {
			t.Errorf("phase %d: %+v, want replicas %s allowing %v", i, r, p.replicas, p.allowed)
		}
	}
	if len(rep.Skipped) != 0 {
		t.Errorf("skipped %q", rep.Skipped)
	}
}

func TestDrillSkipsTheRestartOfAGivenRedis(t *testing.T) {
	// Mostly waiting on servers and timeouts: beside the package's others.
	t.Parallel()
	o := tiny(Rollout)
	o.Redis = ExternalRedis(redistest.Start(t))
	rep, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rollout) != 4 || strings.Contains(rep.Rollout[3].Phase, "Redis") {
		t.Errorf("rollout rows %+v, want the four before the restart", rep.Rollout)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], ErrNoRestart.Error()) {
		t.Errorf("skipped %q", rep.Skipped)
	}
}
