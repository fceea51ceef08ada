package gameday

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchover-gw/switchover/config"
)

// Duration is written as "30s" in YAML.
type Duration = config.Duration

// Scenario is a situation to rehearse: simulated regions, a load, faults,
// and the setups to compare under it. Times are given at real scale;
// Compress shrinks them so a run takes seconds.
type Scenario struct {
	// Name is a short identifier (for -only and file names).
	Name string `yaml:"name"`
	// Title and Description say what the scenario models.
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	// Compress runs the scenario this many times faster: quota slices,
	// load duration, fault times and breaker windows and trips are divided
	// by it, arrival rates and per-minute quotas multiplied. Model latency
	// and network timeouts are not scaled. Default 1 (real time);
	// --realtime forces 1.
	Compress float64 `yaml:"compress"`
	// Slice is the simulated quota slice. Default 10s, as Azure checks.
	Slice Duration `yaml:"slice"`
	// Seed makes the simulated regions' random draws repeatable. Default 1.
	Seed    int64    `yaml:"seed"`
	Regions []Region `yaml:"regions"`
	Load    Load     `yaml:"load"`
	Faults  []Fault  `yaml:"faults"`
	// Noise, if set, is a second load sent at the same time as Load by
	// another caller with its own gateway key (Load uses key "main", Noise
	// key "noise"). The report's summary and tables are Load's, the
	// victims'; the noise gets a line of its own. Optional.
	Noise *Load `yaml:"noise"`
	// Outage names the region whose outage (its first fault) is read off
	// each run: failed requests, time until traffic moved, time until it
	// came back. Optional.
	Outage string `yaml:"outage"`
	// Targets says what a good result looks like (for example "≤ 1% of
	// requests during the outage fail"). It is printed with the report,
	// not checked. Optional.
	Targets string  `yaml:"targets"`
	Setups  []Setup `yaml:"setups"`
}

// Region is one simulated Azure OpenAI region.
type Region struct {
	Name string `yaml:"name"`
	// Latency is the median time to an answer; Spread its lognormal sigma
	// (default 0.3).
	Latency Duration `yaml:"latency"`
	Spread  float64  `yaml:"spread"`
	// RPM and TPM are the quota; 0 means unlimited.
	RPM int `yaml:"rpm"`
	TPM int `yaml:"tpm"`
	// Provider is what the region simulates: "azure" (Azure OpenAI, the
	// default), "anthropic" (Anthropic's API) or "bedrock" (Claude on
	// Amazon Bedrock, SigV4-signed); see providers.go.
	Provider string `yaml:"provider"`
}

// Load is the traffic of every run of a scenario.
type Load struct {
	// Rate is an open-model arrival rate (requests per second); or
	// Concurrency callers in a closed model.
	Rate        float64 `yaml:"rate"`
	Concurrency int     `yaml:"concurrency"`
	// Duration is how long requests are sent; Total, if set, stops after
	// that many (a burst).
	Duration Duration `yaml:"duration"`
	Total    int      `yaml:"total"`
	// MaxTokens and Prompt shape each request (and its token estimate).
	MaxTokens int    `yaml:"max_tokens"`
	Prompt    string `yaml:"prompt"`
	Stream    bool   `yaml:"stream"`
	// API is "chat" (chat completions, the default) or "responses" (the
	// Responses API).
	API string `yaml:"api"`
	// MaxWait, if set, is sent as x-switchover-max-wait: the gateway may
	// hold each request that long for quota (not scaled by compression:
	// it is the caller's patience in real time).
	MaxWait Duration `yaml:"max_wait"`
	// Timeout bounds each request, waits included. Default 60s.
	Timeout Duration `yaml:"timeout"`
	// Repeat, if set, makes every request's prompt its own except for
	// this share of the requests (0 to 1, 1 excluded), which repeat an
	// earlier request's body byte for byte: what a response cache can
	// answer (load.Request.Repeat). 0, the default, sends the same body
	// every time.
	Repeat float64 `yaml:"repeat"`
}

// Fault is a fault in force on a region from From to To, relative to the
// start of the run.
type Fault struct {
	Region string   `yaml:"region"`
	Mode   string   `yaml:"mode"`
	From   Duration `yaml:"from"`
	To     Duration `yaml:"to"`
	// Factor is the slow-down of mode slow; Rate the failure fraction of
	// mode error_rate and Status its status (500 or 503; 0, the default,
	// either with equal chance); After the events stall_stream,
	// drop_stream and truncate_stream send first (the simulator's default
	// 3 when 0).
	Factor float64 `yaml:"factor"`
	Rate   float64 `yaml:"rate"`
	Status int     `yaml:"status"`
	After  int     `yaml:"after"`
}

