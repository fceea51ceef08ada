package route

import (
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// breakered gives each member a breaker of its own on clk.
func breakered(clk *fakeclock.Clock, ms []*Member) []*Member {
	for _, m := range ms {
		m.Backend.Breaker = breaker.New(m.Backend.Name, breaker.Settings{Clock: clk, Trip: time.Minute, SlowStart: 30 * time.Second})
	}
	return ms
}

// intoSlowStart puts br, a breaker of breakered's, in its slow start at
// its lowest share, as a backend back from a repeated trip is.
func intoSlowStart(t *testing.T, br breaker.Interface) {
	t.Helper()
	flapTrip(t, br)
	br.Checked(true, "pass")
	br.Checked(true, "pass")
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
		t.Fatalf("%+v, want closed in its slow start", s)
	}
}

// poolPicks makes n selections of a fresh request each and returns the names
// picked ("-" for none).
func poolPicks(p *Pool, n int) string {
	var got strings.Builder
	for range n {
		m, done, _ := p.next(nil, nil, &memberSet{})
		if m == nil {
			got.WriteString("-")
			continue
		}
		done(breaker.Outcome{Result: breaker.Ignore})
		got.WriteString(m.Backend.Name)
	}
	return got.String()
}

// brownoutTrip opens b's breaker as a brownout does: five failures among
// calls of which a third fail.
func brownoutTrip(t *testing.T, br breaker.Interface) {
	t.Helper()
	for i := 0; br.Snapshot().State == breaker.Closed; i++ {
		done, ok := br.Allow()
		if !ok || i > 100 {
			t.Fatal("the breaker never opened")
		}
		if i%3 == 0 {
			done(breaker.Outcome{Result: breaker.Failure})
		} else {
			done(breaker.Outcome{Result: breaker.Success})
		}
	}
}

// TestSlowStartSendsARampingMemberItsShare: a primary back from a
// repeated trip takes a tenth of the calls at first, evenly spread, the
// next tier the rest; its share grows until it takes them all again
// (Envoy's slow start; issue 22: a flapping region took all its traffic
// back at once, and each dark spell cost the same).
func TestSlowStartSendsARampingMemberItsShare(t *testing.T) {
	clk := fakeclock.New()
	ms := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	p := &Pool{Members: ms, Clock: clk}
	intoSlowStart(t, ms[0].Backend.Breaker)
	if got, want := poolPicks(p, 20), "bbbbbbbbbabbbbbbbbba"; got != want {
		t.Fatalf("picks at a share of 0.1: %s, want %s", got, want)
	}
	clk.Advance(15 * time.Second) // share 0.55
	if got, want := poolPicks(p, 10), "bababababa"; got != want {
		t.Fatalf("picks at a share of 0.55: %s, want %s", got, want)
	}
	clk.Advance(15 * time.Second)
	if got := poolPicks(p, 10); got != "aaaaaaaaaa" {
		t.Fatalf("picks after the slow start: %s, want every one a", got)
	}
}

// TestHealthCheckHoldsNewCallsBack: while a health check decides whether
// a backend whose call waited too long answers at all, new calls go to
// another member rather than wait on it too.
func TestHealthCheckHoldsNewCallsBack(t *testing.T) {
	clk := fakeclock.New()
	ms := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	p := &Pool{Members: ms, Clock: clk}
	if !ms[0].Backend.check.begin(clk.Now()) {
		t.Fatal("no check could start")
	}
	if got := poolPicks(p, 3); got != "bbb" {
		t.Fatalf("picks during the check: %s, want bbb", got)
	}
	ms[0].Backend.check.end()
	if got := poolPicks(p, 3); got != "aaa" {
		t.Fatalf("picks after it: %s, want aaa", got)
	}
}

