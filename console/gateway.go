package console

import (
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
)

// Gateway is what the console needs of a running gateway: its state, its
// configuration and the operator actions. The gateway package implements
// it; tests use a fake. Implementations must be safe for concurrent use.
type Gateway interface {
	// Status is the state of every pool and backend, and recent events
	// (oldest first).
	Status() Status
	// Config is the configuration in force. The console renders it with
	// every config.Secret redacted.
	Config() *config.Config
	// Act performs an operator action, recording who took it.
	Act(who string, a Action) error
	// Reload reads the configuration file again and applies it, recording
	// who asked; the error lists the file's problems.
	Reload(who string) error
	// ReloadPreview is what a reload would do now, without doing it.
	ReloadPreview() Preview
}

// Ledgered is implemented by a Gateway that may keep virtual keys, teams
// and usage in a store (issue 14's keys and budgets). Ledger returns nil
// when no store is configured; a Gateway that does not implement
// Ledgered has none either.
type Ledgered interface {
	Ledger() ledger.Store
}

// Status is the gateway's state at At.
type Status struct {
	At     time.Time
	Pools  []Pool
	Events []Event
	// Fleet is nil when this replica shares no state with others.
	Fleet *Fleet
}

// Pool is one pool, its active set and its members in priority order.
type Pool struct {
	Name        string
	Aliases     []string
	Active      []string
	ActiveSince time.Time
	// ActiveSinceStart: the active set has not changed since the gateway
	// began following the pool, so ActiveSince is its start, not when the
	// set became active.
	ActiveSinceStart bool
	Members          []Member
}

// Member is one member of a pool and its backend's state.
type Member struct {
	Backend, Type, Region, Model string
	// Priority (the tier, 1 first) and Weight in force; Overridden when
	// an operator changed them.
	Priority, Weight int
	Overridden       bool
	Drained, Usable  bool
	// Breaker is "closed", "open", "half-open" or "disabled"; Until and
	// Left, for an open breaker, when it lets a probe through.
	Breaker  string
	Until    time.Time
	Left     time.Duration
	Failures int
	Probing  bool
	InFlight int64
	// Attempts and Errors are counters since the gateway started; the
	// console turns them into rates by sampling.
	Attempts, Errors uint64
	// FirstByte is a cumulative histogram of the backend's attempts'
	// times to first byte.
	FirstByte []Bucket
	// Headroom is the share of its quota the backend said it has left;
	// HeadroomKnown is false when it has not said.
	Headroom      float64
	HeadroomKnown bool
	// Probe is the last health probe, nil without probes.
	Probe *Probe
}

// Bucket is one bucket of a cumulative histogram: Count observations of
// at most Le seconds.
type Bucket struct {
	Le    float64
	Count uint64
}

// Probe is a backend's last health probe.
type Probe struct {
	Kind     string
	At       time.Time
	Up       bool
	Result   string
	Error    string
	Latency  time.Duration
	Failures int
}

// Event is an entry of the gateway's timeline.
type Event struct {
	At                                   time.Time
	Kind, Pool, Backend, Detail, Replica string
	// Opened is, for a breaker event that opened the breaker, its cause.
	Opened string
}

// Fleet is the replicas sharing state with this one.
type Fleet struct {
	Replica                   string
	StoreUp, Joined, Notifier bool
	// PendingActions counts the operator actions taken on this replica
	// while the shared store was out, not yet sent to the others.
	PendingActions int
	Replicas       []Replica
}

// Replica is one replica of a fleet.
type Replica struct {
	ID, Version   string
	Started, Seen time.Time
	InFlight      map[string]int
}

// Action kinds.
const (
	ActDrain       = "drain"
	ActRestore     = "restore"
	ActOpen        = "breaker_open"
	ActClose       = "breaker_close"
	ActSetMember   = "set_member"
	ActResetMember = "reset_member"
	ActReload      = "reload"
)

// Action is an operator action. Pool is for the member actions; For, for
// ActOpen, is how long (0: the breaker's trip); Priority and Weight, for
// ActSetMember, are the new values (0 keeps the one in force).
type Action struct {
	Kind             string
	Pool, Backend    string
	Priority, Weight int
	For              time.Duration
}

// Preview is what a reload of the configuration file would change.
type Preview struct {
	// File is the configuration file; empty when the gateway was not
	// started from one (a reload is then impossible).
	File string
	// Err is why the file would not load (its problems), or "".
	Err string
	// Restart names the settings of the file that a reload does not
	// apply (as `switchover check -against` prints them): they wait for a
	// restart, and the configuration in force keeps their running values,
	// before a reload and after it.
	Restart []string
	// Running and Next are the configuration in force and the file's, as
	// YAML with every secret redacted; equal when the file is what runs.
	Running, Next string
	// Applied is the configuration a reload would put in force: Next with
	// the running values of Restart's settings. Empty means Next.
	Applied string
}
