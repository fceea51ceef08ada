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

// TestSlowStartSendsARampingMemberItsShare: a primary back from a
// repeated trip takes a tenth of the calls at first, evenly spread, the
// next tier the rest; its share grows until it takes them all again
// (Envoy's slow start; issue 22: a flapping region took all its traffic
// back at once, and each dark spell cost the same).
func TestSlowStartSendsARampingMemberItsShare(t *testing.T) {
	clk := fakeclock.New()
	ms := breakered(clk, members([2]int{1, 1}, [2]int{2, 1}))
	p := &Pool{Members: ms, Clock: clk}
	br := ms[0].Backend.Breaker
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark")
	br.Checked(true, "pass")
	br.Force(breaker.Open, time.Time{}, breaker.KindUnresponsive, "dark again")
	br.Checked(true, "pass")
	br.Checked(true, "pass")
	if s := br.Snapshot(); s.State != breaker.Closed || s.Share != breaker.MinShare {
		t.Fatalf("primary %+v, want closed in its slow start", s)
	}
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
