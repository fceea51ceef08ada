// Package drill measures how switchover keeps keys to their budgets and
// rate limits, through real gateways: it starts a simulated backend (sim)
// and gateway replicas in this process, sends requests to them over
// loopback HTTP, and reports what was admitted and spent against what the
// limits allow. It is issue 24's budget and rollout behaviour as a
// repeatable run (`switchover drill spend`, docs/operations.md): figures
// are printed, never asserted.
//
// The scenarios:
//
//   - burst: a key with a budget sends 3 small requests, then Burst large
//     ones at once; on SQLite and, given a DSN, PostgreSQL.
//   - even: Callers callers send small requests until refused; on both
//     stores.
//   - replicas: two and three replicas on PostgreSQL, Callers callers
//     each, without and with state.redis; then three on the budget of an
//     organisation, of a key's pool and of an end user ("replicas (org)",
//     "replicas (pool)", "replicas (end user)").
//   - rollout: three replicas sharing a key's rpm through Redis, through a
//     rollout (one replica replaced by a new name), a scale-down, a
//     scale-up and a Redis restart; what was admitted in each Window.
//
// Every run is bounded in requests and time, and stops by itself.
package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Scenario names, for Options.Only.
const (
	Burst    = "burst"
	Even     = "even"
	Replicas = "replicas"
	Rollout  = "rollout"
)

// Scenarios are the scenario names in the order they run.
var Scenarios = []string{Burst, Even, Replicas, Rollout}

// Redis is a Redis server the drill may use. Restart makes it go away and
// come back empty on the same address, as a restart without persistence
// does; it returns ErrNoRestart when the drill cannot restart it.
type Redis interface {
	URL() string
	Restart() error
}

// ErrNoRestart is returned by Redis.Restart for a server the drill did not
// start.
var ErrNoRestart = errors.New("the drill restarts only a redis-server it started")

// Options are a drill's settings. The zero value runs every scenario on
// SQLite only, at the figures of issue 24; each field's default is in its
// comment.
type Options struct {
	// Postgres is the DSN of a PostgreSQL database the drill may make keys
	// in (use a throwaway one). "" skips the rows that need it.
	Postgres string
	// Redis is the server for state.redis. Nil skips the rows that need
	// it.
	Redis Redis
	// Dir holds the SQLite files. "" means a temporary directory, removed
	// at the end.
	Dir string
	// Only lists the scenarios to run (Scenarios' names). Empty: all.
	Only []string

	// Budget is the keys' budget in dollars (a day's). Default 0.05.
	Budget float64
	// Callers is how many callers send at once per replica in the even
	// and replicas scenarios. Default 8.
	Callers int
	// Burst is how many large requests go at once. Default 16.
	Burst int
	// LargeChars is the size of a large request's prompt in characters.
	// Default 40000 (about $0.10 at the drill's price).
	LargeChars int
	// Latency is the simulated backend's median latency. Default 300ms.
	Latency time.Duration
	// MaxRequests bounds the requests of one budget run. Default 5000.
	MaxRequests int
	// RunTimeout bounds one budget run's sending. Default 60s.
	RunTimeout time.Duration

	// RPM is the key's requests per minute in the rollout. Default 60.
	RPM int
	// Window is how long each rollout phase is measured. Default 1m.
	Window time.Duration
	// Interval is how often each replica is offered a request in the
	// rollout. Default 250ms (12 a second with three replicas, 12 times
	// the default limit).
	Interval time.Duration

	// Progress, if set, receives a line as each run starts.
	Progress io.Writer
}

func (o Options) withDefaults() Options {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Budget, 0.05)
	defInt(&o.Callers, 8)
	defInt(&o.Burst, 16)
	defInt(&o.LargeChars, 40000)
	defDur(&o.Latency, 300*time.Millisecond)
	defInt(&o.MaxRequests, 5000)
	defDur(&o.RunTimeout, 60*time.Second)
	defInt(&o.RPM, 60)
	defDur(&o.Window, time.Minute)
	defDur(&o.Interval, 250*time.Millisecond)
	return o
}

func (o Options) runs(name string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, name) }

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "drill: "+format+"\n", args...)
	}
}

// Report is what a drill measured.
type Report struct {
	Started  time.Time
	Duration time.Duration
	// Budget has a row per budget run (burst, even, replicas).
	Budget []BudgetRow
	// Rollout has a row per rollout phase.
	Rollout []PhaseRow
	// Skipped says which runs did not happen and why.
	Skipped []string
}

// BudgetRow is one budget run: what a key with a budget was admitted and
// spent.
type BudgetRow struct {
	Scenario string  // burst, burst (team), even, replicas, replicas (org), (pool) or (end user)
	Store    string  // sqlite, postgres, or postgres+redis
	Replicas int     // gateways sharing the store
	Callers  int     // callers at once, in all
	Sent     string  // what was sent, e.g. "3 small + 16×40000 chars"
	Admitted int     // requests answered 200
	Refused  int     // requests refused with budget_exceeded
	Errors   int     // other answers and transport errors
	Spent    float64 // dollars recorded in the store for the key
	Budget   float64 // the key's budget
	// Recorded is false when the store did not hold every admitted
	// request's record within the wait: Spent is then short.
	Recorded bool
}

// Over is how far Spent went past Budget, in percent of it; negative when
// it stayed under.
func (r BudgetRow) Over() float64 { return 100 * (r.Spent - r.Budget) / r.Budget }

// PhaseRow is one rollout phase: what the fleet admitted of a key's rpm in
// the window after an event.
type PhaseRow struct {
	Phase    string // what happened at the window's start
	Replicas string // the replicas serving in the window
	Window   time.Duration
	Offered  int // requests sent
	Admitted int // requests answered 200
	Refused  int // requests refused with rate_limit_exceeded
	Errors   int // other answers and transport errors
	// Allowed is what the limit allows in the window: rpm × window, plus
	// the bucket's burst on a fresh fleet.
	Allowed float64
	// MaxRetryAfter is the longest Retry-After of a refusal in the window.
	MaxRetryAfter time.Duration
	Note          string
}

// Ratio is Admitted over Allowed, in percent.
func (r PhaseRow) Ratio() float64 { return 100 * float64(r.Admitted) / r.Allowed }

// Run runs the scenarios of o and returns what they measured. A scenario
// that cannot run (no PostgreSQL, no Redis) is listed in Report.Skipped;
// an error stops the drill.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	rep := &Report{Started: time.Now().UTC()}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "switchover-drill-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	b, err := startBackend(ctx, o.Latency)
	if err != nil {
		return nil, err
	}
	defer b.close()
	d := &drill{o: o, b: b, rep: rep}
	steps := []struct {
		name string
		run  func(context.Context) error
	}{{Burst, d.burst}, {Even, d.even}, {Replicas, d.replicas}, {Rollout, d.rollout}}
	for _, s := range steps {
		if !o.runs(s.name) {
			continue
		}
		if err := s.run(ctx); err != nil {
			return rep, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	rep.Duration = time.Since(rep.Started).Round(time.Second)
	return rep, nil
}

// drill is one Run's state.
type drill struct {
	o   Options
	b   *backend
	rep *Report
	seq int // numbers keys and replicas
}

func (d *drill) skip(format string, args ...any) {
	d.rep.Skipped = append(d.rep.Skipped, fmt.Sprintf(format, args...))
	d.o.progress("skipped: "+format, args...)
}
