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

func loadCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: switchover load [flags]

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
`)
		fs.PrintDefaults()
	}
	url := fs.String("url", "", "URL of the calls (gateway or backend) (default http://127.0.0.1:8080/v1/chat/completions, or …/v1/responses with -api responses)")
	api := fs.String("api", "chat", "chat (chat completions) or responses (the Responses API)")
	model := fs.String("model", "chat-prod", "model (the gateway's pool)")
	key := fs.String("key", os.Getenv("SWITCHOVER_KEY"), "key sent as Bearer and api-key (default $SWITCHOVER_KEY)")
	rate := fs.Float64("rate", 0, "open model: requests per second")
	conc := fs.Int("concurrency", 0, "closed model: callers")
	duration := fs.Duration("duration", 30*time.Second, "how long to send")
	total := fs.Int("n", 0, "stop after this many requests (with -concurrency: a burst)")
	prompt := fs.String("prompt", "", "user message (default a one-line greeting)")
	maxTokens := fs.Int("max-tokens", 16, "max_tokens of each request (0: leave it out)")
	stream := fs.Bool("stream", false, "stream the answers (reports time to first byte)")
	timeout := fs.Duration("timeout", 60*time.Second, "per-request timeout, waits included")
	simURL := fs.String("sim", "", "simulator control URL (http://host:port/_sim) to count model calls")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	quiet := fs.Bool("q", false, "no live progress")
	client := fs.String("client", "", "client-side: a switchover config whose pool -model runs in this process")
	strategy := fs.String("strategy", "", "client-side: direct, weighted or sequential over the -region flags")
	var regions regionFlags
	fs.Var(&regions, "region", "client-side region NAME=URL (Azure endpoint) or NAME=openai:URL; repeat")
	weights := fs.String("weights", "", "client-side: weights for -strategy weighted, e.g. 90,5,5")
	cooldown := fs.Duration("cooldown", 0, "client-side: skip a region this long after it failed (0: remember nothing)")
	attempts := fs.Int("attempts", 0, "client-side: attempts per request (default: 1 direct, else the number of regions)")
	waitRA := fs.Bool("wait-retry-after", false, "sleep for a refusal's Retry-After and try again, within -timeout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("load takes no arguments, got %q", fs.Args())}
	}
	if (*rate > 0) == (*conc > 0) {
		return usageError{errors.New("load needs exactly one of -rate or -concurrency")}
	}
	if *client != "" && *strategy != "" {
		return usageError{errors.New("use -client or -strategy, not both")}
	}
	if *api != "chat" && *api != load.APIResponses {
		return usageError{fmt.Errorf("-api must be chat or responses, not %q", *api)}
	}
	req := load.Request{Model: *model, Prompt: *prompt, MaxTokens: *maxTokens, Stream: *stream, API: *api}
	if *url == "" {
		*url = "http://127.0.0.1:8080/v1/" + req.Path()
	}

	caller := &load.HTTPCaller{
		URL:            *url,
		Key:            *key,
		Request:        req,
		Timeout:        *timeout,
		WaitRetryAfter: *waitRA,
	}
	var cfgYAML []byte
	cfgName := *client
	switch {
	case *client != "":
		b, err := os.ReadFile(*client)
		if err != nil {
			return err
		}
		cfgYAML = b
	case *strategy != "":
		st := load.Strategy{Kind: *strategy, Regions: regions, CoolDown: *cooldown, Attempts: *attempts}
		for _, w := range strings.Split(*weights, ",") {
			if w = strings.TrimSpace(w); w != "" {
				n, err := strconv.Atoi(w)
				if err != nil || n < 1 {
					return usageError{fmt.Errorf("bad weight %q", w)}
				}
				st.Weights = append(st.Weights, n)
			}
		}
		y, err := st.Config(*model)
		if err != nil {
			return usageError{err}
		}
		cfgYAML, cfgName = []byte(y), "strategy"
	}
	target := caller.URL
	if cfgYAML != nil {
		pool, closePool, err := load.ClientPool(cfgName, cfgYAML, *model)
		if err != nil {
			return configError{err}
		}
		defer closePool()
		caller.Client = &http.Client{Transport: pool}
		caller.URL = "http://client.invalid/v1/" + req.Path()
		target = "client-side pool " + pool.Name
	}

	var before load.Upstream
	if *simURL != "" {
		var err error
		if before, err = load.SimStats(ctx, *simURL); err != nil {
			return err
		}
	}
	opts := load.Options{Rate: *rate, Concurrency: *conc, Duration: *duration, Total: *total}
	if *total > 0 && !flagSet(fs, "duration") {
		opts.Duration = 0
	}
	if !*quiet {
		opts.Progress = stderr
		fmt.Fprintf(stderr, "switchover load: %s, %s\n", target, describe(opts))
	}
	res, err := load.Run(ctx, opts, caller)
	if err != nil {
		return usageError{err}
	}
	s := res.Summary
	if *simURL != "" {
		after, err := load.SimStats(context.Background(), *simURL)
		if err != nil {
			return err
		}
		u := after.Sub(before)
		if s.Requests > 0 {
			u.CallsPerRequest = float64(u.Calls) / float64(s.Requests)
		}
		s.Upstream = &u
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	load.WriteSummary(stdout, s, *stream)
	return nil
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
