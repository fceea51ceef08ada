package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// regionFlags collects -region name=URL (azure) or name=openai:URL.
type regionFlags []load.Region

func (r *regionFlags) String() string { return fmt.Sprint(*r) }

func (r *regionFlags) Set(v string) error {
	name, target, ok := strings.Cut(v, "=")
	if !ok || name == "" || target == "" {
		return fmt.Errorf("want NAME=URL or NAME=openai:URL, got %q", v)
	}
	reg := load.Region{Name: name, Type: "azure", URL: target}
	for _, t := range []string{"azure", "openai"} {
		if rest, ok := strings.CutPrefix(target, t+":"); ok && !strings.HasPrefix(rest, "//") {
			reg.Type, reg.URL = t, rest
		}
	}
	*r = append(*r, reg)
	return nil
}

const loadUsage = `Usage: switchover load [flags]

Sends chat completions at a fixed rate (open model, -rate) or from N callers
(closed model, -concurrency) and reports success, latency percentiles,
throughput, goodput, failovers and, with -sim, model calls per request.

Targets: the gateway or any OpenAI-compatible URL (-url), or a client-side
strategy run inside this process: -client FILE (a switchover config; its
pool named by -model), or -strategy with -region flags.

Examples:
  switchover load -rate 5 -duration 30s
  switchover load -rate 2 -duration 60s -sim http://127.0.0.1:18081/_sim
  switchover load -strategy weighted -weights 90,5,5 -cooldown 60s \
    -region uksouth=http://127.0.0.1:18081 -region swedencentral=http://127.0.0.1:18082 \
    -region westeurope=openai:http://127.0.0.1:18083/v1 -rate 2 -duration 60s

Flags:
`

// loadFlags are the flags of switchover load, each field the flag of its
// name (conc is -concurrency, total -n, waitRA -wait-retry-after);
// newLoadFlags gives their defaults and help.
type loadFlags struct {
	fs        *flag.FlagSet
	url       string
	api       string
	repeat    float64
	model     string
	key       string
	rate      float64
	conc      int
	duration  time.Duration
	total     int
	prompt    string
	maxTokens int
	stream    bool
	timeout   time.Duration
	simURL    string
	asJSON    bool
	quiet     bool
	client    string
	strategy  string
	regions   regionFlags
	weights   string
	cooldown  time.Duration
	attempts  int
	waitRA    bool
}

// newLoadFlags defines the flags of switchover load; its usage goes to
// stderr.
func newLoadFlags(stderr io.Writer) *loadFlags {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, loadUsage)
		fs.PrintDefaults()
	}
	f := &loadFlags{fs: fs}
	fs.StringVar(&f.url, "url", "", "URL of the calls (gateway or backend) (default http://127.0.0.1:8080/v1/chat/completions, or …/v1/responses with -api responses)")
	fs.StringVar(&f.api, "api", "chat", "chat (chat completions) or responses (the Responses API)")
	fs.StringVar(&f.model, "model", "chat-prod", "model (the gateway's pool)")
	fs.StringVar(&f.key, "key", os.Getenv("SWITCHOVER_KEY"), "key sent as Bearer and api-key (default $SWITCHOVER_KEY)")
	fs.Float64Var(&f.rate, "rate", 0, "open model: requests per second")
	fs.IntVar(&f.conc, "concurrency", 0, "closed model: callers")
	fs.DurationVar(&f.duration, "duration", 30*time.Second, "how long to send")
	fs.IntVar(&f.total, "n", 0, "stop after this many requests (with -concurrency: a burst)")
	fs.StringVar(&f.prompt, "prompt", "", "user message (default a one-line greeting)")
	fs.Float64Var(&f.repeat, "repeat", 0, "share of requests (0 to <1) that repeat an earlier one byte for byte; the others get prompts of their own (0: every request the same)")
	fs.IntVar(&f.maxTokens, "max-tokens", 16, "max_tokens of each request (0: leave it out)")
	fs.BoolVar(&f.stream, "stream", false, "stream the answers (reports time to first byte)")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "per-request timeout, waits included")
	fs.StringVar(&f.simURL, "sim", "", "simulator control URL (http://host:port/_sim) to count model calls")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as JSON")
	fs.BoolVar(&f.quiet, "q", false, "no live progress")
	fs.StringVar(&f.client, "client", "", "client-side: a switchover config whose pool -model runs in this process")
	fs.StringVar(&f.strategy, "strategy", "", "client-side: direct, weighted or sequential over the -region flags")
	fs.Var(&f.regions, "region", "client-side region NAME=URL (Azure endpoint) or NAME=openai:URL; repeat")
	fs.StringVar(&f.weights, "weights", "", "client-side: weights for -strategy weighted, e.g. 90,5,5")
	fs.DurationVar(&f.cooldown, "cooldown", 0, "client-side: skip a region this long after it failed (0: remember nothing)")
	fs.IntVar(&f.attempts, "attempts", 0, "client-side: attempts per request (default: 1 direct, else the number of regions)")
	fs.BoolVar(&f.waitRA, "wait-retry-after", false, "sleep for a refusal's Retry-After and try again, within -timeout")
	return f
}

