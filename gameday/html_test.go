package gameday

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/load"
)

var fixtureRegions = []string{"uksouth", "swedencentral", "francecentral"}

// fixtureReport is a game day of one scenario with three regions and two
// runs, both 500 requests at 50 req/s for 10 s with uksouth out from 3 s to
// 6 s:
//
//   - "gateway" (gateway mode): uksouth answers until 3 s, the next 25
//     requests fail (503 and timeout), swedencentral answers from 3.5 s (as
//     failovers) and uksouth again from 6.5 s; uksouth's breaker goes
//     closed → open (3.4 s) → half_open (6.2 s) → closed (6.5 s). 95.0%.
//   - "client" (client mode): every request sent in the outage fails (429
//     and connection), no breaker; it has an Outage result. 70.0%.
func fixtureReport() *Report {
	const n, every = 500, 20 * time.Millisecond
	latency := func(i int) time.Duration { return 150*time.Millisecond + time.Duration(i*37%100)*time.Millisecond }
	var gw, cl []load.Sample
	for i := range n {
		start := time.Duration(i) * every
		s := load.Sample{Start: start, Latency: latency(i), FirstByte: latency(i) / 3, Status: 200, OK: true, Backend: "uksouth", Attempts: 1}
		switch {
		case start < 3*time.Second, start >= 6500*time.Millisecond:
		case start < 3500*time.Millisecond:
			s.OK, s.Backend, s.Status, s.Failure = false, "", 503, "503"
			if i%2 == 1 {
				s.Status, s.Failure, s.Latency = 0, "timeout", time.Second
			}
		default:
			s.Backend, s.Failover, s.Attempts = "swedencentral", true, 2
		}
		gw = append(gw, s)

		c := load.Sample{Start: start, Latency: latency(i), Status: 200, OK: true, Backend: "uksouth", Attempts: 1}
		if start >= 3*time.Second && start < 6*time.Second {
			c.OK, c.Backend, c.Status, c.Failure, c.Latency = false, "", 429, "429", 2*time.Millisecond
			if i%3 != 0 {
				c.Status, c.Failure, c.Latency = 0, "connection", 400*time.Microsecond
			}
		}
		cl = append(cl, c)
	}
	run := func(setup, mode string, samples []load.Sample) RunResult {
		sum := load.Summarize(samples, 0)
		var end time.Duration
		for _, s := range samples {
			end = max(end, s.End())
		}
		return RunResult{
			Setup: setup, Mode: mode, Description: setup + " setup", Summary: sum, Samples: samples, Duration: end,
			Faults: []FaultWindow{{Region: "uksouth", Mode: "outage", From: 3 * time.Second, To: 6 * time.Second}},
		}
	}
	g := run("gateway", "gateway", gw)
	g.Summary.Upstream = &load.Upstream{Calls: 640, CallsPerRequest: 1.28}
	g.Transitions = []Transition{
		{At: 3400 * time.Millisecond, Backend: "uksouth", From: "closed", To: "open", Cause: "5 consecutive failures"},
		{At: 6200 * time.Millisecond, Backend: "uksouth", From: "open", To: "half_open", Cause: "trip ended"},
		{At: 6500 * time.Millisecond, Backend: "uksouth", From: "half_open", To: "closed", Cause: "probe succeeded"},
	}
	c := run("client", "client", cl)
	c.Outage = &OutageResult{Primary: "uksouth", Requests: 300, Failed: 150, Moved: -1, Benched: -1, Back: 20 * time.Millisecond, Closed: -1}
	c.Notifications = []Note{{At: 3 * time.Second, Kind: "failover", From: []string{"uksouth"}, To: []string{"westeurope"}, Text: "Active backend changed <to> westeurope."}}
	var regions []RegionInfo
	for i, name := range fixtureRegions {
		regions = append(regions, RegionInfo{Name: name, MedianLatency: time.Duration(150+50*i) * time.Millisecond, RPM: 6000, TPM: 600000})
	}
	return &Report{
		Started:  time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC),
		Machine:  "linux/amd64, 2 CPUs",
		Command:  "switchover gameday -scenario primary-outage",
		Realtime: false,
		Scenarios: []ScenarioResult{{
			Name: "primary-outage", Title: "Primary region outage",
			Description: "uksouth goes down for 3 s and comes back.",
			Compress:    30, Regions: regions, Load: "50 req/s open model for 10s",
			Runs: []RunResult{g, c},
		}},
	}
}

