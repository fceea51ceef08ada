package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
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

// TestBrownoutProbedWhenItsPoolIsShort: a backend benched for a brownout
// is probed while its pool is short of members (here every other member
// benched), and one passing probe ends its trip, in its slow start: a
// region answering two calls in three is better than none. (A soak of the
// README's config failed fifty streams at once: the region they waited on
// was found unresponsive, and the other, benched for a brownout a minute
// before, took one of them as its half-open probe.)
func TestBrownoutProbedWhenItsPoolIsShort(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Answer("weu"))
	br := g.Backend("weu").Breaker.(*breaker.Breaker)
	br.Adopt(breaker.Snapshot{State: breaker.Open, Until: g.now().Add(time.Minute), Level: 1, Partial: true}, breaker.KindServerError, "5 failures in 30s")
	if err := g.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := p.notYet(); d != time.Second {
		t.Fatalf("probe of a brownout its pool waits on due in %v, want 1s", d)
	}
	g.opts.Clock.(*fakeclock.Clock).Advance(time.Second)
	p.tick(context.Background())
	if n := weu.Calls(); n != 1 {
		t.Fatalf("%d probe calls to a brownout its pool waits on, want 1", n)
	}
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
		t.Fatalf("after a passing probe: %+v, want closed in its slow start", s)
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

// TestRecoveryProbesOfAnEmptyPoolComeEverySecond: while a pool of the
// benched backend has no other member that would take a call, its
// recovery probes come every second, failed or not, instead of
// recovery_interval and twice that after a failed one: every caller of the
// pool is refused until one comes back. (A game day of two regions taking
// turns to fail lost most of each turn to the 5-10 s wait.) Once another
// member takes calls again, the usual waits return.
func TestRecoveryProbesOfAnEmptyPoolComeEverySecond(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Status(500))
	clk := g.opts.Clock.(*fakeclock.Clock)
	if err := g.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	send(t, g) // weu fails and is benched: the pool has no member left
	if !p.awaited() {
		t.Fatal("a pool with every member benched does not wait on weu")
	}
	if d := p.notYet(); d != time.Second {
		t.Fatalf("first probe due in %v, want 1s", d)
	}
	clk.Advance(time.Second)
	if d := p.notYet(); d != 0 {
		t.Fatalf("first probe due in %v a second later, want now", d)
	}
	calls := weu.Calls()
	p.tick(context.Background())
	if weu.Calls() != calls+1 {
		t.Fatalf("the due probe made %d calls", weu.Calls()-calls)
	}
	if d := p.notYet(); d != time.Second {
		t.Fatalf("next probe due in %v after a failed one, want 1s", d)
	}
	// sec takes calls again and answers one: the pool no longer waits on
	// weu.
	if err := g.ForceBreaker("sec", false, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := send(t, g); b != "sec" {
		t.Fatalf("served by %q, want sec", b)
	}
	if p.awaited() {
		t.Fatal("the pool waits on weu with sec taking calls")
	}
	if d := p.notYet(); d != 10*time.Second {
		t.Fatalf("next probe due in %v with sec back, want 10s (twice recovery_interval after a failed probe)", d)
	}
	// A backend refused with a 4xx (a revoked key) keeps its minute even
	// when its pool waits on it.
	g2, _, p2 := recoveryEnv(t, upstreamtest.Status(401))
	if err := g2.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	send(t, g2)
	g2.opts.Clock.(*fakeclock.Clock).Advance(time.Second)
	p2.tick(context.Background())
	if d := p2.notYet(); d != misconfiguredProbeEvery {
		t.Fatalf("a revoked key's next probe due in %v, want %v", d, misconfiguredProbeEvery)
	}
}

// TestPassingProbeEndsAFlappersTripWhenItsPoolWaits: a backend benched
// again after it came back owes several passing probes in a row while its
// pool has others to call; when its pool has no one else (every other
// member benched), one pass ends its trip, in its slow start: a backend
// answering its probes is better than refusing every call. (A game day of
// two regions taking turns to fail refused calls for seconds while the
// one back had passed its probe and waited for the next.)
func TestPassingProbeEndsAFlappersTripWhenItsPoolWaits(t *testing.T) {
	g, _, p := recoveryEnv(t, upstreamtest.Answer("weu"))
	br := g.Backend("weu").Breaker
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	p.tick(context.Background()) // passes: closed
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark again")
	if s := br.Snapshot(); s.PassesNeeded < 2 {
		t.Fatalf("benched again: %+v, want more than one pass needed", s)
	}
	if err := g.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	p.tick(context.Background())
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
		t.Fatalf("after one passing probe with the pool waiting: %+v, want closed in its slow start", s)
	}
	if b, _ := send(t, g); b != "weu" {
		t.Fatalf("served by %q, want weu", b)
	}
}

