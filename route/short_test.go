package route_test

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// TestPoolShortWhenARequestRunsOutOfMembers: a request whose failure
// could have been retried but found no member to retry on (the other one
// benched) makes the pool Short and tells EventShort, at most once a
// second; the pool stays short until a request is answered or shortFor
// passes. (A game day of two regions taking turns to fail relayed each
// turn's first failures while the region that had come back waited, still
// benched, for its next recovery probe: the gateway probes a short pool's
// benched members at once.)
func TestPoolShortWhenARequestRunsOutOfMembers(t *testing.T) {
	var script []step
	for range 4 {
		script = append(script, status(500))
	}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: script},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	sec := e.backends["sec"].Breaker
	sec.Force(breaker.Open, e.clock.Now().Add(time.Hour), breaker.KindServerError, "benched")
	if e.pool.Short(e.clock.Now()) {
		t.Fatal("short with weu taking calls")
	}
	shorts := func() int { return len(e.events.kinds(route.EventShort)) }

	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 500 || len(rep.Attempts) != 1 {
		t.Fatalf("got %d after %d attempts, want weu's 500 relayed", resp.StatusCode, len(rep.Attempts))
	}
	if !e.pool.Short(e.clock.Now()) || shorts() != 1 {
		t.Fatalf("short %v, %d EventShort, after a 500 with no one to retry on; want short, told once", e.pool.Short(e.clock.Now()), shorts())
	}
	if ev := e.events.kinds(route.EventShort)[0]; ev.Pool != "chat-prod" {
		t.Fatalf("EventShort of pool %q", ev.Pool)
	}
	e.do(t, chatBody)
	if n := shorts(); n != 1 {
		t.Fatalf("%d EventShort within a second, want 1", n)
	}
	e.clock.Advance(time.Second)
	e.do(t, chatBody)
	if n := shorts(); n != 2 {
		t.Fatalf("%d EventShort a second later, want 2", n)
	}
	e.clock.Advance(5 * time.Second)
	if e.pool.Short(e.clock.Now()) {
		t.Fatal("still short 5 s after the last request that ran out")
	}

	// An answered request ends it at once.
	e.do(t, chatBody)
	if !e.pool.Short(e.clock.Now()) {
		t.Fatal("not short after a request ran out again")
	}
	sec.Force(breaker.Closed, time.Time{}, breaker.KindManual, "back")
	if resp, _, _ := e.do(t, chatBody); resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("answered by %q, want sec", resp.Header.Get(route.HeaderBackend))
	}
	if e.pool.Short(e.clock.Now()) {
		t.Fatal("still short after sec answered")
	}
}

// TestPoolShortWithEveryMemberBenched: a pool with no member that would
// take a call is Short, and a request it refuses tells EventShort.
func TestPoolShortWithEveryMemberBenched(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	for _, b := range e.backends {
		b.Breaker.Force(breaker.Open, e.clock.Now().Add(time.Hour), breaker.KindServerError, "benched")
	}
	if !e.pool.Short(e.clock.Now()) {
		t.Fatal("not short with every member benched")
	}
	if resp, rep, _ := e.do(t, chatBody); resp.StatusCode != 503 || len(rep.Attempts) != 0 {
		t.Fatalf("got %d after %d attempts, want 503 with none", resp.StatusCode, len(rep.Attempts))
	}
	if n := len(e.events.kinds(route.EventShort)); n != 1 {
		t.Fatalf("%d EventShort for a refused request, want 1", n)
	}
}

