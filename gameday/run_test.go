package gameday

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/load"
	"github.com/switchover-gw/switchover/sim"
)

// fastRegions are three regions with short latencies, so runs take
// seconds; rpm is the quota of each.
func fastRegions(rpm int) []Region {
	return []Region{
		{Name: "uksouth", Latency: d(40 * time.Millisecond), Spread: 0.2, RPM: rpm},
		{Name: "westeurope", Latency: d(60 * time.Millisecond), Spread: 0.2, RPM: rpm},
		{Name: "swedencentral", Latency: d(50 * time.Millisecond), Spread: 0.2, RPM: rpm},
	}
}

func runOne(t *testing.T, sc Scenario) ScenarioResult {
	t.Helper()
	rep, err := Run(t.Context(), []Scenario{sc}, Options{Gateway: testGateway})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 || len(rep.Scenarios[0].Runs) != len(sc.Setups) {
		t.Fatalf("report %+v", rep)
	}
	return rep.Scenarios[0]
}

func TestMainRegionShort(t *testing.T) {
	t.Parallel()
	// 2 req/s, 90% to uksouth, 60 RPM each, compressed 60x: per 1/6 s
	// slice about 18 arrive for uksouth, which takes 10.
	sc := Scenario{
		Name: "main", Compress: 60, Regions: fastRegions(60),
		Load: Load{Rate: 2, Duration: d(3 * time.Minute), MaxTokens: 5},
		Setups: []Setup{
			{Name: "no failover", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 1},
			// Quota-blind: what is tested is how the breaker takes the refusals.
			{Name: "switchover", Mode: "gateway", Members: weights(90, 5, 5), Attempts: 3, Breaker: switchoverBin()},
			{Name: "client cool-down", Mode: "client", Members: weights(90, 5, 5), Attempts: 3, Breaker: switchoverBin()},
		},
	}
	res := runOne(t, sc)
	noFail, sw, client := res.Runs[0].Summary, res.Runs[1].Summary, res.Runs[2].Summary
	// The shares answered depend on how the machine keeps up with
	// compressed time: they are what `switchover gameday` prints, not
	// what a unit test on a shared machine can assert. What holds on any
	// machine: without failover every failure is the region's 429, and
	// nothing answers more than the quotas allow.
	if noFail.Failures["429"] != noFail.Failed || noFail.Failed == 0 {
		t.Errorf("no failover: failures %v, want only (and some) 429s", noFail.Failures)
	}
	for name, s := range map[string]struct {
		cpr       float64
		failovers int
	}{"switchover": {sw.Upstream.CallsPerRequest, sw.Failovers}, "client": {client.Upstream.CallsPerRequest, client.Failovers}} {
		// At least one call each, never more than the three attempts.
		if s.cpr < 1 || s.cpr > 3 {
			t.Errorf("%s: %.2f model calls per request", name, s.cpr)
		}
		if s.failovers == 0 {
			t.Errorf("%s: no failover counted while uksouth refused", name)
		}
	}
	if len(res.Runs[1].Transitions) == 0 {
		t.Error("no breaker transition recorded for the sin bin setup")
	}
}

func TestEveryRegionShortStaysUnderTheCap(t *testing.T) {
	t.Parallel()
	sc := Scenario{
		Name: "every", Compress: 40, Regions: fastRegions(60),
		Load: Load{Rate: 6, Duration: d(80 * time.Second), MaxTokens: 5, Timeout: d(20 * time.Second)},
		Setups: []Setup{
			{Name: "no failover", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 1},
			{Name: "switchover", Mode: "gateway", Members: weights(1, 1, 1), Attempts: 3, Breaker: switchoverBin(), QuotaAware: true},
			{Name: "client retry", Mode: "client", Members: weights(1, 1, 1), Attempts: 3},
		},
	}
	res := runOne(t, sc)
	slice := 10 * time.Second / 40
	perSlice := 10 // 60 RPM * 40 / 60 s * 0.25 s
	for _, run := range res.Runs {
		s := run.Summary
		// Answers are bounded by the quota of every slice the run
		// touched, counting a partial slice at each end, and one more:
		// on a loaded machine the measured duration can fall short of the
		// time the regions served by a slice (seen once: 403 against 390).
		slices := int(math.Ceil(float64(s.Duration)/float64(slice))) + 2
		limit := slices * perSlice * 3
		// The bound holds on any machine; how close each setup comes to
		// it is the game day's figure, not a unit test's.
		if s.Upstream.Answered > int64(limit) || s.Succeeded > limit {
			t.Errorf("%s: %d answered, above the quota cap %d", run.Setup, s.Succeeded, limit)
		}
		// Whether any failed depends on the load the machine could
		// offer (on a busy one the load falls under the cap: seen in CI
		// at a load average of 30, "314 answered, 0 failed"), so only
		// the bound above is asserted, and that something was answered.
		if s.Succeeded == 0 {
			t.Errorf("%s: nothing answered", run.Setup)
		}
	}
}

