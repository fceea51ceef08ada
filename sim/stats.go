package sim

import "sync/atomic"

// Stats are one deployment's counters since start or the last reset.
//
// Calls counts requests routed to the deployment as they arrive; each ends
// in exactly one outcome counter when it finishes, so Calls minus the
// outcomes is what is still in flight (InFlight, which a reset does not
// zero).
type Stats struct {
	Region string `json:"region"`
	// Calls is every request that reached one of the deployment's API routes.
	Calls int64 `json:"calls"`
	// Answered is requests answered 200 in full (streams to [DONE]).
	Answered int64 `json:"answered"`
	// Refused is requests refused 429 by the quota.
	Refused int64 `json:"refused"`
	// Errors is requests failed by a fault: 500/503, blackhole, reset,
	// stalled or dropped streams.
	Errors int64 `json:"errors"`
	// Filtered is requests refused 400 by the content filter.
	Filtered int64 `json:"filtered"`
	// Rejected is requests refused for the client's fault: 401, 400, 404
	// model or deployment mismatch.
	Rejected int64 `json:"rejected"`
	// Abandoned is requests whose client went away (or the sim closed)
	// before the answer was complete, with no fault involved.
	Abandoned int64 `json:"abandoned"`
	// InFlight is requests being handled now.
	InFlight int64 `json:"in_flight"`
	// Tokens is the estimated tokens charged against the quota.
	Tokens int64 `json:"tokens"`
	// Fault is the mode in force now.
	Fault FaultMode `json:"fault"`
}

// outcome is how a request ended; its String is the metrics result label.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeRefused
	outcomeError
	outcomeFiltered
	outcomeRejected
	outcomeAbandoned
	numOutcomes
)

func (o outcome) String() string {
	return [...]string{"ok", "refused", "error", "filtered", "rejected", "abandoned"}[o]
}

// counters are a deployment's live counters. They are safe for concurrent
// use.
type counters struct {
	calls    atomic.Int64
	outcomes [numOutcomes]atomic.Int64
	tokens   atomic.Int64
	inFlight atomic.Int64
}

func (c *counters) begin() {
	c.calls.Add(1)
	c.inFlight.Add(1)
}

func (c *counters) end(o outcome) {
	c.outcomes[o].Add(1)
	c.inFlight.Add(-1)
}

func (c *counters) charge(tokens int64) { c.tokens.Add(tokens) }

// reset zeroes every counter but InFlight.
func (c *counters) reset() {
	c.calls.Store(0)
	c.tokens.Store(0)
	for i := range c.outcomes {
		c.outcomes[i].Store(0)
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Calls:     c.calls.Load(),
		Answered:  c.outcomes[outcomeOK].Load(),
		Refused:   c.outcomes[outcomeRefused].Load(),
		Errors:    c.outcomes[outcomeError].Load(),
		Filtered:  c.outcomes[outcomeFiltered].Load(),
		Rejected:  c.outcomes[outcomeRejected].Load(),
		Abandoned: c.outcomes[outcomeAbandoned].Load(),
		InFlight:  c.inFlight.Load(),
		Tokens:    c.tokens.Load(),
	}
}
