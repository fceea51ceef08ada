// Package bench measures what the gateway costs next to nginx and Go's
// stock reverse proxy, on one machine, side by side: maximum throughput
// (wrk), CPU, syscalls and allocations per request at a fixed rate, added
// latency, a stream's first token and its flushing, and memory per open
// stream. It starts its own mock upstream (in process) and each target
// as a process of its own, interleaves the targets round by round, and
// stops everything it started when it returns. `switchover bench` runs it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Measures, the groups of rows Options.Only can pick.
const (
	MeasureThroughput = "throughput" // max req/s
	MeasureRate       = "rate"       // CPU, allocations, p50 and p99 at the fixed rate
	MeasureSyscalls   = "syscalls"   // strace
	MeasureStreams    = "streams"    // first token, flushing
	MeasureMemory     = "memory"     // RSS with open streams
	MeasureScale      = "scale"      // CPU per request with larger configurations, a reload under load
)

// Measures lists every measure, in the order rows are printed.
var Measures = []string{MeasureThroughput, MeasureRate, MeasureSyscalls, MeasureStreams, MeasureMemory, MeasureScale}

// Options shape a run. The zero value is not ready: start from Defaults or
// Quick.
type Options struct {
	// Targets are measured in this order (rotated each round): any of
	// Direct, Nginx, Switchover, GoProxy. Direct is the mock upstream
	// called straight, the baseline of the "added" rows.
	Targets []string
	// Rounds of each interleaved measurement; medians are reported.
	Rounds int
	// Duration of each throughput and fixed-rate run.
	Duration time.Duration
	// Conns are the throughput runs: {threads, connections} each.
	Conns [][2]int
	// Rate is the fixed rate of the CPU, latency and allocation runs;
	// SyscallRate the rate of the strace run.
	Rate, SyscallRate float64
	// Streams are read one after the other per target and round for the
	// first-token row, each of Chunks chunks Interval apart.
	Streams  int
	Chunks   int
	Interval time.Duration
	// OpenStreams are held open at once for the memory row, opened
	// OpenRate a second. 0 skips the row.
	OpenStreams int
	OpenRate    float64
	// H2 also measures the gateway's memory with an HTTP/2 (TLS) upstream.
	H2 bool
	// ScaleFactor multiplies the sizes of the scale rows' configurations:
	// at 1, 100 members, 10,000 pools, 10,000 aliases, 100,000 keys, and
	// a reload of 1,000 backends and pools. Never below the "Use it"
	// config's sizes.
	ScaleFactor float64
	// Wrk, Nginx and Strace are the tools' paths; empty means not used
	// (the built-in closed-loop generator stands in for wrk).
	Wrk, Nginx, Strace string
	// Only, if set, names the measures to run, out of Measures; the
	// others are skipped.
	Only []string
	// SyscallDetail keeps strace's per-syscall counts in the report.
	SyscallDetail bool
	// Exe is the switchover binary the gateway and the reference proxy run
	// from. Default os.Executable().
	Exe string
	// Env is added to every child's environment; GatewayEnv to the
	// gateway's only (GOMAXPROCS=1, GOGC=200…).
	Env, GatewayEnv []string
	// Dir holds the configs, logs and scripts. Default a temporary
	// directory, removed at the end.
	Dir string
	// Command is the command line printed at the top.
	Command string
	// Progress, if set, gets a line as each measurement starts.
	Progress io.Writer
}

// Defaults are the full run: three rounds of 5 s each, about six minutes
// with every tool present.
func Defaults() Options {
	return Options{
		Targets:     []string{Direct, Nginx, Switchover, GoProxy},
		Rounds:      3,
		Duration:    5 * time.Second,
		Conns:       [][2]int{{2, 64}, {1, 32}},
		Rate:        1000,
		SyscallRate: 200,
		Streams:     20,
		Chunks:      5,
		Interval:    20 * time.Millisecond,
		OpenStreams: 1000,
		OpenRate:    250,
		H2:          true,
		ScaleFactor: 1,
	}
}