func TestOutageDetectsFailoverAndFailback(t *testing.T) {
	// Not parallel: in real time (Compress 1), with a 300 ms first-byte
	// timeout; beside the compressed scenarios, on a CI machine already
	// busy, westeurope's own first bytes came too late and it was benched
	// before its fault, so traffic never "moved" (CI, 2026-12-04).
	var hooks atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct{ Kind string }
		json.NewDecoder(r.Body).Decode(&n)
		if n.Kind == "failover" || n.Kind == "failback" {
			hooks.Add(1)
		}
	}))
	defer recv.Close()
	sc := Scenario{
		Name: "outage", Compress: 1,
		Regions: []Region{
			{Name: "westeurope", Latency: d(40 * time.Millisecond)},
			{Name: "swedencentral", Latency: d(60 * time.Millisecond)},
		},
		Load:   Load{Rate: 40, Duration: d(4 * time.Second), MaxTokens: 5, Stream: true, Timeout: d(10 * time.Second)},
		Faults: []Fault{{Region: "westeurope", Mode: "blackhole", From: d(time.Second), To: d(2500 * time.Millisecond)}},
		Outage: "westeurope",
		Setups: []Setup{{
			Name: "first-byte timeout", Mode: "gateway", Attempts: 2,
			Members:                []Member{{Region: "westeurope", Priority: 1}, {Region: "swedencentral", Priority: 2}},
			Breaker:                &Breaker{Failures: 3, Window: d(5 * time.Second), Trip: d(time.Second)},
			StreamFirstByteTimeout: d(300 * time.Millisecond),
		}},
	}
	rep, err := Run(t.Context(), []Scenario{sc}, Options{Webhook: recv.URL, Gateway: testGateway})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Scenarios[0].Runs[0]
	o := run.Outage
	if o == nil {
		t.Fatal("no outage result")
	}
	// How many failed and how fast traffic moved depend on how the machine
	// keeps up (the route tests check the mechanism on a fake clock, the
	// game day prints the figures); that it moved and came back does not.
	if o.Moved < 0 || o.Benched < 0 {
		t.Errorf("the outage was not seen: moved %v, benched %v", o.Moved, o.Benched)
	}
	if o.Back < 0 || o.Closed < 0 {
		t.Errorf("failback not seen: back %v, closed %v", o.Back, o.Closed)
	}
	// The schedule counts from the sim's start, a moment (longer on a busy
	// machine) before the load's.
	if len(run.Faults) != 1 || run.Faults[0].From <= 0 || run.Faults[0].From > time.Second {
		t.Errorf("fault window %+v", run.Faults)
	}
	// Told when the primary went out, first, and when it came back. On
	// a busy machine the fallback's own 300 ms first-byte timeout can
	// fire too, adding "change" and "flapping" notifications between
	// them (seen in CI at a load average of 30), so only the first and
	// the failback are asserted; the webhook gets every failover and
	// failback the run recorded.
	var kinds []string
	sent := 0
	for _, n := range run.Notifications {
		if n.Kind != "storm" {
			kinds = append(kinds, n.Kind)
		}
		if n.Kind == "failover" || n.Kind == "failback" {
			sent++
		}
	}
	if len(kinds) < 2 || kinds[0] != "failover" || !slices.Contains(kinds, "failback") {
		t.Fatalf("notifications %v, want a failover first and a failback", kinds)
	}
	// The failover is westeurope's. (On a busy machine it can come
	// before the blackhole, westeurope's own first bytes then being
	// over the 300 ms timeout: seen in CI at 789 ms, the fault at 1 s.)
	if f := run.Notifications[0]; fmt.Sprint(f.From, f.To) != "[westeurope] [swedencentral]" {
		t.Errorf("failover notification %+v", f)
	}
	if i := slices.IndexFunc(run.Notifications, func(n Note) bool { return n.Kind == "failback" }); run.Notifications[i].At < run.Faults[0].From {
		t.Errorf("failback notification %+v before the fault", run.Notifications[i])
	}
	if n := hooks.Load(); int(n) != sent {
		t.Errorf("the webhook got %d failover/failback notifications, the run recorded %d", n, sent)
	}
	var text bytes.Buffer
	WriteText(&text, rep)
	if !strings.Contains(text.String(), "notifications sent:") || !strings.Contains(text.String(), "failover at") {
		t.Errorf("text report:\n%s", text.String())
	}
}

