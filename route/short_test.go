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