func render(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.String()
}

var svgRE = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)

// plots parses every SVG in page, and groups them by run: each run has its
// rps, latency and breakers plots, in that order.
func plots(t *testing.T, page string) [][3]*node {
	t.Helper()
	svgs := svgRE.FindAllString(page, -1)
	if len(svgs)%3 != 0 {
		t.Fatalf("got %d SVGs, want three per run", len(svgs))
	}
	var runs [][3]*node
	for i := 0; i < len(svgs); i += 3 {
		var r [3]*node
		for j, class := range []string{"rps", "latency", "breakers"} {
			r[j] = parseXML(t, svgs[i+j])
			if !r[j].hasClass("plot", class) {
				t.Fatalf("SVG %d has class %q, want plot %s", i+j, r[j].attr["class"], class)
			}
		}
		runs = append(runs, r)
	}
	return runs
}

func TestWriteHTML(t *testing.T) {
	page := render(t, fixtureReport())
	runs := plots(t, page)
	if len(runs) != 2 {
		t.Fatalf("got plots for %d runs, want 2", len(runs))
	}
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, page string, runs [][3]*node)
	}{
		{"results table", checkResultsTable},
		{"legends name every region", checkLegends},
		{"stacked series", checkStackedSeries},
		{"breaker markers", checkBreakerMarkers},
		{"breaker bands", checkBreakerBands},
		{"fault windows", checkFaultWindows},
		{"self-contained", checkSelfContained},
		{"header", checkHeader},
		{"details", checkDetails},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, page, runs) })
	}
}

// checkResultsTable checks on the fixture's page that the results table has
// a row per run with its success, calls and outage cells, and the failure
// kinds in order.
func checkResultsTable(t *testing.T, page string, runs [][3]*node) {
	rows := regexp.MustCompile(`(?s)<tr class="run".*?</tr>`).FindAllString(page, -1)
	if len(rows) != 2 {
		t.Fatalf("got %d run rows, want 2", len(rows))
	}
	for i, want := range []struct{ setup, success, calls string }{
		{"gateway", `<td class="success">95.0%</td>`, "<td>1.28</td>"},
		{"client", `<td class="success">70.0%</td>`, "<td>–</td>"},
	} {
		for _, s := range []string{">" + want.setup + "</a>", want.success, want.calls} {
			if !strings.Contains(rows[i], s) {
				t.Errorf("row %d lacks %q:\n%s", i, s, rows[i])
			}
		}
	}
	// Failures by kind, in FailureKinds order; outage columns.
	if !regexp.MustCompile(`<th>429</th><th>503</th><th>connection</th><th>timeout</th>`).MatchString(page) {
		t.Errorf("failure kind headers missing or out of order")
	}
	for _, s := range []string{"<td>150/300</td><td>never</td><td>never</td><td>20 ms</td><td>never</td>", "moved after", "closed after"} {
		if !strings.Contains(rows[1]+page, s) {
			t.Errorf("outage cells lack %q", s)
		}
	}
}

// checkLegends checks on the fixture's page that the rps and latency plots'
// legends name every region and failures.
func checkLegends(t *testing.T, page string, runs [][3]*node) {
	for i, r := range runs {
		for _, plot := range r[:2] {
			legend := plot.find(byClass("legend"))
			if len(legend) != 1 {
				t.Fatalf("run %d %s: %d legends", i, plot.attr["class"], len(legend))
			}
			text := legend[0].allText()
			for _, name := range append(slices.Clone(fixtureRegions), "failed") {
				if !strings.Contains(text, name) {
					t.Errorf("run %d %s legend lacks %q: %s", i, plot.attr["class"], name, text)
				}
			}
		}
	}
}

// checkStackedSeries checks on the fixture's page that each rps plot stacks
// the backends that answered, failures on top, and the latency plot has a
// series for each.
func checkStackedSeries(t *testing.T, page string, runs [][3]*node) {
	gw, cl := runs[0], runs[1]
	series := func(plot *node) []string {
		var names []string
		for _, n := range plot.find(byClass("series")) {
			if n.name == "path" {
				names = append(names, n.attr["data-series"])
			}
		}
		return names
	}
	if got, want := series(gw[0]), []string{"uksouth", "swedencentral", "failed"}; !slices.Equal(got, want) {
		t.Errorf("gateway run stacks %v, want %v", got, want)
	}
	if got, want := series(cl[0]), []string{"uksouth", "failed"}; !slices.Equal(got, want) {
		t.Errorf("client run stacks %v, want %v", got, want)
	}
	if got, want := series(gw[1]), []string{"uksouth", "swedencentral", "failed"}; !slices.Equal(got, want) {
		t.Errorf("gateway latency series %v, want %v", got, want)
	}
}