// Quick is a smoke run: one round of 1 s each, 200 open streams; under a
// minute.
func Quick() Options {
	o := Defaults()
	o.Rounds = 1
	o.Duration = time.Second
	o.Streams = 5
	o.OpenStreams = 200
	o.OpenRate = 500
	o.ScaleFactor = 0.01
	return o
}

// Run measures and returns the report. It stops every process it started
// before it returns, also when ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Rounds < 1 || o.Duration <= 0 || o.Rate <= 0 {
		return nil, errors.New("bench: rounds, duration and rate must be positive")
	}
	if slices.Contains(o.Targets, Nginx) && o.Nginx == "" {
		o.Targets = slices.DeleteFunc(slices.Clone(o.Targets), func(t string) bool { return t == Nginx })
	}
	if len(o.Targets) == 0 {
		return nil, errors.New("bench: no targets")
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Exe = exe
	}
	raiseFileLimit()
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "switchover-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	r := &runner{o: o, rep: newReport(o)}
	defer r.stopAll()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	// Memory first, on processes only the warm-up has run through.
	steps := []struct {
		measure string
		run     func(context.Context) error
	}{
		{MeasureMemory, r.openStreams}, {MeasureStreams, r.streams}, {MeasureRate, r.fixedRate},
		{MeasureSyscalls, r.syscalls}, {MeasureThroughput, r.throughput}, {MeasureMemory, r.openStreamsH2},
		{MeasureScale, r.scale},
	}
	for _, step := range steps {
		if len(o.Only) > 0 && !slices.Contains(o.Only, step.measure) {
			continue
		}
		if err := step.run(ctx); err != nil {
			r.rep.finish()
			return r.rep, err
		}
	}
	r.rep.finish()
	return r.rep, nil
}

// raiseFileLimit lifts the soft limit on open files to the hard one, for
// this process and the children it starts: 1,000 streams take 2,000
// descriptors in the gateway and as many here.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// runner holds a run's processes and report.
type runner struct {
	o       Options
	rep     *Report
	up      *Upstream
	targets []*target
	started []*target // every process started, to stop
}

func (r *runner) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
}

func (r *runner) starter() *starter {
	return &starter{exe: r.o.Exe, env: r.o.Env, gwEnv: r.o.GatewayEnv, nginx: r.o.Nginx, dir: r.o.Dir}
}

// setUp starts the mock upstream and the targets, and warms each up.
func (r *runner) setUp(ctx context.Context) error {
	up, err := NewUpstream()
	if err != nil {
		return err
	}
	r.up = up
	s := r.starter()
	for _, name := range r.o.Targets {
		r.progress("starting %s", name)
		t, err := s.start(ctx, name, up, false)
		if err != nil {
			return err
		}
		r.targets = append(r.targets, t)
		r.started = append(r.started, t)
	}
	for _, t := range r.targets {
		c := &caller{client: newClient(8), req: chatRequest(t.url, false)}
		sum, err := closedLoop(ctx, c, 8, 300*time.Millisecond)
		if err != nil {
			return err
		}
		if sum.Succeeded == 0 {
			return fmt.Errorf("bench: no request through %s succeeded while warming up (%v)", t.name, sum.Failures)
		}
		r.rep.fail(t.name, sum.Failed)
	}
	return ctx.Err()
}

func (r *runner) stopAll() {
	var wg sync.WaitGroup
	for _, t := range r.started {
		wg.Go(t.stop)
	}
	wg.Wait()
	if r.up != nil {
		r.up.Close()
	}
}

// order is the targets in round i's order: rotated by one each round, so
// that no target always runs first or right after the same one.
func (r *runner) order(i int) []*target {
	n := len(r.targets)
	out := make([]*target, 0, n)
	for k := range n {
		out = append(out, r.targets[(i+k)%n])
	}
	return out
}

func (r *runner) get(name string) *target {
	for _, t := range r.targets {
		if t.name == name {
			return t
		}
	}
	return nil
}
