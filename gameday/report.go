package gameday

import (
	"time"

	"github.com/switchover-gw/switchover/load"
)

// Report is a finished game day: every scenario with every setup's run.
type Report struct {
	// Started is when the game day began (wall clock).
	Started time.Time `json:"started"`
	// Machine describes where it ran, e.g. "linux/amd64, 2 CPUs".
	Machine string `json:"machine"`
	// Command is the command line that produced it.
	Command string `json:"command"`
	// Realtime is false when durations were compressed.
	Realtime  bool             `json:"realtime"`
	Scenarios []ScenarioResult `json:"scenarios"`
}

// ScenarioResult is one scenario's runs, one per setup, in setup order.
type ScenarioResult struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// Targets says what a good result looks like; printed, not checked.
	Targets string `json:"targets,omitempty"`
	// Compress is the time compression the scenario ran at: 1 is real
	// time; 30 means 30 times faster (quotas, rates, breaker trips and
	// fault times scaled; model latency and network timeouts not).
	Compress float64 `json:"compress"`
	// Regions are the simulated regions, in the scenario's order.
	Regions []RegionInfo `json:"regions"`
	// Load describes the load, e.g. "60 req/s open model for 10s".
	Load string `json:"load"`
	// Cached is true when a setup of the scenario has a response cache:
	// the tables then say how many answers came from it (from cache:
	// x-switchover-cache hit or coalesced, no model call).
	Cached bool        `json:"cached,omitempty"`
	Runs   []RunResult `json:"runs"`
}

// RegionInfo describes a simulated region as it ran (after compression).
type RegionInfo struct {
	Name          string        `json:"name"`
	MedianLatency time.Duration `json:"median_latency_ns"`
	RPM           int           `json:"rpm"`
	TPM           int           `json:"tpm"`
}

// RunResult is one setup's run of a scenario.
type RunResult struct {
	Setup       string `json:"setup"`
	Description string `json:"description"`
	// Mode is "gateway" (load through switchover over loopback HTTP) or
	// "client" (the routing engine inside the caller, straight to the
	// regions).
	Mode string `json:"mode"`
	// Summary is the main load's (with a noise load, the victims').
	Summary load.Summary `json:"summary"`
	// Noise summarizes the scenario's noise load, if it has one; its
	// Upstream.Calls are the model calls its answers' x-switchover-attempts
	// headers count. The main Summary's Upstream then has the regions'
	// counters less the noise's calls and answers.
	Noise *load.Summary `json:"noise,omitempty"`
	// Samples are every request, for plots (not in the JSON report).
	Samples []load.Sample `json:"-"`
	// Transitions are the breaker state changes during the run, relative
	// to its start.
	Transitions []Transition `json:"transitions,omitempty"`
	// Faults are the fault windows of the run, relative to its start.
	Faults []FaultWindow `json:"faults,omitempty"`
	// Outage is set for runs whose scenario takes the primary down.
	Outage *OutageResult `json:"outage,omitempty"`
	// Windows are, for the same runs, each fault window of the outage
	// region with its calls per request and the clients' wait.
	Windows []WindowResult `json:"windows,omitempty"`
	// Notifications are what the run's gateway (or client engine) would
	// have told people: active-backend changes, relative to the run's
	// start.
	Notifications []Note `json:"notifications,omitempty"`
	// Duration is how long the run took, waiting for the last answer.
	Duration time.Duration `json:"duration_ns"`
}

// Note is a notification sent during a run.
type Note struct {
	At   time.Duration `json:"at_ns"`
	Kind string        `json:"kind"`
	From []string      `json:"from"`
	To   []string      `json:"to"`
	Text string        `json:"text"`
}

// Transition is a breaker state change, relative to the run's start.
type Transition struct {
	At      time.Duration `json:"at_ns"`
	Backend string        `json:"backend"`
	From    string        `json:"from"`
	To      string        `json:"to"`
	Cause   string        `json:"cause"`
}

// FaultWindow is a fault in force on one region from From to To,
// relative to the run's start.
type FaultWindow struct {
	Region string        `json:"region"`
	Mode   string        `json:"mode"`
	From   time.Duration `json:"from_ns"`
	To     time.Duration `json:"to_ns"`
}

// OutageResult reads a primary-region outage off a run, as the Azure OpenAI multi-region game day (API Management backend pools and circuit breakers) did in its
// day was read off its trace.
type OutageResult struct {
	// Primary is the region that went down.
	Primary string `json:"primary"`
	// Requests counts requests in flight at some moment of the outage:
	// sent before it ended and finished after it began (those in flight
	// when it began included).
	Requests int `json:"requests"`
	// Failed counts those of Requests that failed.
	Failed int `json:"failed"`
	// Moved is how long after the outage began the first request was
	// answered by another region; -1 if none was.
	Moved time.Duration `json:"moved_ns"`
	// Benched is how long after the outage began the primary's breaker
	// opened (from then on requests no longer tried it); -1 if it never
	// did.
	Benched time.Duration `json:"benched_ns"`
	// Back is how long after the outage ended the primary answered again;
	// -1 if it never did during the run.
	Back time.Duration `json:"back_ns"`
	// Closed is how long after the outage ended the primary's breaker
	// closed; -1 if it never did.
	Closed time.Duration `json:"closed_ns"`
	// LongestWait is the longest any of Requests took to be answered or
	// refused.
	LongestWait time.Duration `json:"longest_wait_ns"`
	// Refused counts those of Requests refused with 503 or 429;
	// WithRetryAfter those of them that said when to come back, the
	// longest LongestRetryAfter.
	Refused           int           `json:"refused"`
	WithRetryAfter    int           `json:"with_retry_after"`
	LongestRetryAfter time.Duration `json:"longest_retry_after_ns"`
}