// checkBreakerMarkers checks on the fixture's page that the gateway run
// marks uksouth's breaker opening and closing, and the client run has no
// markers.
func checkBreakerMarkers(t *testing.T, page string, runs [][3]*node) {
	gw, cl := runs[0], runs[1]
	markers := func(plot *node, state string) []string {
		var out []string
		for _, n := range plot.find(byClass("marker", state)) {
			out = append(out, n.attr["data-backend"])
		}
		return out
	}
	if got := markers(gw[0], "open"); !slices.Equal(got, []string{"uksouth"}) {
		t.Errorf("gateway run open markers %v, want [uksouth]", got)
	}
	if got := markers(gw[0], "closed"); !slices.Equal(got, []string{"uksouth"}) {
		t.Errorf("gateway run closed markers %v, want [uksouth]", got)
	}
	if got := cl[0].find(byClass("marker")); len(got) != 0 {
		t.Errorf("client run has %d markers, want none", len(got))
	}
}

// checkBreakerBands checks on the fixture's page that the gateway run has a
// band per region, uksouth's showing each state in turn, and the client run
// none.
func checkBreakerBands(t *testing.T, page string, runs [][3]*node) {
	gw, cl := runs[0], runs[1]
	var states []string
	for _, g := range gw[2].find(byClass("bands")) {
		if g.attr["data-backend"] != "uksouth" {
			continue
		}
		for _, r := range g.find(byClass("band")) {
			states = append(states, strings.Fields(r.attr["class"])[1])
		}
	}
	if want := []string{"closed", "open", "half_open", "closed"}; !slices.Equal(states, want) {
		t.Errorf("uksouth bands %v, want %v", states, want)
	}
	if n := len(gw[2].find(byClass("bands"))); n != len(fixtureRegions) {
		t.Errorf("gateway run has %d bands, want one per region", n)
	}
	if n := len(cl[2].find(byClass("band"))); n != 0 {
		t.Errorf("client run (no transitions) has %d bands, want none", n)
	}
	if !strings.Contains(cl[2].allText(), "No breaker changed state") {
		t.Errorf("client run's breaker plot does not say there were no changes")
	}
}

// checkFaultWindows checks on the fixture's page that every run's rps plot
// shades and labels the outage.
func checkFaultWindows(t *testing.T, page string, runs [][3]*node) {
	for i, r := range runs {
		rects := r[0].find(func(n *node) bool { return n.name == "rect" && n.hasClass("fault") })
		if len(rects) != 1 {
			t.Errorf("run %d rps plot has %d fault rects, want 1", i, len(rects))
		}
		if f := r[0].find(byClass("fault")); len(f) == 0 || !strings.Contains(f[0].allText(), "outage · uksouth") {
			t.Errorf("run %d fault window is not labelled", i)
		}
	}
}

// checkSelfContained checks on the fixture's page that the page refers to
// nothing off itself and has only its own script.
func checkSelfContained(t *testing.T, page string, runs [][3]*node) {
	for _, bad := range []string{"http://", "https://", "src=", "@import", "<link", "<img", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`(?:href="|url\()([^")]*)`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("reference %q leaves the page", m[0])
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("page has %d scripts, want the one toggle script", n)
	}
}