func TestScaled(t *testing.T) {
	var sc Scenario
	for _, b := range Builtin() {
		if b.Name == "region-outage" {
			sc = b
		}
	}
	s := sc.scaled(10)
	if s.Load.Rate != 40 || s.Load.Duration.D() != 12*time.Second || s.Slice.D() != time.Second {
		t.Fatalf("load %+v slice %v", s.Load, s.Slice)
	}
	if f := s.Faults[0]; f.From.D() != 3*time.Second || f.To.D() != 8*time.Second {
		t.Fatalf("fault %+v", f)
	}
	if b := s.Setups[0].Breaker; b.Trip.D() != 6*time.Second || b.Window.D() != 3*time.Second {
		t.Fatalf("breaker %+v", b)
	}
	// Not scaled: model latency and network timeouts.
	if s.Regions[0].Latency != sc.Regions[0].Latency || s.Setups[0].StreamFirstByteTimeout != sc.Setups[0].StreamFirstByteTimeout || s.Load.Timeout != sc.Load.Timeout {
		t.Fatal("latency or timeouts were scaled")
	}
	// The original is unchanged.
	if sc.Setups[0].Breaker.Trip.D() != 60*time.Second {
		t.Fatal("scaling modified the scenario")
	}
	q := Builtin()[1].scaled(50)
	if q.Regions[0].RPM != 72*50 {
		t.Fatalf("rpm %d", q.Regions[0].RPM)
	}
}

