package gameday

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/load"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// Options adjust a game day. The zero value runs every scenario as given.
type Options struct {
	// Realtime runs every scenario uncompressed (Compress 1).
	Realtime bool
	// Only, if set, keeps the scenarios with these names.
	Only []string
	// Progress gets a line as each run starts and ends. Nil means none.
	Progress io.Writer
	// Command is recorded in the report.
	Command string
	// Webhook, if set, also gets every run's notifications, as a gateway
	// configured with notifications.webhooks would send them.
	Webhook string
	// Gateway starts the gateway that gateway setups send their load
	// through. Nil means a scenario with a gateway setup fails; client
	// setups build the routing engine themselves (package engine).
	// switchover gameday passes the real gateway.
	Gateway StartGateway
}

// StartGateway starts a gateway built from cfg, serving on ln, for one
// run of a gateway setup: its breaker transitions go to Hooks.OnTransition
// and its notifications to Hooks.Sinks. stop ends it gracefully (requests
// in flight finish, queued notifications are delivered) and returns once
// it has.
type StartGateway func(cfg *config.Config, ln net.Listener, h Hooks) (stop func(), err error)

// Hooks are what a run observes of the gateway it starts.
type Hooks struct {
	Logger       *slog.Logger
	OnTransition func(breaker.Transition)
	Sinks        []notify.Sink
	// Observer hears the gateway's engine events and its probes
	// (gateway.Options.Observer): the run counts the route.EventProbe
	// ones, calls to the regions that no request made.
	Observer route.Observer
}

// probeCount counts a run's health checks and probes (route.EventProbe).
// It is safe for concurrent use.
type probeCount struct{ n atomic.Int64 }

// Observe implements route.Observer.
func (c *probeCount) Observe(e route.Event) {
	if e.Kind == route.EventProbe {
		c.n.Add(1)
	}
}

var _ route.Observer = (*probeCount)(nil)

// Run runs the scenarios, each setup of each in turn, and returns the
// report. Every run gets fresh simulated regions (full quotas, no breaker
// history) and, for gateway setups, a fresh gateway.
func Run(ctx context.Context, scenarios []Scenario, opts Options) (*Report, error) {
	rep := &Report{
		Started:  time.Now(),
		Machine:  fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU()),
		Command:  opts.Command,
		Realtime: opts.Realtime,
	}
	for _, sc := range scenarios {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, sc.Name) {
			continue
		}
		if err := sc.validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		k := sc.Compress
		if opts.Realtime || k <= 0 {
			k = 1
		}
		run := sc.scaled(k)
		res := ScenarioResult{Name: sc.Name, Title: sc.Title, Description: sc.Description, Targets: sc.Targets, Compress: k, Load: run.describeLoad()}
		for _, st := range run.Setups {
			res.Cached = res.Cached || st.Cache != nil
		}
		for _, r := range run.Regions {
			res.Regions = append(res.Regions, RegionInfo{Name: r.Name, MedianLatency: r.Latency.D(), RPM: r.RPM, TPM: r.TPM})
		}
		for _, st := range run.Setups {
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "%s / %s: running (%s)\n", sc.Name, st.Name, res.Load)
			}
			rr, err := runSetup(ctx, run, st, opts)
			if err != nil {
				return nil, fmt.Errorf("scenario %s, setup %s: %w", sc.Name, st.Name, err)
			}
			if opts.Progress != nil {
				s := rr.Summary
				fmt.Fprintf(opts.Progress, "%s / %s: %d requests, %s answered, p50 %s, %.2f calls/request, %s\n",
					sc.Name, st.Name, s.Requests, formatPercent(s.SuccessRate), formatDuration(s.Latency.P50), callsPerRequest(s), rr.Duration.Round(10*time.Millisecond))
			}
			res.Runs = append(res.Runs, rr)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rep.Scenarios = append(rep.Scenarios, res)
	}
	return rep, nil
}

// transitions records breaker changes as they happen.
type transitions struct {
	mu  sync.Mutex
	evs []breaker.Transition
}

func (t *transitions) add(tr breaker.Transition) {
	t.mu.Lock()
	t.evs = append(t.evs, tr)
	t.mu.Unlock()
}

// notes records a run's notifications.
type notes struct {
	mu  sync.Mutex
	got []notify.Notification
}

func (n *notes) Name() string { return "gameday" }

func (n *notes) Send(_ context.Context, x notify.Notification) error {
	n.mu.Lock()
	n.got = append(n.got, x)
	n.mu.Unlock()
	return nil
}