// TestShortPoolWakesItsBenchedMembersProbe: when the engine finds a pool
// short of members (route.EventShort: here a request refused with every
// member benched), the prober of a benched member probes at once, not at
// its next round on the clock.
func TestShortPoolWakesItsBenchedMembersProbe(t *testing.T) {
	g, weu, _ := probeGateway(t, "", upstreamtest.Status(500), upstreamtest.Answer("weu"))
	clk := g.opts.Clock.(*fakeclock.Clock)
	if b, _ := send(t, g); b != "sec" { // weu fails and is benched
		t.Fatalf("served by %q, want sec", b)
	}
	if err := g.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	// A second on: a probe of weu is due, its pool having no one else, but
	// its prober sleeps until its round (recovery_interval, 5 s).
	clk.Advance(time.Second)
	if n := weu.Calls(); n != 1 {
		t.Fatalf("%d calls to weu before the pool was found short, want 1", n)
	}
	send(t, g) // refused: the engine tells the pool is short
	poll.Until(t, 10*time.Second, func() bool { return weu.Calls() == 2 }, func() string {
		return fmt.Sprintf("%d calls to weu, want its probe", weu.Calls())
	})
	poll.Until(t, 10*time.Second, func() bool { return g.Backend("weu").Breaker.Snapshot().State == breaker.Closed }, func() string {
		return fmt.Sprintf("weu %+v after its probe passed", g.Backend("weu").Breaker.Snapshot())
	})
}

// TestRecoveryProbeSentAgainWhenItHangsAndThePoolWaits: a recovery probe
// that has waited about its backend's usual answer time while the pool
// has no one else to call is sent again beside itself, and the first pass
// counts: a region back from the dark does not answer on the connection
// it dropped, and the pool should not wait out the probe's timeout.
func TestRecoveryProbeSentAgainWhenItHangsAndThePoolWaits(t *testing.T) {
	g, weu, p := recoveryEnv(t, upstreamtest.Status(500), upstreamtest.Hang, upstreamtest.Answer("weu"))
	clk := g.opts.Clock.(*fakeclock.Clock)
	send(t, g) // weu fails and is benched
	if err := g.ForceBreaker("sec", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Cancelled before the upstreams close, should the test fail with the
	// probe still hanging.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.recover(ctx)
	}()
	poll.Until(t, 10*time.Second, func() bool { return weu.Calls() == 2 }, func() string {
		return fmt.Sprintf("%d calls to weu, want the first probe", weu.Calls())
	})
	resend := max(g.Backend("weu").CheckTimeout()/resendShare, minResendAfter)
	guard, stop := context.WithTimeout(t.Context(), 10*time.Second) // a guard against a hang, not a timing assertion
	defer stop()
	if err := clk.BlockUntilTimer(guard, resend); err != nil {
		t.Fatalf("no timer to send the probe again: %v", err)
	}
	clk.Advance(resend)
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("the recovery probe did not end")
	}
	if n := weu.Calls(); n != 3 {
		t.Fatalf("%d calls to weu, want the hung probe sent again", n)
	}
	if s := g.Backend("weu").Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("weu %+v after the probe sent again passed", s)
	}

	// With sec taking calls the pool does not wait: the hung probe is not
	// sent again, and waits out its timeout.
	g2, weu2, p2 := recoveryEnv(t, upstreamtest.Status(500), upstreamtest.Hang, upstreamtest.Answer("weu"))
	clk2 := g2.opts.Clock.(*fakeclock.Clock)
	send(t, g2)
	ctx2, cancel2 := context.WithCancel(context.Background())
	t.Cleanup(cancel2)
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		p2.recover(ctx2)
	}()
	poll.Until(t, 10*time.Second, func() bool { return weu2.Calls() == 2 }, nil)
	timeout := g2.Backend("weu").CheckTimeout()
	if err := clk2.BlockUntilTimer(guard, timeout); err != nil {
		t.Fatal(err)
	}
	clk2.Advance(timeout)
	select {
	case <-done2:
	case <-time.After(10 * time.Second):
		t.Fatal("the recovery probe did not end at its timeout")
	}
	if n := weu2.Calls(); n != 2 {
		t.Fatalf("%d calls to weu with sec taking calls, want the one probe", n)
	}
}
