package route

import (
	"net/url"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// TestCheckEndedByItsWallBoundIsATimeout: a check ended by its wall-clock
// bound, which comes first when the pool's clock is the wall's and the
// check's timeout is maxCheckTimeout (a backend whose calls take 2.5 s or
// more), is a timeout like one ended by the clock: a call answered while
// it waited excuses it. (A 3 s region was benched for a check that "failed
// (client_canceled)" while the bound was a plain deadline: the excuse was
// skipped and the reason misread.)
func TestCheckEndedByItsWallBoundIsATimeout(t *testing.T) {
	up := upstreamtest.New(t, upstreamtest.Hang)
	base, _ := url.Parse(up.URL + "/v1")
	clk := fakeclock.New() // never advanced: the wall bound ends the check
	b := &Backend{Name: "weu", Provider: &OpenAI{BaseURL: base}, Breaker: breaker.New("weu", breaker.Settings{Clock: clk})}
	p := &Pool{Name: "chat", Members: []*Member{{Backend: b}}, Clock: clk}
	defer func(d time.Duration) { checkWallBound = d }(checkWallBound)
	checkWallBound = 50 * time.Millisecond
	p.startCheck(b, "gpt-4o", "a test", false)
	b.check.heardFrom(clk.Now(), false) // a call answered while the check waits
	poll.Until(t, 10*time.Second, func() bool { return !b.check.checking() }, func() string { return "the check to end" })
	if s := b.Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("breaker %v (%s) after a check that timed out while a call was answered, want closed", s.State, s.Kind)
	}
}