// runSetup runs one setup of a scaled scenario.
func runSetup(ctx context.Context, sc Scenario, st Setup, opts Options) (RunResult, error) {
	rr := RunResult{Setup: st.Name, Description: st.Description, Mode: st.Mode}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	faults := sc.faults(st)
	s, err := sim.Start(ctx, simConfig(sc, faults), sim.WithLogger(quiet))
	if err != nil {
		return rr, fmt.Errorf("starting the simulated regions: %w", err)
	}
	defer s.Close()
	meter := meterCalls(s, outageWindows(sc.Outage, faults))
	defer meter.stop()

	keys := runKeys(sc)
	cfg, err := config.Parse(st.Name, []byte(poolYAML(st, s.Deployments(), opts.Webhook, keys, sc.Slice.D())), os.LookupEnv)
	if err != nil {
		return rr, fmt.Errorf("setup config: %w", err)
	}
	trs := &transitions{}
	sink := &notes{}
	probes := &probeCount{}
	tg, err := startTarget(sc, st, cfg, opts.Gateway, Hooks{Logger: quiet, OnTransition: trs.add, Sinks: []notify.Sink{sink}, Observer: probes})
	if err != nil {
		return rr, err
	}
	stopped := false
	defer func() {
		if !stopped {
			tg.stop()
		}
	}()
	url, client := tg.url, tg.client
	caller := newCaller(sc.Load, url, client, keyOf(keys, mainKey))
	caller.WaitRetryAfter = st.WaitRetryAfter
	if st.MaxWait > 0 {
		caller.Request.MaxWait = st.MaxWait.D()
		if t := st.MaxWait.D() + 30*time.Second; caller.Timeout < t {
			caller.Timeout = t // the caller waits at least as long as it lets the gateway hold it
		}
	}

	// The noise runs beside the main load, from the same moment.
	var noise *load.Result
	var noiseErr error
	var wg sync.WaitGroup
	if n := sc.Noise; n != nil {
		nc := newCaller(*n, url, client, keyOf(keys, noiseKey))
		wg.Go(func() { noise, noiseErr = load.Run(ctx, loadOptions(*n), nc) })
	}
	res, err := load.Run(ctx, loadOptions(sc.Load), caller)
	wg.Wait()
	if err == nil {
		err = noiseErr
	}
	if err != nil {
		return rr, err
	}
	rr.Samples = res.Samples
	rr.Summary = res.Summary
	rr.Duration = time.Since(res.Began)

	rr.Summary.Upstream = upstream(s.Stats(), probes.n.Load(), res, noise, &rr)

	trs.mu.Lock()
	for _, t := range trs.evs {
		rr.Transitions = append(rr.Transitions, Transition{At: t.At.Sub(res.Began), Backend: t.Name, From: t.From.String(), To: t.To.String(), Cause: t.Cause})
	}
	trs.mu.Unlock()
	sort.SliceStable(rr.Transitions, func(i, j int) bool { return rr.Transitions[i].At < rr.Transitions[j].At })
	// The schedule counts from the sim's start, a moment before the load's.
	offset := res.Began.Sub(s.Started())
	for _, f := range faults {
		rr.Faults = append(rr.Faults, FaultWindow{Region: f.Region, Mode: f.Mode, From: f.From.D() - offset, To: f.To.D() - offset})
	}
	if sc.Outage != "" {
		rr.Outage = outage(sc.Outage, rr)
		rr.Windows = windows(sc.Outage, rr, meter, offset)
	}
	// Notifications are delivered in the background: stopping the gateway
	// delivers what is queued; then take what arrived.
	tg.stop()
	stopped = true
	sink.mu.Lock()
	for _, n := range sink.got {
		if n.Kind == notify.KindAdmin {
			continue
		}
		rr.Notifications = append(rr.Notifications, Note{At: n.At.Sub(res.Began), Kind: string(n.Kind), From: n.From, To: n.To, Text: n.Text})
	}
	sink.mu.Unlock()
	return rr, nil
}

// target is what a run's load is sent to: a gateway over loopback, or
// the routing engine inside the caller.
type target struct {
	url    string
	client *http.Client
	// stop ends the gateway (delivering its queued notifications) or
	// retires the engine's breakers.
	stop func()
}