// Setup is one way of failing over, to compare with the others.
type Setup struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Mode is "gateway" (load goes through switchover over loopback HTTP)
	// or "client" (the routing engine runs inside the caller and calls
	// the regions directly, as a client-side failover library would).
	Mode string `yaml:"mode"`
	// Defaults writes a gateway configuration with no timeouts, no
	// breaker and no probe, so that switchover's shipped defaults apply
	// exactly as they do for a user who writes the README's short config.
	// Breaker and the timeouts must then be unset, and Attempts 0 means
	// the shipped default (no retry block). The shipped breaker window and
	// trip and the timeouts are not in the configuration, so Compress
	// cannot scale them: a scenario with a defaults setup should run at
	// Compress 1.
	Defaults bool `yaml:"defaults"`
	// Members place regions in the pool. Regions not listed get no
	// traffic.
	Members []Member `yaml:"members"`
	// Attempts per request, the first included. Default 1 (no retry); in
	// a Defaults setup, 0 is switchover's shipped default.
	Attempts int `yaml:"attempts"`
	// Breaker is the sin bin on every member; none when absent.
	Breaker *Breaker `yaml:"breaker"`
	// Faults are in force in this setup's runs only, besides the
	// scenario's (for example the same scenario with one region's key
	// revoked, then with its deployment deleted). Optional.
	Faults []Fault `yaml:"faults"`
	// Timeouts of each attempt. Defaults: first byte 30s, stream first
	// byte 10s, whole attempt 60s.
	FirstByteTimeout       Duration `yaml:"first_byte_timeout"`
	StreamFirstByteTimeout Duration `yaml:"stream_first_byte_timeout"`
	Timeout                Duration `yaml:"timeout"`
	// WaitRetryAfter makes the caller sleep for a refusal's Retry-After and
	// try again while its request timeout allows.
	WaitRetryAfter bool `yaml:"wait_retry_after"`
	// QuotaAware has the gateway read the regions' rate-limit headers and
	// send no call they say would be refused, and cap its retries with a
	// retry budget: switchover's defaults, so a Defaults setup always has
	// them. Default false for the others, which stand for gateways and
	// clients that do neither.
	QuotaAware bool `yaml:"quota_aware"`
	// MaxWait, if set, makes this setup's callers patient: each request
	// carries x-switchover-max-wait, and the gateway holds it that long
	// for quota (real time, not compressed); the caller's timeout is at
	// least that plus 30 s.
	MaxWait Duration `yaml:"max_wait"`
	// Hedge, if set, hedges the gateway's slow requests (pools[].hedge):
	// After is a duration or a quantile such as p90, Share the most
	// hedged share of requests. Gateway setups only.
	Hedge *Hedge `yaml:"hedge"`
	// NoiseLimits, if set, are the noise key's limits in this setup's
	// gateway (keys[].rpm, tpm, max_concurrent): what a per-team key
	// does for the other callers. Per-minute figures are scaled like the
	// regions' quotas. Gateway setups of a scenario with a noise load
	// only.
	NoiseLimits *KeyLimits `yaml:"noise_limits"`
	// Cache, if set, turns on the gateway's response cache and request
	// coalescing for the pool (pools[].cache). None when absent. Gateway
	// setups only.
	Cache *Cache `yaml:"cache"`
}

// Cache is a setup's pools[].cache. Its TTL is scenario time, scaled
// by compression like the breaker's trip.
type Cache struct {
	// TTL is how long an answer is replayed; 0 stores nothing (then
	// Coalesce must be on).
	TTL Duration `yaml:"ttl"`
	// Coalesce makes identical calls in flight share one model call.
	// Default true, as in the gateway.
	Coalesce *bool `yaml:"coalesce"`
}

// coalesce reports whether c coalesces identical calls in flight.
func (c *Cache) coalesce() bool { return c.Coalesce == nil || *c.Coalesce }

// KeyLimits are a gateway key's limits in a setup.
type KeyLimits struct {
	RPM           int `yaml:"rpm"`
	TPM           int `yaml:"tpm"`
	MaxConcurrent int `yaml:"max_concurrent"`
}

// Hedge is a setup's pools[].hedge.
type Hedge struct {
	After string  `yaml:"after"`
	Share float64 `yaml:"share"`
}

// Member is a region's place in a setup's pool.
type Member struct {
	Region   string `yaml:"region"`
	Priority int    `yaml:"priority"`
	Weight   int    `yaml:"weight"`
}

