package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/bench"
)

const benchUsage = `Usage: switchover bench [flags]

Measures the gateway side by side with nginx (when installed), Go's stock
httputil.ReverseProxy and the mock upstream called directly, on this
machine: max req/s (wrk), CPU, syscalls (strace) and allocations per
request, added latency, a stream's first token and flushing, and memory
with open streams. Each target is a process of its own; the mock upstream
runs in this one. Everything listens on 127.0.0.1 and stops at the end.
See docs/performance.md.

Examples:
  switchover bench -quick
  switchover bench -rounds 5 -duration 10s -json > bench.json
  switchover bench -targets direct,switchover -gateway-env GOMAXPROCS=1

Flags:
`

// envFlags collects repeated KEY=VALUE flags.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }

func (e *envFlags) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	*e = append(*e, v)
	return nil
}

// benchFlags are the flags of switchover bench; newBenchFlags gives their
// defaults and help.
type benchFlags struct {
	fs                    *flag.FlagSet
	quick                 bool
	scaleFactor           float64
	targets               string
	rounds                int
	duration              time.Duration
	rate, syscallRate     float64
	streams, chunks       int
	interval              time.Duration
	openStreams           int
	openRate              float64
	h2                    bool
	wrk, nginx, strace    string
	detail, asJSON, quiet bool
	gatewayEnv            envFlags
	dir                   string
	only                  string
}

func newBenchFlags(stderr io.Writer) *benchFlags {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	d := bench.Defaults()
	f := &benchFlags{fs: fs}
	fs.Float64Var(&f.scaleFactor, "scale-factor", 1, "sizes of the scale rows' configurations, as a share of 100 members, 10,000 pools and aliases, 100,000 keys, a reload of 1,000 backends (-quick: 0.01)")
	fs.BoolVar(&f.quick, "quick", false, "a fast smoke run: 1 round of 1s, 5 streams, 200 open streams (other flags still apply)")
	fs.StringVar(&f.targets, "targets", strings.Join(d.Targets, ","), "targets, comma-separated: direct, nginx, switchover, go-proxy")
	fs.IntVar(&f.rounds, "rounds", d.Rounds, "rounds of each measure (medians are printed)")
	fs.DurationVar(&f.duration, "duration", d.Duration, "length of each throughput and fixed-rate run")
	fs.Float64Var(&f.rate, "rate", d.Rate, "fixed rate of the CPU, latency and allocation runs, req/s")
	fs.Float64Var(&f.syscallRate, "syscall-rate", d.SyscallRate, "rate of the strace runs, req/s")
	fs.IntVar(&f.streams, "streams", d.Streams, "streams per target and round for the first-token row (0: skip)")
	fs.IntVar(&f.chunks, "chunks", d.Chunks, "content chunks per stream")
	fs.DurationVar(&f.interval, "interval", d.Interval, "time between the upstream's chunks")
	fs.IntVar(&f.openStreams, "open-streams", d.OpenStreams, "streams held open at once for the memory row (0: skip)")
	fs.Float64Var(&f.openRate, "open-rate", d.OpenRate, "streams opened per second for the memory row")
	fs.BoolVar(&f.h2, "h2", d.H2, "also measure the gateway's memory with an HTTP/2 (TLS) upstream")
	fs.StringVar(&f.wrk, "wrk", "wrk", `wrk to run ("": the built-in closed-loop generator)`)
	fs.StringVar(&f.nginx, "nginx", "nginx", `nginx to run ("": leave nginx out)`)
	fs.StringVar(&f.strace, "strace", "strace", `strace to run ("": no syscall row)`)
	fs.BoolVar(&f.detail, "syscalls-detail", false, "print each syscall's count per request")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.BoolVar(&f.quiet, "q", false, "no progress lines on stderr")
	fs.Var(&f.gatewayEnv, "gateway-env", "KEY=VALUE for the gateway's environment (GOMAXPROCS, GOGC…); repeat")
	fs.StringVar(&f.only, "only", "", "run only these measures, comma-separated: "+strings.Join(bench.Measures, ", "))
	fs.StringVar(&f.dir, "dir", "", "keep configs and logs in this directory (default: a temporary one, removed)")
	return f
}

