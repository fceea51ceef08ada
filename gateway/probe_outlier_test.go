package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// TestRecoveryProbeLeavesABrownoutsTripAlone: a backend benched while it
// still answered most of its calls is not probed (one passing probe says
// little about a region that fails a third of its calls, and each probe is
// a call): its trip runs its course (issue 22: the first passing probe
// closed it within 1-10 s, nine times in 90 s).
func TestRecoveryProbeLeavesABrownoutsTripAlone(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Answer("weu"))
	br := g.Backend("weu").Breaker.(*breaker.Breaker)
	br.Adopt(breaker.Snapshot{State: breaker.Open, Until: g.now().Add(time.Minute), Level: 1, Partial: true}, breaker.KindServerError, "5 failures in 30s")
	p.tick(context.Background())
	if n := weu.Calls(); n != 0 {
		t.Fatalf("%d probe calls to a backend benched for a brownout, want 0", n)
	}
	if s := br.Snapshot(); s.State != breaker.Open {
		t.Fatalf("breaker %v, want still open", s.State)
	}
}

// TestRecoveryProbeNeedsAPassPerEjection: a backend benched again after it
// came back needs one passing probe in a row per ejection to come back
// early, and comes back in its slow start (issue 22: every dark spell of a
// flapping region cost the same).
func TestRecoveryProbeNeedsAPassPerEjection(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Answer("weu"))
	br := g.Backend("weu").Breaker
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	p.tick(context.Background())
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != 1 {
		t.Fatalf("after a first trip and a passing probe: %+v, want closed at its whole share", s)
	}
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark again")
	p.tick(context.Background())
	if s := br.Snapshot(); s.State != breaker.Open || s.Passes != 1 {
		t.Fatalf("after one passing probe of a second trip: %+v, want open with one pass", s)
	}
	p.tick(context.Background())
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
		t.Fatalf("after two: %+v, want closed in its slow start", s)
	}
	if n := weu.Calls(); n != 3 {
		t.Fatalf("%d probe calls, want 3", n)
	}
}

// TestRecoveryProbesWaitAndBackOff: the first recovery probe of a trip
// waits recovery_interval from its start, and after a failed one the next
// waits twice that: each probe of a dark region is a call it counts
// (issue 22: a 60 s outage cost about a dozen probes).
func TestRecoveryProbesWaitAndBackOff(t *testing.T) {
	g, _, p := recoveryEnv(t, upstreamtest.Status(500))
	clk := g.opts.Clock.(*fakeclock.Clock)
	send(t, g) // opens the breaker
	if d := p.notYet(); d != 5*time.Second {
		t.Fatalf("first probe due in %v, want recovery_interval 5s after the trip began", d)
	}
	clk.Advance(5 * time.Second)
	if d := p.notYet(); d != 0 {
		t.Fatalf("first probe due in %v after recovery_interval, want now", d)
	}
	p.tick(context.Background())
	if d := p.wait(); d != 10*time.Second {
		t.Fatalf("wait %v after a failed recovery probe, want 10s", d)
	}
}