// Breaker is a setup's sin bin.
type Breaker struct {
	Failures int      `yaml:"failures"`
	Window   Duration `yaml:"window"`
	Trip     Duration `yaml:"trip"`
	// Statuses that count; default 429 and 5xx.
	Statuses []string `yaml:"statuses"`
	// FollowRetryAfter benches a region for exactly its Retry-After (when
	// it sent one) instead of Trip.
	FollowRetryAfter bool `yaml:"follow_retry_after"`
}

// File is the YAML file of `switchover gameday -f`.
type File struct {
	Scenarios []Scenario `yaml:"scenarios"`
}

// LoadFile reads scenarios from a YAML file; unknown fields are errors.
func LoadFile(path string) ([]Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range f.Scenarios {
		if err := f.Scenarios[i].validate(); err != nil {
			return nil, fmt.Errorf("%s: scenario %d (%s): %w", path, i, f.Scenarios[i].Name, err)
		}
	}
	if len(f.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: no scenarios", path)
	}
	return f.Scenarios, nil
}

func (s *Scenario) validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("a scenario needs a name"))
	}
	regions := map[string]bool{}
	for _, r := range s.Regions {
		if r.Name == "" || regions[r.Name] {
			errs = append(errs, fmt.Errorf("region names must be set and unique (%q)", r.Name))
		}
		switch r.Provider {
		case "", ProviderAzure, ProviderAnthropic, ProviderBedrock:
		default:
			errs = append(errs, fmt.Errorf("region %q: provider must be azure, anthropic or bedrock, not %q", r.Name, r.Provider))
		}
		regions[r.Name] = true
	}
	if len(s.Regions) == 0 {
		errs = append(errs, errors.New("no regions"))
	}
	errs = append(errs, s.Load.validate("load")...)
	if s.Noise != nil {
		errs = append(errs, s.Noise.validate("noise")...)
	}
	errs = append(errs, validateFaults("", s.Faults, regions)...)
	if s.Outage != "" && !regions[s.Outage] {
		errs = append(errs, fmt.Errorf("outage names unknown region %q", s.Outage))
	}
	if len(s.Setups) == 0 {
		errs = append(errs, errors.New("no setups"))
	}
	for _, st := range s.Setups {
		if st.Mode != "gateway" && st.Mode != "client" {
			errs = append(errs, fmt.Errorf("setup %q: mode must be gateway or client", st.Name))
		}
		if len(st.Members) == 0 {
			errs = append(errs, fmt.Errorf("setup %q: no members", st.Name))
		}
		for _, m := range st.Members {
			if !regions[m.Region] {
				errs = append(errs, fmt.Errorf("setup %q: unknown region %q", st.Name, m.Region))
			}
		}
		errs = append(errs, validateFaults(fmt.Sprintf("setup %q: ", st.Name), st.Faults, regions)...)
		if st.Defaults && (st.Breaker != nil || st.FirstByteTimeout != 0 || st.StreamFirstByteTimeout != 0 || st.Timeout != 0) {
			errs = append(errs, fmt.Errorf("setup %q: a defaults setup takes switchover's shipped breaker and timeouts; remove breaker and the timeouts", st.Name))
		}
		if st.Hedge != nil && st.Mode != "gateway" {
			errs = append(errs, fmt.Errorf("setup %q: hedge is the gateway's (pools[].hedge): only for gateway setups", st.Name))
		}
		if st.Attempts < 0 {
			errs = append(errs, fmt.Errorf("setup %q: attempts must not be negative", st.Name))
		}
		if c := st.Cache; c != nil {
			switch {
			case st.Mode != "gateway":
				errs = append(errs, fmt.Errorf("setup %q: cache is the gateway's (pools[].cache): only for gateway setups", st.Name))
			case c.TTL < 0:
				errs = append(errs, fmt.Errorf("setup %q: cache ttl must not be negative", st.Name))
			case c.TTL == 0 && !c.coalesce():
				errs = append(errs, fmt.Errorf("setup %q: a cache with no ttl and coalesce false does nothing", st.Name))
			}
		}
		if l := st.NoiseLimits; l != nil {
			switch {
			case s.Noise == nil:
				errs = append(errs, fmt.Errorf("setup %q: noise_limits without a noise load", st.Name))
			case st.Mode != "gateway":
				errs = append(errs, fmt.Errorf("setup %q: noise_limits are the gateway's keys: only for gateway setups", st.Name))
			case l.RPM < 0 || l.TPM < 0 || l.MaxConcurrent < 0:
				errs = append(errs, fmt.Errorf("setup %q: noise_limits must not be negative", st.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// validate checks a load; errors start with what (load or noise).
func (l Load) validate(what string) []error {
	var errs []error
	if (l.Rate > 0) == (l.Concurrency > 0) {
		errs = append(errs, fmt.Errorf("%s: set exactly one of rate or concurrency", what))
	}
	if l.Duration <= 0 && l.Total <= 0 {
		errs = append(errs, fmt.Errorf("%s: set a duration or a total", what))
	}
	if l.Repeat < 0 || l.Repeat >= 1 {
		errs = append(errs, fmt.Errorf("%s: repeat is a share of the requests, from 0 up to (not including) 1", what))
	}
	if l.API != "" && l.API != "chat" && l.API != "responses" {
		errs = append(errs, fmt.Errorf("%s: api must be chat or responses, not %q", what, l.API))
	}
	return errs
}

// validateFaults checks faults against the scenario's regions; errors start
// with prefix.
func validateFaults(prefix string, faults []Fault, regions map[string]bool) []error {
	var errs []error
	for _, f := range faults {
		if !regions[f.Region] {
			errs = append(errs, fmt.Errorf("%sfault on unknown region %q", prefix, f.Region))
		}
		if f.To <= f.From {
			errs = append(errs, fmt.Errorf("%sfault on %s: to must be after from", prefix, f.Region))
		}
	}
	return errs
}

// faults are the faults of a run of setup st: the scenario's, then the
// setup's own.
func (s Scenario) faults(st Setup) []Fault {
	return append(slices.Clone(s.Faults), st.Faults...)
}

// scaled returns the scenario as it runs at compression k.
func (s Scenario) scaled(k float64) Scenario {
	if k <= 0 {
		k = 1
	}
	div := func(d Duration) Duration { return Duration(float64(d) / k) }
	mul := func(n int) int { return int(float64(n)*k + 0.5) }
	out := s
	out.Compress = k
	if out.Slice == 0 {
		out.Slice = Duration(10 * time.Second)
	}
	out.Slice = div(out.Slice)
	out.Regions = append([]Region(nil), s.Regions...)
	for i := range out.Regions {
		out.Regions[i].RPM = mul(out.Regions[i].RPM)
		out.Regions[i].TPM = mul(out.Regions[i].TPM)
	}
	out.Load = s.Load.scaled(k)
	if s.Noise != nil {
		n := s.Noise.scaled(k)
		out.Noise = &n
	}
	out.Faults = scaledFaults(s.Faults, k)
	out.Setups = append([]Setup(nil), s.Setups...)
	for i := range out.Setups {
		if b := out.Setups[i].Breaker; b != nil {
			nb := *b
			nb.Window, nb.Trip = div(b.Window), div(b.Trip)
			out.Setups[i].Breaker = &nb
		}
		out.Setups[i].Faults = scaledFaults(s.Setups[i].Faults, k)
		if c := out.Setups[i].Cache; c != nil {
			nc := *c
			nc.TTL = div(c.TTL)
			out.Setups[i].Cache = &nc
		}
		if l := out.Setups[i].NoiseLimits; l != nil {
			nl := *l
			nl.RPM, nl.TPM = mul(l.RPM), mul(l.TPM)
			out.Setups[i].NoiseLimits = &nl
		}
	}
	return out
}

// scaled returns the load at compression k: its duration divided, its
// arrival rate multiplied.
func (l Load) scaled(k float64) Load {
	l.Duration = Duration(float64(l.Duration) / k)
	l.Rate *= k
	return l
}

// scaledFaults returns copies of faults with their times divided by k.
func scaledFaults(faults []Fault, k float64) []Fault {
	if faults == nil {
		return nil
	}
	out := slices.Clone(faults)
	for i := range out {
		out[i].From, out[i].To = Duration(float64(out[i].From)/k), Duration(float64(out[i].To)/k)
	}
	return out
}

// describeLoad says what load a scaled scenario runs.
func (s Scenario) describeLoad() string {
	what := s.Load.describe()
	if s.Noise != nil {
		what += "; noise: " + s.Noise.describe()
		if s.Noise.MaxTokens > 0 {
			what += fmt.Sprintf(", max_tokens %d", s.Noise.MaxTokens)
		}
	}
	return what
}

// describe says what a scaled load sends.
func (l Load) describe() string {
	var what string
	switch {
	case l.Rate > 0:
		what = fmt.Sprintf("%.4g req/s arriving (open model)", l.Rate)
	default:
		what = fmt.Sprintf("%d callers (closed model)", l.Concurrency)
	}
	if l.Total > 0 {
		what = fmt.Sprintf("%d requests from ", l.Total) + what
	}
	if l.Duration > 0 {
		what += fmt.Sprintf(" for %s", l.Duration.D().Round(time.Millisecond))
	}
	if l.Stream {
		what += ", streamed"
	}
	if l.API == "responses" {
		what += ", Responses API"
	}
	if l.Repeat > 0 {
		what += fmt.Sprintf(", %g%% repeats", l.Repeat*100)
	}
	return what
}