// parse parses args and checks that the flags go together.
func (f *loadFlags) parse(args []string) error {
	if err := parseFlags(f.fs, args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return usageError{fmt.Errorf("load takes no arguments, got %q", f.fs.Args())}
	}
	if (f.rate > 0) == (f.conc > 0) {
		return usageError{errors.New("load needs exactly one of -rate or -concurrency")}
	}
	if f.client != "" && f.strategy != "" {
		return usageError{errors.New("use -client or -strategy, not both")}
	}
	if f.api != "chat" && f.api != load.APIResponses {
		return usageError{fmt.Errorf("-api must be chat or responses, not %q", f.api)}
	}
	if f.repeat < 0 || f.repeat >= 1 {
		return usageError{fmt.Errorf("-repeat is a share of the requests, from 0 up to (not including) 1, not %g", f.repeat)}
	}
	return nil
}

func loadCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newLoadFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	caller, target, closePool, err := f.caller()
	if err != nil {
		return err
	}
	defer closePool()
	s, err := f.run(ctx, caller, target, stderr)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	load.WriteSummary(stdout, s, f.stream)
	return nil
}

// caller builds the caller of the run and names its target: the -url, or
// a client-side pool (-client or -strategy) that closePool closes.
func (f *loadFlags) caller() (caller *load.HTTPCaller, target string, closePool func(), err error) {
	req := load.Request{Model: f.model, Prompt: f.prompt, MaxTokens: f.maxTokens, Stream: f.stream, API: f.api, Repeat: f.repeat}
	url := f.url
	if url == "" {
		url = "http://127.0.0.1:8080/v1/" + req.Path()
	}
	caller = &load.HTTPCaller{
		URL:            url,
		Key:            f.key,
		Request:        req,
		Timeout:        f.timeout,
		WaitRetryAfter: f.waitRA,
	}
	cfgName, cfgYAML, err := f.clientConfig()
	if err != nil {
		return nil, "", nil, err
	}
	if cfgYAML == nil {
		return caller, caller.URL, func() {}, nil
	}
	pool, closePool, err := load.ClientPool(cfgName, cfgYAML, f.model)
	if err != nil {
		return nil, "", nil, configError{err}
	}
	caller.Client = &http.Client{Transport: pool}
	caller.URL = "http://client.invalid/v1/" + req.Path()
	return caller, "client-side pool " + pool.Name, closePool, nil
}

// clientConfig is the config of the client-side pool and the name its
// problems give: the -client file, or the one -strategy makes. Without
// either, yaml is nil.
func (f *loadFlags) clientConfig() (name string, yaml []byte, err error) {
	switch {
	case f.client != "":
		b, err := os.ReadFile(f.client)
		if err != nil {
			return "", nil, err
		}
		return f.client, b, nil
	case f.strategy != "":
		st := load.Strategy{Kind: f.strategy, Regions: f.regions, CoolDown: f.cooldown, Attempts: f.attempts}
		if st.Weights, err = parseWeights(f.weights); err != nil {
			return "", nil, err
		}
		y, err := st.Config(f.model)
		if err != nil {
			return "", nil, usageError{err}
		}
		return "strategy", []byte(y), nil
	}
	return "", nil, nil
}

// parseWeights parses -weights: positive integers separated by commas.
func parseWeights(s string) ([]int, error) {
	var weights []int
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			n, err := strconv.Atoi(w)
			if err != nil || n < 1 {
				return nil, usageError{fmt.Errorf("bad weight %q", w)}
			}
			weights = append(weights, n)
		}
	}
	return weights, nil
}

// run sends the load and sums it up, with the simulator's count of model
// calls when -sim names one. Progress goes to stderr unless -q.
func (f *loadFlags) run(ctx context.Context, caller *load.HTTPCaller, target string, stderr io.Writer) (load.Summary, error) {
	var before load.Upstream
	if f.simURL != "" {
		var err error
		if before, err = load.SimStats(ctx, f.simURL); err != nil {
			return load.Summary{}, err
		}
	}
	opts := load.Options{Rate: f.rate, Concurrency: f.conc, Duration: f.duration, Total: f.total}
	if f.total > 0 && !flagSet(f.fs, "duration") {
		opts.Duration = 0
	}
	if !f.quiet {
		opts.Progress = stderr
		fmt.Fprintf(stderr, "switchover load: %s, %s\n", target, describe(opts))
	}
	res, err := load.Run(ctx, opts, caller)
	if err != nil {
		return load.Summary{}, usageError{err}
	}
	s := res.Summary
	if f.simURL != "" {
		after, err := load.SimStats(context.Background(), f.simURL)
		if err != nil {
			return load.Summary{}, err
		}
		u := after.Sub(before)
		if s.Requests > 0 {
			u.CallsPerRequest = float64(u.Calls) / float64(s.Requests)
		}
		s.Upstream = &u
	}
	return s, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func describe(o load.Options) string {
	var s string
	if o.Rate > 0 {
		s = fmt.Sprintf("%.4g req/s (open model)", o.Rate)
	} else {
		s = fmt.Sprintf("%d callers (closed model)", o.Concurrency)
	}
	if o.Total > 0 {
		s += fmt.Sprintf(", %d requests", o.Total)
	}
	if o.Duration > 0 {
		s += fmt.Sprintf(", for %s", o.Duration)
	}
	return s
}