// checkHeader checks on the fixture's page that the page says when, where
// and how the game day ran, and that time was compressed.
func checkHeader(t *testing.T, page string, runs [][3]*node) {
	for _, s := range []string{"<h1>switchover game day</h1>", "2026-03-14 09:30:00 UTC", "linux/amd64, 2 CPUs",
		"switchover gameday -scenario primary-outage", "model latency and network timeouts were not", "Time compressed 30×"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

// checkDetails checks on the fixture's page that the first run's details
// are open and the second's closed.
func checkDetails(t *testing.T, page string, runs [][3]*node) {
	for _, s := range []string{`<details id="s1-r1" class="run" open>`, `<details id="s1-r2" class="run">`} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
}

func TestWriteHTMLListsNotifications(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<ul class="notes"><li>failover at 3.0 s: Active backend changed &lt;to&gt; westeurope.</li></ul>`) {
		t.Fatalf("notifications not listed (or not escaped)")
	}
}

func TestWriteHTMLEscapesData(t *testing.T) {
	r := fixtureReport()
	evil := `<script>alert("x")</script>&'`
	sc := &r.Scenarios[0]
	sc.Title, sc.Description, sc.Load = "T"+evil, "D"+evil, "L"+evil
	r.Command = "C" + evil
	r.Machine = "M" + evil
	old := sc.Regions[1].Name
	sc.Regions[1].Name = "R" + evil
	for i := range sc.Runs {
		run := &sc.Runs[i]
		run.Setup, run.Description, run.Mode = "S"+evil, "RD"+evil, "gateway"+evil
		for j := range run.Samples {
			if run.Samples[j].Backend == old {
				run.Samples[j].Backend = "R" + evil
			}
		}
		for j := range run.Transitions {
			run.Transitions[j].Cause += evil
			run.Transitions[j].Backend = "B" + evil
		}
		for j := range run.Faults {
			run.Faults[j].Mode += evil
		}
	}
	page := render(t, r)
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("page has %d <script, want only its own", n)
	}
	if strings.Contains(page, `alert("x")`) {
		t.Errorf("quotes from the data were not escaped")
	}
	runs := plots(t, page) // every SVG still parses
	if text := runs[0][0].find(byClass("legend"))[0].allText(); !strings.Contains(text, "R"+evil) {
		t.Errorf("legend lacks the escaped region name: %s", text)
	}
}

func TestWriteHTMLDeterministic(t *testing.T) {
	r := fixtureReport()
	// Several failure kinds and backends, so map order would show.
	r.Scenarios[0].Runs[0].Summary.Failures = map[string]int{"503": 1, "timeout": 2, "429": 3, "connection": 4, "invalid_body": 5}
	first := render(t, r)
	for range 5 {
		if again := render(t, r); again != first {
			t.Fatal("two renders of the same report differ")
		}
	}
}

func TestWriteHTMLEdgeCases(t *testing.T) {
	if err := WriteHTML(io.Discard, nil); err == nil {
		t.Error("WriteHTML(nil) returned no error")
	}
	for name, r := range map[string]*Report{
		"empty":       {},
		"no regions":  {Realtime: true, Scenarios: []ScenarioResult{{Name: "x", Runs: []RunResult{{Setup: "s"}}}}},
		"no samples":  {Scenarios: []ScenarioResult{{Name: "x", Regions: []RegionInfo{{Name: "a"}}, Runs: []RunResult{{Setup: "s", Duration: time.Second}}}}},
		"one request": {Scenarios: []ScenarioResult{{Name: "x", Runs: []RunResult{{Setup: "s", Samples: []load.Sample{{OK: true, Backend: "a"}}}}}}},
		"transition outside the run": {Scenarios: []ScenarioResult{{Name: "x", Runs: []RunResult{{Setup: "s", Duration: time.Second,
			Transitions: []Transition{{At: -time.Second, Backend: "a", From: "closed", To: "open"}, {At: 5 * time.Second, Backend: "a", From: "open", To: "weird"}},
			Faults:      []FaultWindow{{Region: "a", Mode: "outage", From: 2 * time.Second, To: time.Second}}}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			page := render(t, r)
			plots(t, page)
		})
	}
}

func TestWriteHTMLSize(t *testing.T) {
	// 25 runs of 5000 requests each should stay well under a few MB.
	r := fixtureReport()
	base := r.Scenarios[0].Runs[0]
	var samples []load.Sample
	for k := range 10 {
		for _, s := range base.Samples {
			s.Start += time.Duration(k) * 10 * time.Second
			samples = append(samples, s)
		}
	}
	run := base
	run.Samples, run.Duration = samples, 101*time.Second
	r.Scenarios[0].Runs = nil
	for range 25 {
		r.Scenarios[0].Runs = append(r.Scenarios[0].Runs, run)
	}
	page := render(t, r)
	if n := len(plots(t, page)); n != 25 {
		t.Fatalf("plots for %d runs, want 25", n)
	}
	if len(page) > 2<<20 {
		t.Errorf("page is %d bytes, want under 2 MiB", len(page))
	}
	t.Logf("25 runs of %d requests: %d bytes", len(samples), len(page))
}

func BenchmarkWriteHTML(b *testing.B) {
	r := fixtureReport()
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteHTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