// TestEjectionNeverBenchesTheLastUsableMembers: holding back and partial
// trips never leave a pool with nothing to call while a member still
// answers (Envoy's max ejection percent and panic threshold): the only
// member left takes the calls in its slow start or under a check, and
// when every member is benched for a brownout, one of them is tried as
// its breaker's probe. An outage's bench (every call failed) still
// refuses.
func TestEjectionNeverBenchesTheLastUsableMembers(t *testing.T) {
	clk := fakeclock.New()
	ms := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	p := &Pool{Members: ms, Clock: clk}

	// b in its slow start, a benched: b takes every call.
	a, b := ms[0].Backend.Breaker, ms[1].Backend.Breaker
	brownoutTrip(t, b)
	clk.Advance(time.Minute)
	done, _ := b.Allow()
	done(breaker.Outcome{Result: breaker.Success})
	if s := b.Snapshot(); s.Share >= 1 {
		t.Fatalf("b %+v, want in its slow start", s)
	}
	a.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	if got := poolPicks(p, 5); got != "bbbbb" {
		t.Fatalf("picks with a benched and b ramping: %s, want bbbbb", got)
	}
	ms[1].Backend.check.begin(clk.Now())
	if got := poolPicks(p, 2); got != "bb" {
		t.Fatalf("picks with b under a check and no one else: %s, want bb", got)
	}
	ms[1].Backend.check.end()

	// Both benched for brownouts: one call goes through as a probe.
	a.Force(breaker.Closed, time.Time{}, breaker.KindManual, "operator")
	brownoutTrip(t, a)
	done, _ = b.Allow()
	done(breaker.Outcome{Result: breaker.Failure}) // b fails in its slow start
	if !a.Snapshot().Partial || !b.Snapshot().Partial {
		t.Fatalf("a %+v, b %+v: want both benched for a brownout", a.Snapshot(), b.Snapshot())
	}
	m, done, _ := p.next(nil, nil, &memberSet{})
	if m == nil {
		t.Fatal("every member benched for a brownout: no call at all")
	}
	if m != ms[0] {
		t.Errorf("probe went to %s, want a (its trip ends first)", m.Backend.Name)
	}
	if m2, _, _ := p.next(nil, nil, &memberSet{}); m2 == ms[0] {
		t.Error("a second call went to a while its probe was in flight")
	}
	done(breaker.Outcome{Result: breaker.Success})

	// An outage's bench is not cut short.
	o := breakered(clk, members([2]int{1, 1}))
	o[0].Backend.Breaker.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	if m, _, _ := (&Pool{Members: o, Clock: clk}).next(nil, nil, &memberSet{}); m != nil {
		t.Fatal("a call went to a backend benched for an outage")
	}
}

// flapTrip benches br again after it came back once, so that it needs two
// passing health checks in a row to come back early.
func flapTrip(t *testing.T, br breaker.Interface) {
	t.Helper()
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	br.Checked(true, "pass")
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark again")
	if s := br.Snapshot(); s.PassesNeeded != 2 || s.Passes != 0 {
		t.Fatalf("%+v, want two passes needed", s)
	}
}

// TestEveryMemberBenchedTriesOnePassingItsChecks: when every member of a
// pool is benched for its health and one of them, benched again and so
// needing several passing health checks in a row, has passed its last
// one, that one is tried as its breaker's probe rather than the pool
// refusing every call until the checks add up (a soak of two flapping
// regions saw over a minute of refusals while one had been answering its
// checks for most of it). A brownout's trip ranks before it; a member
// with no passing check is not tried.
func TestEveryMemberBenchedTriesOnePassingItsChecks(t *testing.T) {
	clk := fakeclock.New()
	ms := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	p := &Pool{Members: ms, Clock: clk}
	a, b := ms[0].Backend.Breaker, ms[1].Backend.Breaker
	flapTrip(t, a)
	flapTrip(t, b)
	if m, _, _ := p.next(nil, nil, &memberSet{}); m != nil {
		t.Fatalf("a call went to %s with no passing check anywhere", m.Backend.Name)
	}
	b.Checked(true, "pass")
	m, done, _ := p.next(nil, nil, &memberSet{})
	if m != ms[1] {
		t.Fatalf("picked %v, want b, which passed its last check", m)
	}
	if s := b.Snapshot(); s.State != breaker.HalfOpen || !s.Probing {
		t.Fatalf("b %+v, want half-open with the call as its probe", s)
	}
	if m2, _, _ := p.next(nil, nil, &memberSet{}); m2 != nil {
		t.Fatalf("a second call went to %s while b's probe was in flight", m2.Backend.Name)
	}
	done(breaker.Outcome{Result: breaker.Success})
	if got := poolPicks(p, 3); got != "bbb" {
		t.Fatalf("picks after b's probe passed: %s, want bbb", got)
	}

	// A brownout's trip ranks before a passing check.
	c := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	flapTrip(t, c[0].Backend.Breaker)
	c[0].Backend.Breaker.Checked(true, "pass")
	brownoutTrip(t, c[1].Backend.Breaker)
	if m, _, _ := (&Pool{Members: c, Clock: clk}).next(nil, nil, &memberSet{}); m != c[1] {
		t.Fatalf("picked %v, want the member benched for a brownout", m)
	}
}
