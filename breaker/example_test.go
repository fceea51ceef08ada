package breaker_test

import (
	"fmt"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// A streamed call reports its first event as a Partial outcome, and its end
// as the final one. As the half-open probe, its first event closes the
// breaker; the end of the stream then counts against the closed breaker.
func Example_streamProbe() {
	clk := fakeclock.New()
	b := breaker.New("weu", breaker.Settings{Failures: 1, Trip: time.Minute, Clock: clk,
		OnTransition: func(t breaker.Transition) { fmt.Printf("#%d %v -> %v: %s\n", t.Seq, t.From, t.To, t.Cause) }})

	done, _ := b.Allow()
	done(breaker.Outcome{Result: breaker.Failure, Class: "stream", Cause: "first_byte_timeout"})

	clk.Advance(time.Minute) // the trip ends without traffic

	probe, _ := b.Allow()
	probe(breaker.Outcome{Result: breaker.Success, Class: "stream", Partial: true}) // first event
	clk.Advance(3 * time.Minute)
	probe(breaker.Outcome{Result: breaker.Success, Class: "stream"}) // the stream ends well
	fmt.Println(b.Snapshot().State)
	// Output:
	// #1 closed -> open: 1 failures in 30s, last first_byte_timeout
	// #2 open -> half_open: trip ended
	// #3 half_open -> closed: probe answering
	// closed
}