// TestPoolShortWhileItsLastMemberIsChecked: when the health check of a
// pool's last member taking calls begins (calls piled up waiting on it),
// the pool is Short and tells EventShort: the benched members are wanted
// back before the check ends and the waiting calls fail over.
func TestPoolShortWhileItsLastMemberIsChecked(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	e, weuUp := learnThenHangPool(t, clk)
	for range 10 {
		e.do(t, chatBody)
	}
	weuUp.learning.Store(false)
	e.backends["sec"].Breaker.Force(breaker.Open, clk.Now().Add(time.Hour), breaker.KindServerError, "benched")
	var calls []<-chan result
	for range 4 {
		calls = append(calls, e.goDo(ctx, chatBody))
		<-weuUp.arrived
	}
	if e.pool.Short(clk.Now()) || len(e.events.kinds(route.EventShort)) != 0 {
		t.Fatal("short before weu was suspected")
	}
	clk.Advance(3 * time.Second)
	calls = append(calls, e.goDo(ctx, chatBody)) // has the waiting calls judged
	select {
	case <-weuUp.checked:
	case <-ctx.Done():
		t.Fatal("no health check of weu")
	}
	if !e.pool.Short(clk.Now()) {
		t.Fatal("not short while its last member taking calls is checked")
	}
	if n := len(e.events.kinds(route.EventShort)); n != 1 {
		t.Fatalf("%d EventShort as weu's check began, want 1", n)
	}
	check := e.pool.CheckTimeout(e.backends["weu"])
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)
	for _, ch := range calls {
		await(t, ctx, ch)
	}
}

// holdEnv is a pool of weu, which answers 500 (retryable), and sec, benched
// for an hour; probed says whether something probes sec
// (Backend.ProbeInterval, as the gateway sets it).
func holdEnv(t *testing.T, probed bool) (*env, breaker.Interface) {
	t.Helper()
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(500)}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}, tune: func(b *route.Backend) {
			if probed {
				b.ProbeInterval = 5 * time.Second
			}
		}},
	)
	sec := e.backends["sec"].Breaker
	sec.Force(breaker.Open, e.clock.Now().Add(time.Hour), breaker.KindServerError, "benched")
	return e, sec
}

// TestRequestHeldWhileItsShortPoolsBenchedMemberIsProbed: weu's 500 finds
// no member to retry on, sec being benched; since sec is probed (and the
// gateway probes a short pool's benched members at once), the request
// waits for it instead of relaying the 500, and is answered by sec as
// soon as its probe ends the trip. (Regions taking turns to fail relayed
// each turn's first failures in the half second the probe took.)
func TestRequestHeldWhileItsShortPoolsBenchedMemberIsProbed(t *testing.T) {
	ctx := safety(t)
	e, sec := holdEnv(t, true)
	call := e.goDo(ctx, chatBody)
	if err := e.clock.BlockUntilTimer(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err) // held: looking again in 100 ms
	}
	e.clock.Advance(100 * time.Millisecond)
	if err := e.clock.BlockUntilTimer(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err) // sec still benched: held on
	}
	sec.Force(breaker.Closed, time.Time{}, breaker.KindManual, "probe passed")
	e.clock.Advance(100 * time.Millisecond)
	res := await(t, ctx, call)
	if res.err != nil || res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("held request: %v, %+v", res.err, res.resp)
	}
	if len(res.rep.Attempts) != 2 || res.rep.Attempts[0].Status != 500 {
		t.Fatalf("attempts %+v, want weu's 500 then sec", res.rep.Attempts)
	}
}

// TestRequestHeldNoLongerThanShortHold: sec never comes back; the request
// relays weu's 500 once it has waited 2 s, not before.
func TestRequestHeldNoLongerThanShortHold(t *testing.T) {
	ctx := safety(t)
	e, _ := holdEnv(t, true)
	call := e.goDo(ctx, chatBody)
	for i := range 20 {
		if err := e.clock.BlockUntilTimer(ctx, 100*time.Millisecond); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		select {
		case res := <-call:
			t.Fatalf("answered %+v after %d ms held, want 2 s", res.resp, i*100)
		default:
		}
		e.clock.Advance(100 * time.Millisecond)
	}
	res := await(t, ctx, call)
	if res.err != nil || res.resp.StatusCode != 500 || len(res.rep.Attempts) != 1 {
		t.Fatalf("after the hold: %v, %+v, attempts %+v; want weu's 500", res.err, res.resp, res.rep)
	}
}

// TestRequestNotHeldWhenNothingProbes: with no prober (the engine as a
// library), a benched member comes back only when its trip ends: weu's 500
// is relayed at once.
func TestRequestNotHeldWhenNothingProbes(t *testing.T) {
	e, _ := holdEnv(t, false)
	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 500 || len(rep.Attempts) != 1 {
		t.Fatalf("got %d after %d attempts, want weu's 500 at once", resp.StatusCode, len(rep.Attempts))
	}
}
