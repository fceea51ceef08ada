// Package poll waits, in tests, for a condition that other
// goroutines or processes make true: a store that a background writer
// fills, a replica that hears another's heartbeat, a token refreshed in
// the background. It polls the condition; it never stands in for a
// duration the code under test waits (those run on an injected clock).
package poll

import (
	"testing"
	"time"
)

// Every is how often the condition is checked.
const Every = 5 * time.Millisecond

// Until calls cond every few milliseconds until it returns true, and
// fails the test (t.Fatalf) with why() if it has not within d. why may be
// nil; it is called once, at the failure, so it can describe the state the
// condition last saw.
func Until(t testing.TB, d time.Duration, cond func() bool, why func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			msg := "the condition did not hold"
			if why != nil {
				msg = why()
			}
			t.Fatalf("not within %s: %s", d, msg)
			return
		}
		time.Sleep(Every) // a poll of a condition, not a wait standing for one
	}
}