// options turns the flags into bench options: -quick's or the defaults,
// with every flag given on top.
func (f *benchFlags) options(args []string, stderr io.Writer) (bench.Options, error) {
	o := bench.Defaults()
	if f.quick {
		o = bench.Quick()
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["targets"] || !f.quick {
		o.Targets = nil
		for _, t := range strings.Split(f.targets, ",") {
			switch t = strings.TrimSpace(t); t {
			case bench.Direct, bench.Nginx, bench.Switchover, bench.GoProxy:
				o.Targets = append(o.Targets, t)
			case "":
			default:
				return o, usageError{fmt.Errorf("unknown target %q (want direct, nginx, switchover, go-proxy)", t)}
			}
		}
	}
	ints := map[string]*int{"rounds": &o.Rounds, "streams": &o.Streams, "chunks": &o.Chunks, "open-streams": &o.OpenStreams}
	vals := map[string]int{"rounds": f.rounds, "streams": f.streams, "chunks": f.chunks, "open-streams": f.openStreams}
	for k, p := range ints {
		if set[k] {
			*p = vals[k]
		}
	}
	if set["duration"] {
		o.Duration = f.duration
	}
	if set["interval"] {
		o.Interval = f.interval
	}
	if set["rate"] {
		o.Rate = f.rate
	}
	if set["syscall-rate"] {
		o.SyscallRate = f.syscallRate
	}
	if set["open-rate"] {
		o.OpenRate = f.openRate
	}
	if set["h2"] {
		o.H2 = f.h2
	}
	if set["scale-factor"] {
		o.ScaleFactor = f.scaleFactor
	}
	if o.Rounds < 1 || o.Duration <= 0 || o.Rate <= 0 || o.Chunks < 1 || o.OpenRate <= 0 || o.ScaleFactor <= 0 {
		return o, usageError{errors.New("-rounds, -duration, -rate, -chunks, -open-rate and -scale-factor must be positive")}
	}
	for _, m := range strings.Split(f.only, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !slices.Contains(bench.Measures, m) {
			return o, usageError{fmt.Errorf("unknown measure %q (want %s)", m, strings.Join(bench.Measures, ", "))}
		}
		o.Only = append(o.Only, m)
	}
	o.Wrk = lookTool(f.wrk, stderr)
	o.Nginx = lookTool(f.nginx, stderr)
	o.Strace = lookTool(f.strace, stderr)
	o.SyscallDetail = f.detail
	o.GatewayEnv = f.gatewayEnv
	o.Dir = f.dir
	o.Command = "switchover bench " + strings.Join(args, " ")
	if !f.quiet {
		o.Progress = stderr
	}
	return o, nil
}

// lookTool finds a tool on PATH; empty, or not found (said on stderr),
// gives "".
func lookTool(name string, stderr io.Writer) string {
	if name == "" {
		return ""
	}
	p, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(stderr, "switchover bench: %s not found; going on without it\n", name)
		return ""
	}
	return p
}

func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "reference-proxy" {
		return referenceProxy(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "reference-server" {
		return referenceServer(ctx, args[1:], stderr)
	}
	f := newBenchFlags(stderr)
	if err := parseFlags(f.fs, args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("bench takes no arguments, got %q", f.fs.Args())}
	}
	o, err := f.options(args, stderr)
	if err != nil {
		return err
	}
	if f.dir != "" {
		if err := os.MkdirAll(f.dir, 0o700); err != nil {
			return err
		}
	}
	rep, err := bench.Run(ctx, o)
	if rep != nil {
		var werr error
		if f.asJSON {
			werr = rep.WriteJSON(stdout)
		} else {
			werr = rep.WriteText(stdout)
		}
		err = errors.Join(err, werr)
	}
	return err
}

// referenceProxy is the hidden "bench reference-proxy": the bare
// httputil.ReverseProxy the bench measures next to the gateway, run as a
// process of its own.
func referenceProxy(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench reference-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	upstream := fs.String("upstream", "", "upstream base URL")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *upstream == "" {
		return usageError{errors.New("reference-proxy needs -upstream")}
	}
	return bench.ServeReference(ctx, *listen, *upstream)
}

// referenceServer is the hidden "bench reference-server": net/http's
// server answering every request with the mock upstream's chat completion
// itself, no upstream and nothing else; what net/http's server alone
// costs (docs/performance.md, "The floor of net/http's server").
func referenceServer(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench reference-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return bench.ServeAnswer(ctx, *listen)
}