// startTarget starts what st's load goes to: a gateway setup's gateway
// (from start, with hooks h), or for a client setup the engine built
// from cfg as the client's transport, straight to the regions (a noise
// load shares it, as another part of the same application would).
func startTarget(sc Scenario, st Setup, cfg *config.Config, start StartGateway, h Hooks) (*target, error) {
	path := "/v1/" + sc.Load.request().Path()
	if st.Mode != "gateway" {
		eng, err := engine.Build(cfg, nil, engine.Deps{OnTransition: h.OnTransition, Observer: h.Observer})
		if err != nil {
			return nil, err
		}
		return &target{url: "http://client.invalid" + path, client: &http.Client{Transport: eng.Pool("chat-prod")}, stop: eng.Close}, nil
	}
	if start == nil {
		return nil, fmt.Errorf("gameday: a gateway setup needs a gateway to start (Options.Gateway)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	stop, err := start(cfg, ln, h)
	if err != nil {
		ln.Close()
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, IdleConnTimeout: 10 * time.Second}}
	return &target{url: "http://" + ln.Addr().String() + path, client: client, stop: func() {
		client.CloseIdleConnections()
		stop()
	}}, nil
}

// upstream is what the regions saw of a run's main load (stats are the
// regions' counters of both loads; the noise's share of the calls is what
// its answers' x-switchover-attempts say). probes are the run's health
// checks and probes: they stay in Calls, which the regions counted, but
// not in CallsPerRequest, as no request made them. It sets rr.Noise and
// stretches rr.Duration to the noise's end.
func upstream(stats map[string]sim.Stats, probes int64, res, noise *load.Result, rr *RunResult) *load.Upstream {
	up := &load.Upstream{Probes: probes}
	for _, st := range stats {
		up.Calls += st.Calls
		up.Refused += st.Refused
		up.Errors += st.Errors
		up.Answered += st.Answered
	}
	if noise != nil {
		rr.Noise = noiseResult(noise)
		// The regions' counters are both loads'; the noise's share of the
		// calls is what its answers' x-switchover-attempts say.
		up.Calls = max(up.Calls-rr.Noise.Upstream.Calls, 0)
		up.Answered = max(up.Answered-int64(noise.Summary.Succeeded), 0)
		rr.Duration = max(rr.Duration, time.Since(noise.Began))
	}
	if res.Summary.Requests > 0 {
		up.CallsPerRequest = float64(max(up.Calls-up.Probes, 0)) / float64(res.Summary.Requests)
	}
	return up

}

// The names of the gateway keys of a run with a noise load: the main
// load's and the noise's.
const (
	mainKey  = "main"
	noiseKey = "noise"
)

// gatewayKey is a caller's key in a run's gateway configuration.
type gatewayKey struct{ Name, Key string }

// runKeys are the gateway keys of a run of sc: main and noise when it has a
// noise load, none (an open gateway on loopback) otherwise. Keys must be
// at least 16 characters.
func runKeys(sc Scenario) []gatewayKey {
	if sc.Noise == nil {
		return nil
	}
	return []gatewayKey{{mainKey, "gameday-main-caller-key-0123456789"}, {noiseKey, "gameday-noise-caller-key-0123456789"}}
}

// keyOf returns the key named name, or "" when there is none.
func keyOf(keys []gatewayKey, name string) string {
	for _, k := range keys {
		if k.Name == name {
			return k.Key
		}
	}
	return ""
}

// newCaller is a caller sending l's requests to url with key.
func newCaller(l Load, url string, client *http.Client, key string) *load.HTTPCaller {
	return &load.HTTPCaller{
		URL:     url,
		Client:  client,
		Key:     key,
		Request: l.request(),
		Timeout: l.Timeout.D(),
	}
}

// request is the request l sends.
func (l Load) request() load.Request {
	return load.Request{Model: "chat-prod", Prompt: l.Prompt, MaxTokens: l.MaxTokens, Stream: l.Stream, API: l.API, MaxWait: l.MaxWait.D(), Repeat: l.Repeat}
}

func loadOptions(l Load) load.Options {
	return load.Options{Rate: l.Rate, Concurrency: l.Concurrency, Duration: l.Duration.D(), Total: l.Total}
}

// noiseResult summarizes a noise load's run. Its model calls are read from
// the x-switchover-attempts header of each answer (a request that ended
// without one, such as a client timeout, or answered from the cache,
// counts none).
func noiseResult(res *load.Result) *load.Summary {
	sum := res.Summary
	up := &load.Upstream{}
	for _, x := range res.Samples {
		if !x.FromCache() { // a cached answer replays the attempts of the call it repeats
			up.Calls += int64(x.Attempts)
		}
	}
	if sum.Requests > 0 {
		up.CallsPerRequest = float64(up.Calls) / float64(sum.Requests)
	}
	sum.Upstream = up
	return &sum
}

// simConfig is the scenario's regions as simulated Azure deployments, with
// faults (the scenario's and the setup's) on their schedule.
func simConfig(sc Scenario, faults []Fault) sim.Config {
	seed := sc.Seed
	if seed == 0 {
		seed = 1
	}
	cfg := sim.Config{Seed: seed, Slice: sc.Slice.D()}
	for _, r := range sc.Regions {
		spread := r.Spread
		if spread == 0 {
			spread = 0.3
		}
		cfg.Deployments = append(cfg.Deployments, simRegion(r, sim.Deployment{
			Name: r.Name, Region: r.Name, Flavour: sim.Azure, Deployment: "chat-prod",
			Latency: sim.Latency{Median: r.Latency.D(), Spread: spread, FirstToken: r.Latency.D() / 2, PerToken: 10 * time.Millisecond},
			Quota:   sim.Quota{RPM: r.RPM, TPM: r.TPM},
		}))
	}
	for _, f := range faults {
		cfg.Schedule = append(cfg.Schedule, sim.ScheduledFault{
			Deployment: f.Region, From: f.From.D(), To: f.To.D(),
			Fault: sim.Fault{Mode: sim.FaultMode(f.Mode), Factor: f.Factor, Rate: f.Rate, Status: f.Status, After: f.After},
		})
	}
	return cfg
}

// poolYAML is the switchover configuration of a setup: one backend per
// simulated region, named after it, the pool chat-prod, and keys if any.
// Client setups build their engine from the same configuration as gateway
// setups, so the two differ only by the network hop. A Defaults setup gets
// no timeouts, breaker, probe or notification settings, and no retry block
// unless it sets Attempts: switchover's shipped defaults.
//
// slice is the regions' quota slice (compressed): a quota-aware gateway
// waits that long for a region that said it had nothing left, as it would
// wait 10 s for Azure's.
func poolYAML(st Setup, eps []sim.Endpoint, webhook string, keys []gatewayKey, slice time.Duration) string {
	var y strings.Builder
	// The run's gateway has no load balancer to wait for: it stops at once.
	y.WriteString("log: {level: error}\nserver: {drain_delay: 0s}\n")
	hook := ""
	if webhook != "" {
		hook = fmt.Sprintf("webhooks: [{url: %q}]", webhook)
	}
	switch {
	case st.Defaults && hook != "":
		fmt.Fprintf(&y, "notifications: {%s}\n", hook)
	case !st.Defaults:
		// A short flap window, so that a failover and the failback seconds
		// later (in compressed time) are told as such, not as flapping.
		if hook != "" {
			hook = ", " + hook
		}
		fmt.Fprintf(&y, "notifications: {flap_window: 1s%s}\n", hook)
		writeBackendDefaults(&y, st)
	}
	if len(keys) > 0 {
		y.WriteString("keys:\n")
		for _, k := range keys {
			limits := ""
			if l := st.NoiseLimits; l != nil && k.Name == noiseKey {
				for _, f := range []struct {
					name string
					n    int
				}{{"rpm", l.RPM}, {"tpm", l.TPM}, {"max_concurrent", l.MaxConcurrent}} {
					if f.n > 0 {
						limits += fmt.Sprintf(", %s: %d", f.name, f.n)
					}
				}
			}
			fmt.Fprintf(&y, "  - {name: %s, key: %q%s}\n", k.Name, k.Key, limits)
		}
	}
	quota := ""
	switch {
	case !st.Defaults && !st.QuotaAware:
		quota = ", quota_aware: false"
	case slice > 0 && slice != 10*time.Second:
		quota = fmt.Sprintf(", quota_slice: %s", slice)
	}
	y.WriteString("backends:\n")
	for _, e := range eps {
		y.WriteString(backendLine(e, quota))
	}
	y.WriteString("pools:\n  - name: chat-prod\n")
	switch {
	case !st.Defaults:
		fmt.Fprintf(&y, "    retry: {attempts: %d}\n", max(st.Attempts, 1))
	case st.Attempts > 0:
		fmt.Fprintf(&y, "    retry: {attempts: %d}\n", st.Attempts)
	}
	if !st.Defaults && !st.QuotaAware {
		// A setup standing for another gateway or a client: no retry
		// budget either.
		y.WriteString("    retry_budget: {disabled: true}\n")
	}
	if h := st.Hedge; h != nil {
		y.WriteString("    hedge: {")
		sep := ""
		if h.After != "" {
			fmt.Fprintf(&y, "after: %s", h.After)
			sep = ", "
		}
		if h.Share > 0 {
			fmt.Fprintf(&y, "%sshare: %g", sep, h.Share)
		}
		y.WriteString("}\n")
	}
	if c := st.Cache; c != nil {
		fmt.Fprintf(&y, "    cache: {ttl: %s, coalesce: %v}\n", c.TTL.D(), c.coalesce())
	}
	y.WriteString("    members:\n")
	for _, m := range st.Members {
		fmt.Fprintf(&y, "      - {backend: %s, priority: %d, weight: %d%s}\n", m.Region, max(m.Priority, 1), max(m.Weight, 1), memberModel(eps, m.Region))
	}
	return y.String()
}

// writeBackendDefaults writes the backend_defaults block of a setup that is
// not a Defaults one: its timeouts (first byte 30s, stream first byte 10s,
// attempt 60s unless set) and its breaker, or none.
func writeBackendDefaults(y *strings.Builder, st Setup) {
	fb, sfb, to := st.FirstByteTimeout, st.StreamFirstByteTimeout, st.Timeout
	if fb == 0 {
		fb = Duration(30 * time.Second)
	}
	if sfb == 0 {
		sfb = Duration(10 * time.Second)
	}
	if to == 0 {
		to = Duration(60 * time.Second)
	}
	fb, sfb = min(fb, to), min(sfb, to)
	breakerYAML := "{disabled: true}"
	if b := st.Breaker; b != nil {
		statuses := `[429, "500-599"]`
		if len(b.Statuses) > 0 {
			statuses = `["` + strings.Join(b.Statuses, `", "`) + `"]`
		}
		breakerYAML = fmt.Sprintf("{failures: %d, window: %s, trip: %s, statuses: %s, follow_retry_after: %v, max_retry_after: %s",
			max(b.Failures, 1), durOr(b.Window, 30*time.Second), durOr(b.Trip, 60*time.Second), statuses, b.FollowRetryAfter, max(durOr(b.Trip, 60*time.Second), 5*time.Minute))
		if !st.QuotaAware {
			// A setup standing for another gateway or a client: a fixed
			// trip, and a backend back from one gets its share at once.
			breakerYAML += fmt.Sprintf(", max_trip: %s, slow_start: 0s", durOr(b.Trip, 60*time.Second))
		}
		breakerYAML += "}"
	}
	fmt.Fprintf(y, "backend_defaults:\n  first_byte_timeout: %s\n  stream_first_byte_timeout: %s\n  timeout: %s\n  breaker: %s\n",
		fb.D(), sfb.D(), to.D(), breakerYAML)
}

func durOr(d Duration, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d.D()
}

// outage reads the primary's outage off a run.
func outage(primary string, rr RunResult) *OutageResult {
	o := &OutageResult{Primary: primary, Moved: -1, Benched: -1, Back: -1, Closed: -1}
	var f *FaultWindow
	for i := range rr.Faults {
		if rr.Faults[i].Region == primary {
			f = &rr.Faults[i]
			break
		}
	}
	if f == nil {
		return o
	}
	samples := append([]load.Sample(nil), rr.Samples...)
	sort.Slice(samples, func(i, j int) bool { return samples[i].End() < samples[j].End() })
	for _, s := range samples {
		if s.End() >= f.From && s.Start <= f.To {
			o.count(s)
		}
		if s.OK && s.Backend != primary && s.End() >= f.From && o.Moved < 0 {
			o.Moved = s.End() - f.From
		}
		if s.OK && s.Backend == primary && s.Start >= f.To && o.Back < 0 {
			o.Back = s.End() - f.To
		}
	}
	for _, t := range rr.Transitions {
		if t.Backend != primary {
			continue
		}
		if t.To == "open" && t.At >= f.From && o.Benched < 0 {
			o.Benched = t.At - f.From
		}
		if t.To == "closed" && t.At >= f.To && o.Closed < 0 {
			o.Closed = t.At - f.To
		}
	}
	return o
}

// count adds s, a request in flight during the outage, to o.
func (o *OutageResult) count(s load.Sample) {
	o.Requests++
	o.LongestWait = max(o.LongestWait, s.Latency)
	if !s.OK {
		o.Failed++
	}
	if s.Status == http.StatusServiceUnavailable || s.Status == http.StatusTooManyRequests {
		o.Refused++
		if s.RetryAfter > 0 {
			o.WithRetryAfter++
			o.LongestRetryAfter = max(o.LongestRetryAfter, s.RetryAfter)
		}
	}
}

func callsPerRequest(s load.Summary) float64 {
	if s.Upstream == nil {
		return 0
	}
	return s.Upstream.CallsPerRequest
}
