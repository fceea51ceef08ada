package gameday

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/load"
	"github.com/switchover-gw/switchover/sim"
)

// builtin returns the built-in scenario named name.
func builtin(t *testing.T, name string) Scenario {
	t.Helper()
	for _, sc := range Builtin() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no built-in scenario %s", name)
	return Scenario{}
}

// TestEveryRegionShortWithRepeats runs every-region-short-repeats in its
// test form: the built-in setups against fast regions, 150 requests of
// which 45 repeat an earlier one. What is asserted are counts, never
// times: a cached setup answers some repeats with no model call, an
// uncached one none; and without retries, where every call the gateway
// makes for a request is its only call, the cached setup made fewer model
// calls per request than the uncached one (at most one per request not
// answered from the cache, against at least one per request). The
// gateway's health checks (a slow call on a busy machine has its region
// checked) are calls no request made: they are counted apart and left out.
func TestEveryRegionShortWithRepeats(t *testing.T) {
	t.Parallel()
	sc := builtin(t, "every-region-short-repeats")
	sc.Regions = fastRegions(60)
	sc.Compress = 20
	sc.Load.Rate, sc.Load.Duration, sc.Load.Total = 6, 0, 150
	const repeats = 45 // 30% of 150
	res := runOne(t, sc)
	if !res.Cached || !strings.Contains(res.Load, "30% repeats") {
		t.Errorf("scenario result: cached %v, load %q", res.Cached, res.Load)
	}

	runs := map[string]RunResult{}
	for i, run := range res.Runs {
		st := sc.Setups[i]
		runs[st.Name] = run
		s := run.Summary
		if s.Requests != 150 || s.Upstream == nil {
			t.Fatalf("%s: %d requests, upstream %+v", st.Name, s.Requests, s.Upstream)
		}
		switch {
		case st.Cache == nil && s.FromCache != 0:
			t.Errorf("%s: %d answers from a cache it does not have", st.Name, s.FromCache)
		case s.FromCache > repeats:
			// Only a repeat can be answered from the cache: every other
			// request's prompt is its own.
			t.Errorf("%s: %d answers from the cache, more than the %d repeats", st.Name, s.FromCache, repeats)
		case st.Cache != nil && st.Cache.TTL > 0 && s.FromCache == 0:
			t.Errorf("%s: no repeat answered from the cache", st.Name)
		}
	}

	plain, cached := runs["gateway: no retry"].Summary, runs["gateway: no retry, cache"].Summary
	if plain.Upstream.Calls < int64(plain.Requests) {
		t.Errorf("no retry: %d model calls for %d requests, want one each", plain.Upstream.Calls, plain.Requests)
	}
	if saved, calls := int64(cached.Requests-cached.FromCache), cached.Upstream.Calls-cached.Upstream.Probes; calls > saved {
		t.Errorf("no retry, cache: %d model calls (%d probes left out), more than the %d requests not answered from the cache", calls, cached.Upstream.Probes, saved)
	}
	t.Logf("probes: %d without the cache, %d with it", plain.Upstream.Probes, cached.Upstream.Probes)
	if cached.Upstream.CallsPerRequest >= plain.Upstream.CallsPerRequest {
		t.Errorf("calls per request: %.2f with the cache, %.2f without", cached.Upstream.CallsPerRequest, plain.Upstream.CallsPerRequest)
	}

	// The table: a from-cache column after calls/req, one row per setup
	// with a cell per column.
	var text, md bytes.Buffer
	rep := &Report{Scenarios: []ScenarioResult{res}}
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	h := header(res)
	if i := strings.Join(h, ","); !strings.Contains(i, "calls/req,from cache,failovers") {
		t.Errorf("header %q", i)
	}
	var rows []string
	for line := range strings.Lines(md.String()) {
		if strings.HasPrefix(line, "| gateway: ") {
			rows = append(rows, line)
			if n := strings.Count(line, " | ") + 1; n != len(h) {
				t.Errorf("row of %d cells for %d columns: %s", n, len(h), line)
			}
		}
	}
	if len(rows) != len(sc.Setups) {
		t.Errorf("%d rows for %d setups:\n%s", len(rows), len(sc.Setups), md.String())
	}
	if !strings.Contains(text.String(), "from cache") {
		t.Errorf("text table without a from-cache column:\n%s", text.String())
	}
}

