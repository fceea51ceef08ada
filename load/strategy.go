package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/route"
)

// Region is a backend a client-side strategy calls directly.
type Region struct {
	Name string
	// Type is "azure" (the default) or "openai".
	Type string
	URL  string
	Key  string
}

// Strategy is a client-side failover strategy, as the published
// comparison of a gateway against client code measured them. It runs on
// the routing engine inside the load tool, straight to the regions.
type Strategy struct {
	// Kind is "direct" (the first region only), "weighted" (random by
	// weight, a retry goes to another region) or "sequential" (in order).
	Kind    string
	Regions []Region
	// Weights of the regions for "weighted"; default equal.
	Weights []int
	// CoolDown, if set, skips a region for this long after it refused or
	// failed (the client's sin bin). Zero means nothing is remembered.
	CoolDown time.Duration
	// Attempts per request. Default: 1 for direct, the number of regions
	// otherwise.
	Attempts int
	// FirstByteTimeout bounds each attempt's wait for headers (streams:
	// first event). Default 30s.
	FirstByteTimeout time.Duration
}

// Config returns the strategy as a switchover configuration with one pool
// named model.
func (s Strategy) Config(model string) (string, error) {
	if len(s.Regions) == 0 {
		return "", errors.New("load: a client strategy needs at least one region")
	}
	regions := s.Regions
	attempts := s.Attempts
	switch s.Kind {
	case "direct":
		regions = regions[:1]
		if attempts == 0 {
			attempts = 1
		}
	case "weighted", "sequential":
		if attempts == 0 {
			attempts = len(regions)
		}
	default:
		return "", fmt.Errorf("load: unknown strategy %q (direct, weighted, sequential)", s.Kind)
	}
	if len(s.Weights) > 0 && len(s.Weights) != len(s.Regions) {
		return "", fmt.Errorf("load: %d weights for %d regions", len(s.Weights), len(s.Regions))
	}
	fb := s.FirstByteTimeout
	if fb <= 0 {
		fb = 30 * time.Second
	}
	breaker := "{disabled: true}"
	if s.CoolDown > 0 {
		// A cool-down is a breaker that opens on the first failure for a
		// fixed time and probes afterwards, as the benchmark's clients did.
		breaker = fmt.Sprintf("{failures: 1, trip: %s, follow_retry_after: false, accept_retry_after: false, max_retry_after: %s}", s.CoolDown, max(s.CoolDown, 5*time.Minute))
	}
	var y strings.Builder
	// A client-side strategy stands for the benchmark's clients, which do
	// not read rate-limit headers.
	fmt.Fprintf(&y, "log: {level: error}\nbackend_defaults:\n  quota_aware: false\n  first_byte_timeout: %s\n  stream_first_byte_timeout: %s\n  timeout: %s\n  breaker: %s\nbackends:\n",
		fb, fb, max(fb, 10*time.Minute), breaker)
	for _, r := range regions {
		typ := r.Type
		if typ == "" {
			typ = "azure"
		}
		fmt.Fprintf(&y, "  - {name: %q, type: %s, url: %q, region: %q, api_key: %q}\n", r.Name, typ, r.URL, r.Name, r.Key)
	}
	fmt.Fprintf(&y, "pools:\n  - name: %q\n    retry: {attempts: %d}\n    retry_budget: {disabled: true}\n    members:\n", model, attempts)
	for i, r := range regions {
		prio, weight := 1, 1
		switch {
		case s.Kind == "sequential":
			prio = i + 1
		case len(s.Weights) > 0:
			weight = s.Weights[i]
		}
		fmt.Fprintf(&y, "      - {backend: %q, priority: %d, weight: %d}\n", r.Name, prio, weight)
	}
	return y.String(), nil
}

// ClientPool builds the pool named model (or aliased so) from a
// switchover configuration, to run inside the caller as a client-side
// strategy. The pool is an http.RoundTripper. Call closeFn when done.
func ClientPool(name string, yaml []byte, model string) (p *route.Pool, closeFn func(), err error) {
	cfg, err := config.Parse(name, yaml, os.LookupEnv)
	if err != nil {
		return nil, nil, err
	}
	eng, err := engine.Build(cfg, nil, engine.Deps{})
	if err != nil {
		return nil, nil, err
	}
	if p := eng.Pool(model); p != nil {
		return p, eng.Close, nil
	}
	eng.Close()
	return nil, nil, fmt.Errorf("load: %s has no pool %q", name, model)
}

// SimStats reads the simulator's counters from its control URL
// (http://host:port/_sim) and totals them.
func SimStats(ctx context.Context, controlURL string) (Upstream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(controlURL, "/")+"/stats", nil)
	if err != nil {
		return Upstream{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Upstream{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Upstream{}, fmt.Errorf("load: %s/stats answered %s", controlURL, resp.Status)
	}
	var stats map[string]struct {
		Calls, Answered, Refused, Errors int64
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return Upstream{}, fmt.Errorf("load: reading simulator stats: %w", err)
	}
	var u Upstream
	for _, s := range stats {
		u.Calls += s.Calls
		u.Answered += s.Answered
		u.Refused += s.Refused
		u.Errors += s.Errors
	}
	return u, nil
}

// Sub returns the counts of u since before.
func (u Upstream) Sub(before Upstream) Upstream {
	return Upstream{Calls: u.Calls - before.Calls, Answered: u.Answered - before.Answered, Refused: u.Refused - before.Refused, Errors: u.Errors - before.Errors}
}