func TestBuiltinScenariosAreValid(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range Builtin() {
		if err := sc.validate(); err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		names[sc.Name] = true
		// Every setup's configuration is one switchover accepts.
		for _, st := range sc.scaled(sc.Compress).Setups {
			if _, err := config.Parse(st.Name, []byte(poolYAML(st, nil, "", runKeys(sc), 0)), nil); err != nil && !strings.Contains(err.Error(), "at least one member") && !strings.Contains(err.Error(), "no backend is named") {
				t.Errorf("%s / %s: %v", sc.Name, st.Name, err)
			}
		}
	}
	for _, want := range []string{"nothing-wrong", "main-region-short", "every-region-short", "region-outage", "bursts",
		"outage-default-timeouts", "misconfigured-region", "impossible-requests", "every-region-short-repeats", "regions-taking-turns"} {
		if !names[want] {
			t.Errorf("missing built-in scenario %s", want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	good := `scenarios:
  - name: mine
    regions: [{name: a, latency: 100ms, rpm: 60}, {name: b, latency: 200ms}]
    load: {rate: 1, duration: 10s}
    faults: [{region: a, mode: down, from: 2s, to: 5s}]
    outage: a
    setups:
      - {name: gw, mode: gateway, members: [{region: a, priority: 1}, {region: b, priority: 2}], attempts: 2, breaker: {failures: 1, trip: 30s, follow_retry_after: true}}
`
	dir := t.TempDir()
	p := filepath.Join(dir, "good.yaml")
	os.WriteFile(p, []byte(good), 0o600)
	scs, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 1 || scs[0].Setups[0].Breaker.Trip.D() != 30*time.Second || !scs[0].Setups[0].Breaker.FollowRetryAfter {
		t.Fatalf("scenarios %+v", scs)
	}
	bad := []struct{ name, yaml, want string }{
		{"unknown field", "scenarios:\n  - name: x\n    regoins: []\n", "regoins"},
		{"no setups", "scenarios:\n  - name: x\n    regions: [{name: a}]\n    load: {rate: 1, duration: 1s}\n", "no setups"},
		{"both rate and concurrency", "scenarios:\n  - name: x\n    regions: [{name: a}]\n    load: {rate: 1, concurrency: 2, duration: 1s}\n    setups: [{name: s, mode: gateway, members: [{region: a}]}]\n", "exactly one of rate or concurrency"},
		{"unknown region", "scenarios:\n  - name: x\n    regions: [{name: a}]\n    load: {rate: 1, duration: 1s}\n    setups: [{name: s, mode: gateway, members: [{region: z}]}]\n", `unknown region "z"`},
		{"bad mode", "scenarios:\n  - name: x\n    regions: [{name: a}]\n    load: {rate: 1, duration: 1s}\n    setups: [{name: s, mode: proxy, members: [{region: a}]}]\n", "mode must be gateway or client"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad.yaml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestTextMarkdownJSON(t *testing.T) {
	sc := Scenario{
		Name: "tiny", Title: "Tiny", Description: "A | pipe in the text.", Compress: 1,
		Regions: fastRegions(0)[:1],
		Load:    Load{Concurrency: 2, Total: 10, MaxTokens: 5},
		Setups:  []Setup{{Name: "gw", Mode: "gateway", Members: weights(1), Attempts: 1}},
	}
	rep, err := Run(t.Context(), []Scenario{sc}, Options{Command: "switchover gameday -only tiny", Gateway: testGateway})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	WriteMarkdown(&md, rep)
	WriteJSON(&js, rep)
	if !strings.Contains(text.String(), "== Tiny: 10 requests from 2 callers") || !strings.Contains(text.String(), "gw ") || !strings.Contains(text.String(), "100%") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(md.String(), "| setup | success |") || !strings.Contains(md.String(), "| gw | 100% |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Scenarios[0].Runs[0].Summary.Requests != 10 || back.Command != "switchover gameday -only tiny" {
		t.Errorf("json round trip %+v", back.Scenarios[0].Runs[0].Summary)
	}
}

func TestPoolYAMLDefaults(t *testing.T) {
	eps := []sim.Endpoint{
		{Name: "westeurope", Region: "westeurope", URL: "http://127.0.0.1:1"},
		{Name: "uksouth", Region: "uksouth", URL: "http://127.0.0.1:2"},
	}
	members := []Member{{Region: "westeurope", Priority: 1}, {Region: "uksouth", Priority: 2}}
	// What a user who writes the README's short config has: backends and a
	// pool, nothing else.
	short := `backends:
  - {name: westeurope, type: azure, url: "http://127.0.0.1:1", region: westeurope}
  - {name: uksouth, type: azure, url: "http://127.0.0.1:2", region: uksouth}
pools:
  - name: chat-prod
    members:
      - {backend: westeurope, priority: 1}
      - {backend: uksouth, priority: 2}
`
	want, err := config.Parse("short", []byte(short), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		setup        Setup
		keys         []gatewayKey
		wantAttempts int // 0: the shipped default, as in the short config
	}{
		{"defaults", Setup{Defaults: true, Members: members}, nil, 0},
		{"defaults with attempts", Setup{Defaults: true, Members: members, Attempts: 2}, nil, 2},
		{"defaults with a noise load", Setup{Defaults: true, Members: members}, runKeys(Scenario{Noise: &Load{}}), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := poolYAML(tc.setup, eps, "", tc.keys, 0)
			for _, absent := range []string{"timeout", "breaker", "probe", "backend_defaults", "flap_window"} {
				if strings.Contains(y, absent) {
					t.Errorf("a defaults setup's config has %s:\n%s", absent, y)
				}
			}
			if got := strings.Contains(y, "retry"); got != (tc.wantAttempts > 0) {
				t.Errorf("retry block %v, want %v:\n%s", got, tc.wantAttempts > 0, y)
			}
			cfg, err := config.Parse(tc.name, []byte(y), nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			// Every backend setting is the shipped default, as in the short
			// config, whatever those defaults are.
			for i, b := range cfg.Backends {
				w := want.Backends[i]
				if b.FirstByteTimeout != w.FirstByteTimeout || b.StreamFirstByteTimeout != w.StreamFirstByteTimeout ||
					b.Timeout != w.Timeout || !reflect.DeepEqual(b.Breaker, w.Breaker) || !reflect.DeepEqual(b.Probe, w.Probe) {
					t.Errorf("backend %s differs from the short config's:\n got %+v\nwant %+v", b.Name, b, w)
				}
			}
			attempts := want.Pools[0].Retry.Attempts
			if tc.wantAttempts > 0 {
				attempts = tc.wantAttempts
			}
			if got := cfg.Pools[0].Retry.Attempts; got != attempts {
				t.Errorf("retry attempts %d, want %d", got, attempts)
			}
			var names []string
			for _, k := range cfg.Keys {
				names = append(names, k.Name)
			}
			wantNames := ""
			if tc.keys != nil {
				wantNames = "main,noise"
			}
			if strings.Join(names, ",") != wantNames {
				t.Errorf("keys %v, want %q", names, wantNames)
			}
		})
	}
	// Setups that are not Defaults keep their timeouts and breaker, and get
	// the keys too.
	y := poolYAML(Setup{Members: members, Breaker: sinBin(1)}, eps, "", runKeys(Scenario{Noise: &Load{}}), 0)
	cfg, err := config.Parse("apim", []byte(y), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if cfg.Backends[0].FirstByteTimeout.D() != 30*time.Second || cfg.Backends[0].Breaker.Failures != 1 || len(cfg.Keys) != 2 || cfg.Pools[0].Retry.Attempts != 1 {
		t.Errorf("config %+v", cfg)
	}
}

func TestNoiseLoad(t *testing.T) {
	// Small requests for the main load; the noise asks for more tokens
	// than any region has in a slice (6000 a minute is 1000 per 10 s).
	regions := []Region{
		{Name: "uksouth", Latency: d(20 * time.Millisecond), TPM: 6000},
		{Name: "westeurope", Latency: d(20 * time.Millisecond), TPM: 6000},
	}
	tests := []struct {
		name      string
		mode      string
		noise     Load
		wantNoise int // answered
	}{
		{"gateway, answerable noise", "gateway", Load{Concurrency: 1, Total: 4, MaxTokens: 5}, 4},
		{"client, answerable noise", "client", Load{Concurrency: 1, Total: 4, MaxTokens: 5}, 4},
		{"gateway, impossible noise", "gateway", Load{Concurrency: 1, Total: 3, MaxTokens: 100000}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noise := tc.noise
			sc := Scenario{
				Name: "noise", Regions: regions,
				Load:   Load{Concurrency: 2, Total: 10, MaxTokens: 5},
				Noise:  &noise,
				Setups: []Setup{{Name: "s", Mode: tc.mode, Defaults: true, Members: weights(1, 1)}},
			}
			res := runOne(t, sc)
			run := res.Runs[0]
			n := run.Noise
			if n == nil {
				t.Fatal("no noise summary")
			}
			// The main summary is the main load's alone.
			if run.Summary.Requests != 10 || len(run.Samples) != 10 {
				t.Errorf("main: %d requests, %d samples, want 10", run.Summary.Requests, len(run.Samples))
			}
			if n.Requests != tc.noise.Total || n.Succeeded != tc.wantNoise {
				t.Errorf("noise: %d requests, %d answered; want %d and %d", n.Requests, n.Succeeded, tc.noise.Total, tc.wantNoise)
			}
			if tc.wantNoise == tc.noise.Total {
				// One call each: the main load's share is the rest.
				// The gateway's health checks are no request's calls.
				if up := run.Summary.Upstream; n.Upstream.Calls != int64(tc.noise.Total) || up.Calls-up.Probes != 10 {
					t.Errorf("noise calls %d, main calls %d less %d probes; want %d and 10", n.Upstream.Calls, up.Calls, up.Probes, tc.noise.Total)
				}
			}
			var text, md bytes.Buffer
			rep := &Report{Scenarios: []ScenarioResult{res}}
			WriteText(&text, rep)
			WriteMarkdown(&md, rep)
			line := fmt.Sprintf("s: %d requests, %d answered", tc.noise.Total, tc.wantNoise)
			for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
				if !strings.Contains(out, "noise (key noise") || !strings.Contains(out, line) {
					t.Errorf("%s report lacks the noise line %q:\n%s", name, line, out)
				}
			}
		})
	}
}

func TestOutageCountsRequestsInFlight(t *testing.T) {
	sec := func(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
	sample := func(start, end float64, ok bool, backend string) load.Sample {
		return load.Sample{Start: sec(start), Latency: sec(end - start), OK: ok, Backend: backend}
	}
	rr := RunResult{
		Faults: []FaultWindow{{Region: "westeurope", Mode: "blackhole", From: sec(30), To: sec(90)}},
		Samples: []load.Sample{
			sample(10, 11, true, "westeurope"),    // before the outage
			sample(20, 29, false, "westeurope"),   // failed before it: not counted
			sample(25, 85, false, ""),             // in flight when it began: counted
			sample(29.5, 31, true, "uksouth"),     // in flight when it began, answered
			sample(40, 41, false, ""),             // during it
			sample(45, 46, true, "uksouth"),       // during it
			sample(89, 95, false, ""),             // sent before it ended
			sample(95, 96, true, "westeurope"),    // after it
			sample(100, 101, false, "westeurope"), // after it: not counted
		},
	}
	o := outage("westeurope", rr)
	if o.Requests != 5 || o.Failed != 3 {
		t.Errorf("requests %d, failed %d; want 5 and 3", o.Requests, o.Failed)
	}
	if o.Moved != sec(1) || o.Back != sec(6) {
		t.Errorf("moved %v, back %v; want 1s and 6s", o.Moved, o.Back)
	}
	if got := row(RunResult{Outage: o}, false); got[len(got)-5] != "3/5" {
		t.Errorf("failed in outage cell %q, want 3/5", got[len(got)-5])
	}
}

// TestOutageCountsWaitsAndRetryAfter: issue 22's targets for a whole
// fleet dark (no client waits more than 15 s; every 503/429 says when to
// come back, no later than the next probe) are read off the run: the
// longest wait of a request in flight during the outage, and the refusals
// among them with their Retry-After.
func TestOutageCountsWaitsAndRetryAfter(t *testing.T) {
	sec := func(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }
	sample := func(start, end float64, status int, retryAfter float64) load.Sample {
		return load.Sample{Start: sec(start), Latency: sec(end - start), Status: status, OK: status == 200, RetryAfter: sec(retryAfter)}
	}
	rr := RunResult{
		Setup:  "defaults",
		Faults: []FaultWindow{{Region: "uksouth", Mode: "blackhole", From: sec(20), To: sec(50)}},
		Samples: []load.Sample{
			sample(10, 40, 504, 0),   // the longest wait, not a refusal
			sample(30, 30.1, 503, 5), // refused, come back in 5 s
			sample(31, 31.1, 429, 4), // refused, come back in 4 s
			sample(32, 32.1, 503, 0), // refused, no Retry-After
			sample(60, 90, 503, 60),  // after the outage: not counted
		},
	}
	o := outage("uksouth", rr)
	if o.LongestWait != sec(30) || o.Refused != 3 || o.WithRetryAfter != 2 || o.LongestRetryAfter != sec(5) {
		t.Fatalf("longest wait %v, refused %d, with Retry-After %d, longest %v; want 30s, 3, 2, 5s", o.LongestWait, o.Refused, o.WithRetryAfter, o.LongestRetryAfter)
	}
	rr.Outage = o
	var text bytes.Buffer
	WriteText(&text, &Report{Scenarios: []ScenarioResult{{Runs: []RunResult{rr}}}})
	if line := "defaults: longest wait 30.0 s; 3 refused with 503/429, 2 with Retry-After (longest 5.0 s)"; !strings.Contains(text.String(), line) {
		t.Fatalf("report lacks %q:\n%s", line, text.String())
	}
}

// TestExampleScenarioFilesLoad: the game-day files in examples/, which the
// README runs, stay valid as the schema changes.
func TestExampleScenarioFilesLoad(t *testing.T) {
	files, err := filepath.Glob("../examples/gameday-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example game-day files (%v)", err)
	}
	for _, f := range files {
		scs, err := LoadFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, sc := range scs {
			if len(sc.Setups) == 0 {
				t.Errorf("%s: scenario %s has no setups", f, sc.Name)
			}
		}
	}
}

// TestResponsesScenario runs a Responses API load (streamed) through the
// gateway with the primary region down for a while: the requests are
// answered as Responses streams, and traffic leaves the region and comes
// back. How many failed, and when, is the game day's to print.
func TestResponsesScenario(t *testing.T) {
	t.Parallel()
	sc := Scenario{
		Name: "responses", Compress: 1,
		Regions: []Region{
			{Name: "westeurope", Latency: d(40 * time.Millisecond)},
			{Name: "swedencentral", Latency: d(60 * time.Millisecond)},
		},
		Load:   Load{Rate: 20, Duration: d(3 * time.Second), MaxTokens: 5, Stream: true, API: "responses", Timeout: d(10 * time.Second)},
		Faults: []Fault{{Region: "westeurope", Mode: "down", From: d(time.Second), To: d(2 * time.Second)}},
		Outage: "westeurope",
		Setups: []Setup{{
			Name: "defaults", Mode: "gateway", Defaults: true,
			Members: []Member{{Region: "westeurope", Priority: 1}, {Region: "swedencentral", Priority: 2}},
		}},
	}
	rep, err := Run(t.Context(), []Scenario{sc}, Options{Gateway: testGateway})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Scenarios[0].Runs[0]
	if run.Summary.Succeeded == 0 {
		t.Fatalf("no Responses stream answered: %+v", run.Summary)
	}
	if o := run.Outage; o == nil || o.Moved < 0 {
		t.Fatalf("the outage was not seen: %+v", o)
	}
}

// TestPoolYAMLNoiseLimits: a setup's noise_limits are the noise key's
// limits in its gateway, scaled with the scenario; the main key has none.
func TestPoolYAMLNoiseLimits(t *testing.T) {
	eps := []sim.Endpoint{{Name: "uksouth", Region: "uksouth", URL: "http://127.0.0.1:1"}}
	sc := Scenario{Name: "n", Regions: []Region{{Name: "uksouth"}}, Load: Load{Rate: 1, Total: 1}, Noise: &Load{Rate: 1, Total: 1},
		Setups: []Setup{{Name: "s", Mode: "gateway", Defaults: true, Members: weights(1), NoiseLimits: &KeyLimits{RPM: 60, MaxConcurrent: 2}}}}
	if err := sc.validate(); err != nil {
		t.Fatal(err)
	}
	sc = sc.scaled(10)
	y := poolYAML(sc.Setups[0], eps, "", runKeys(sc), 0)
	cfg, err := config.Parse("g", []byte(y), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	for _, k := range cfg.Keys {
		switch {
		case k.Name == noiseKey && (k.RPM != 600 || k.MaxConcurrent != 2):
			t.Errorf("noise key %+v, want rpm 600 (60 at 10x) and max_concurrent 2", k.Limits)
		case k.Name == mainKey && k.Limits != (config.Limits{}):
			t.Errorf("main key has limits %+v", k.Limits)
		}
	}
	bad := sc
	bad.Noise = nil
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "noise_limits without a noise load") {
		t.Errorf("noise_limits without a noise: %v", err)
	}
}