// TestPoolYAMLCache: a setup's cache is its pool's cache section, which
// the gateway's configuration accepts; its TTL is scaled with the
// scenario.
func TestPoolYAMLCache(t *testing.T) {
	eps := []sim.Endpoint{{Name: "uksouth", Region: "uksouth", URL: "http://127.0.0.1:1"}}
	off := false
	for _, tc := range []struct {
		name  string
		cache *Cache
		want  string
	}{
		{"ttl", &Cache{TTL: d(10 * time.Minute)}, "cache: {ttl: 1m0s, coalesce: true}"},
		{"coalescing only", &Cache{}, "cache: {ttl: 0s, coalesce: true}"},
		{"no coalescing", &Cache{TTL: d(time.Minute), Coalesce: &off}, "cache: {ttl: 6s, coalesce: false}"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := Scenario{Name: "c", Regions: []Region{{Name: "uksouth"}}, Load: Load{Rate: 1, Total: 1},
				Setups: []Setup{{Name: "s", Mode: "gateway", Members: weights(1), Attempts: 1, Cache: tc.cache}}}
			st := sc.scaled(10).Setups[0]
			y := poolYAML(st, eps, "", nil, 0)
			if tc.want != "" && !strings.Contains(y, tc.want) || tc.want == "" && strings.Contains(y, "cache:") {
				t.Fatalf("want %q in\n%s", tc.want, y)
			}
			cfg, err := config.Parse("c", []byte(y), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Pools[0].Cache; (got != nil) != (tc.cache != nil) || got != nil && got.TTL.D() != st.Cache.TTL.D() {
				t.Fatalf("pool cache %+v, want %+v", got, st.Cache)
			}
		})
	}
	c := &Cache{TTL: d(time.Minute)}
	sc := Scenario{Setups: []Setup{{Cache: c}}}
	if s := sc.scaled(10); c.TTL.D() != time.Minute || s.Setups[0].Cache.TTL.D() != 6*time.Second {
		t.Error("scaling modified the setup's cache or did not scale its copy")
	}
}

// TestWriteHTMLFromCacheColumn: a scenario with a cached setup has a
// from-cache column in its HTML results table, and one without has none.
func TestWriteHTMLFromCacheColumn(t *testing.T) {
	rep := fixtureReport()
	if page := render(t, rep); strings.Contains(page, ">from cache</th>") {
		t.Fatal("from-cache column without a cached setup")
	}
	rep.Scenarios[0].Cached = true
	rep.Scenarios[0].Runs[0].Summary.FromCache = 4321
	page := render(t, rep)
	if !strings.Contains(page, ">from cache</th>") || !strings.Contains(page, "<td>1.28</td><td>4,321</td>") || !strings.Contains(page, `<th colspan="11">`) {
		t.Fatalf("no from-cache column:\n%s", page[strings.Index(page, `<table class="results">`):][:1500])
	}
}

// TestNoiseCallsLeaveOutCacheAnswers: a noise answer from the cache
// replays the x-switchover-attempts of the call it repeats; it made no
// model call.
func TestNoiseCallsLeaveOutCacheAnswers(t *testing.T) {
	samples := []load.Sample{{OK: true, Attempts: 2, Cache: "miss"}, {OK: true, Attempts: 2, Cache: "hit"}, {OK: true, Attempts: 2, Cache: "coalesced"}, {OK: true, Attempts: 1}}
	res := &load.Result{Samples: samples, Summary: load.Summarize(samples, 0)}
	if got := noiseResult(res).Upstream.Calls; got != 3 {
		t.Fatalf("noise calls %d, want 3 (2 + 1; none for the cache's answers)", got)
	}
}

// TestCallsPerRequestLeaveOutProbes is the regression test for
// TestEveryRegionShortWithRepeats failing on a busy machine with 107
// model calls for 105 requests not answered from the cache: the gateway's
// health checks reach the regions too. They stay in the calls the regions
// counted, are reported as probes, and are left out of calls per request,
// with or without a noise load.
func TestCallsPerRequestLeaveOutProbes(t *testing.T) {
	stats := map[string]sim.Stats{"uksouth": {Calls: 9, Answered: 9}, "swedencentral": {Calls: 5, Answered: 5}}
	main := &load.Result{Summary: load.Summary{Requests: 10}}
	up := upstream(stats, 4, main, nil, &RunResult{})
	if up.Calls != 14 || up.Probes != 4 || up.CallsPerRequest != 1 {
		t.Errorf("calls %d, probes %d, %.2f per request; want 14, 4 and 1.00", up.Calls, up.Probes, up.CallsPerRequest)
	}
	samples := []load.Sample{{OK: true, Attempts: 1}, {OK: true, Attempts: 1}}
	noise := &load.Result{Samples: samples, Summary: load.Summarize(samples, 0)}
	up = upstream(stats, 2, main, noise, &RunResult{})
	if up.Calls != 12 || up.Probes != 2 || up.CallsPerRequest != 1 {
		t.Errorf("with noise: calls %d, probes %d, %.2f per request; want 12, 2 and 1.00", up.Calls, up.Probes, up.CallsPerRequest)
	}
}
