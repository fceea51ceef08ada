package gameday

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// WriteHTML writes r as one self-contained HTML page: inline CSS and
// inline SVG plots, nothing fetched from the network, and a few lines of
// optional script (expand/collapse all) that the page does not need. Per
// scenario it has the regions, a results table with a row per setup and,
// per run, plots of requests per second by region, latency over time and
// breaker states, on one time axis. Runs' Samples are plotted, so render a
// Report before dropping them. The page is built in memory and written in
// one call, so on error nothing has been written. The same Report always
// gives the same bytes. WriteHTML only reads r, so concurrent calls on one
// Report are safe as long as nothing modifies it.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("gameday: WriteHTML of a nil report")
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, buildPage(r)); err != nil {
		return fmt.Errorf("gameday: rendering HTML: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Plot geometry and limits.
const (
	plotWidth = 960.0
	// plotLeft leaves room for the breaker bands' backend names, and is the
	// same for every plot of a run so that their time axes line up.
	plotLeft  = 104.0
	plotRight = 16.0
	// maxBuckets bounds the time buckets of the requests-per-second plot.
	maxBuckets = 120
	// maxScatterPoints bounds the points of a latency plot.
	maxScatterPoints = 2500
)

// Colours. Regions take colours from regionPalette by first appearance on
// the page; failures are always colourFailed.
const (
	colourFailed       = "#d62728"
	colourUnlabelled   = "#8c8c8c"
	colourClosed       = "#c7e3c2"
	colourHalfOpen     = "#f0a30a"
	colourOpen         = "#d62728"
	colourOtherState   = "#bdbdbd"
	colourClosedMarker = "#2b8a3e"
	colourFault        = "#9e9e9e"
	colourReference    = "#333"
)

var regionPalette = []string{
	"#4e79a7", // blue
	"#f28e2b", // orange
	"#76b7b2", // teal
	"#b07aa1", // purple
	"#59a14f", // green
	"#9c755f", // brown
	"#ff9da7", // pink
	"#edc948", // yellow
	"#1f5f8b", // dark blue
	"#8cd17d", // light green
}

// colours maps each backend on a page to its colour.
type colours map[string]string

// pageColours assigns colours to the regions of every scenario in order,
// then to other backends seen in samples or transitions, sorted by name,
// so a region has one colour on the whole page.
func pageColours(r *Report) colours {
	c := colours{}
	add := func(name string) {
		if _, ok := c[name]; !ok && name != "" {
			c[name] = regionPalette[len(c)%len(regionPalette)]
		}
	}
	for _, sc := range r.Scenarios {
		for _, reg := range sc.Regions {
			add(reg.Name)
		}
	}
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		for j := range sc.Runs {
			for _, b := range runBackends(sc, &sc.Runs[j]) {
				add(b)
			}
		}
	}
	return c
}

// of is backend's colour.
func (c colours) of(backend string) string {
	if col, ok := c[backend]; ok {
		return col
	}
	return colourUnlabelled
}

// backendLabel names a backend in legends; successes without a backend
// header are "unlabelled".
func backendLabel(b string) string {
	if b == "" {
		return "unlabelled"
	}
	return b
}

// runBackends lists the backends of a run in plotting order: the
// scenario's regions in order, then any other backend that answered a
// request or had a breaker transition, sorted ("" first, for successes
// without a backend header).
func runBackends(sc *ScenarioResult, run *RunResult) []string {
	var out []string
	for _, reg := range sc.Regions {
		if !slices.Contains(out, reg.Name) {
			out = append(out, reg.Name)
		}
	}
	var extra []string
	note := func(b string) {
		if !slices.Contains(out, b) && !slices.Contains(extra, b) {
			extra = append(extra, b)
		}
	}
	for _, s := range run.Samples {
		if s.OK {
			note(s.Backend)
		}
	}
	for _, t := range run.Transitions {
		note(t.Backend)
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// runSpan is the time axis of a run's plots: its duration, stretched to
// the last answer or transition if one came later.
func runSpan(run *RunResult) time.Duration {
	span := run.Duration
	for _, s := range run.Samples {
		span = max(span, s.End())
	}
	for _, t := range run.Transitions {
		span = max(span, t.At)
	}
	if span <= 0 {
		span = time.Second
	}
	return span
}

// rpsBuckets counts completed requests per time bucket.
type rpsBuckets struct {
	// Width is the width of a bucket; bucket b runs from b*Width to
	// (b+1)*Width.
	Width time.Duration
	// Backends name the success series, bottom of the stack first.
	Backends []string
	// OK[i][b] counts successful requests answered by Backends[i] that
	// ended in bucket b.
	OK [][]int
	// Failed[b] counts failed requests that ended in bucket b.
	Failed []int
}

// bucketWidth picks a bucket width for a time axis of length span: the
// smallest of 1, 2, 2.5 and 5 times a power of ten milliseconds (no 2.5
// below 10 ms) that makes at most maxBuckets buckets.
func bucketWidth(span time.Duration) time.Duration {
	target := span / maxBuckets
	for p := time.Millisecond; ; p *= 10 {
		for _, m := range []float64{1, 2, 2.5, 5} {
			if m == 2.5 && p < 10*time.Millisecond {
				continue
			}
			if c := time.Duration(m * float64(p)); c >= target {
				return c
			}
		}
	}
}

// bucketRequests counts samples by the bucket of width width in which they
// ended, over [0, span): successes by backend, failures apart. Successes
// from a backend not in backends get a series of their own after them, in
// order of name. Samples that ended outside [0, span) count in the first or
// last bucket.
func bucketRequests(samples []load.Sample, backends []string, span, width time.Duration) rpsBuckets {
	if width <= 0 {
		width = time.Millisecond
	}
	n := int(max((span+width-1)/width, 1))
	b := rpsBuckets{Width: width, Backends: slices.Clone(backends), Failed: make([]int, n)}
	var extra []string
	for _, s := range samples {
		if s.OK && !slices.Contains(b.Backends, s.Backend) && !slices.Contains(extra, s.Backend) {
			extra = append(extra, s.Backend)
		}
	}
	slices.Sort(extra)
	b.Backends = append(b.Backends, extra...)
	b.OK = make([][]int, len(b.Backends))
	for i := range b.OK {
		b.OK[i] = make([]int, n)
	}
	for _, s := range samples {
		i := min(max(int(s.End()/width), 0), n-1)
		if !s.OK {
			b.Failed[i]++
			continue
		}
		b.OK[slices.Index(b.Backends, s.Backend)][i]++
	}
	return b
}

// stateSpan is a breaker state over a stretch of a run.
type stateSpan struct {
	From, To time.Duration
	State    string
	// Cause is the cause of the transition into State, "" for the state
	// the run began in.
	Cause string
}

// breakerSpans lays backend's breaker states end to end over [0, span]
// from transitions (of any backends, in any order): the state before the
// first transition is that transition's From, or "closed" if it has none.
// Zero-length states (two transitions at the same instant) are dropped.
func breakerSpans(transitions []Transition, backend string, span time.Duration) []stateSpan {
	var ts []Transition
	for _, t := range transitions {
		if t.Backend == backend {
			ts = append(ts, t)
		}
	}
	slices.SortStableFunc(ts, func(a, b Transition) int { return cmpDuration(a.At, b.At) })
	cur := stateSpan{State: "closed"}
	if len(ts) > 0 && ts[0].From != "" {
		cur.State = ts[0].From
	}
	var out []stateSpan
	for _, t := range ts {
		at := min(max(t.At, 0), span)
		if at > cur.From {
			cur.To = at
			out = append(out, cur)
		}
		cur = stateSpan{From: at, State: t.To, Cause: t.Cause}
	}
	if span > cur.From || len(out) == 0 {
		cur.To = span
		out = append(out, cur)
	}
	return out
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// thinSamples returns samples ordered by start time, evenly thinned to at
// most limit of them (every one when there are no more than limit).
func thinSamples(samples []load.Sample, limit int) []load.Sample {
	s := slices.Clone(samples)
	slices.SortStableFunc(s, func(a, b load.Sample) int {
		if c := cmpDuration(a.Start, b.Start); c != 0 {
			return c
		}
		return cmpDuration(a.Latency, b.Latency)
	})
	if limit <= 0 || len(s) <= limit {
		return s
	}
	out := make([]load.Sample, 0, limit)
	for i := range limit {
		out = append(out, s[i*len(s)/limit])
	}
	return out
}

// formatDuration formats d for people: "850 µs", "3.4 ms", "340 ms",
// "1.2 s", "125 s"; a negative d (the report's "did not happen") is
// "never".
func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "never"
	case d == 0:
		return "0 ms"
	}
	if r := d.Round(time.Microsecond); r < time.Millisecond {
		return fmt.Sprintf("%d µs", r/time.Microsecond)
	}
	if r := d.Round(100 * time.Microsecond); r < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(r)/float64(time.Millisecond))
	}
	if r := d.Round(time.Millisecond); r < time.Second {
		return fmt.Sprintf("%d ms", r/time.Millisecond)
	}
	if r := d.Round(100 * time.Millisecond); r < 100*time.Second {
		return fmt.Sprintf("%.1f s", r.Seconds())
	}
	return fmt.Sprintf("%d s", d.Round(time.Second)/time.Second)
}

// formatPercent formats a rate in 0..1 as a percentage with one decimal,
// never rounding a partial success up to "100.0%" or a partial failure
// down to "0.0%".
func formatPercent(rate float64) string {
	switch {
	case math.IsNaN(rate):
		return "–"
	case rate >= 1:
		return "100%"
	case rate <= 0:
		return "0%"
	}
	p := rate * 100
	for _, dec := range []int{1, 2} {
		s := strconv.FormatFloat(p, 'f', dec, 64)
		if !strings.HasPrefix(s, "100.") && strings.Trim(s, "0.") != "" {
			return s + "%"
		}
	}
	if p > 50 {
		return ">99.99%"
	}
	return "<0.01%"
}

// formatCount formats n with thousands separators: 12,345.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatLimit formats a quota, where 0 means no limit.
func formatLimit(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return formatCount(n)
}

// formatMillis labels a latency axis tick given in milliseconds.
func formatMillis(v float64) string {
	if v >= 1000 {
		return trimFloat(v/1000) + " s"
	}
	return trimFloat(v) + " ms"
}

// The page as the template sees it: every value is already formatted.
type (
	htmlPage struct {
		Started, Machine, Command string
		Realtime                  bool
		Scenarios                 []htmlScenario
	}
	htmlScenario struct {
		ID, Name, Title, Description, Load, Compress, Targets string
		Regions                                               []htmlRegion
		FailureKinds                                          []string
		HasOutage                                             bool
		Runs                                                  []htmlRun
	}
	htmlRegion struct {
		Name, Median, RPM, TPM string
		Swatch                 template.CSS
	}
	htmlRun struct {
		ID, Setup, Mode, Description, Open string
		// Noise describes the noise load's requests, if any.
		Noise string
		// Table cells.
		Requests, Success, P50, P95, Goodput, Calls, Failovers, Failed string
		Failures                                                       []string
		Outage                                                         *htmlOutage
		// Notes are the notifications the run sent, one line each.
		Notes []string
		// Plots.
		RPS, Latency, Breakers   template.HTML
		BucketWidth, ShownPoints string
		// SummaryLine is the <summary> of the run's <details>.
		SummaryLine string
	}
	htmlOutage struct {
		Primary, Failed, Moved, Benched, Back, Closed string
	}
)

// buildPage formats r for the template.
func buildPage(r *Report) htmlPage {
	col := pageColours(r)
	p := htmlPage{
		Machine:  r.Machine,
		Command:  r.Command,
		Realtime: r.Realtime,
		Started:  "unknown",
	}
	if !r.Started.IsZero() {
		p.Started = r.Started.Format("2006-01-02 15:04:05 MST")
	}
	for si := range r.Scenarios {
		p.Scenarios = append(p.Scenarios, buildScenario(&r.Scenarios[si], si, col))
	}
	return p
}

func buildScenario(sc *ScenarioResult, si int, col colours) htmlScenario {
	h := htmlScenario{
		ID:          fmt.Sprintf("s%d", si+1),
		Name:        sc.Name,
		Title:       sc.Title,
		Description: sc.Description,
		Load:        sc.Load,
		Targets:     sc.Targets,
	}
	if h.Title == "" {
		h.Title = sc.Name
	}
	if sc.Compress > 0 && sc.Compress != 1 {
		h.Compress = trimFloat(math.Round(sc.Compress*100)/100) + "×"
	}
	for _, reg := range sc.Regions {
		h.Regions = append(h.Regions, htmlRegion{
			Name:   reg.Name,
			Median: formatDuration(reg.MedianLatency),
			RPM:    formatLimit(reg.RPM),
			TPM:    formatLimit(reg.TPM),
			Swatch: template.CSS("background:" + col.of(reg.Name)),
		})
	}
	all := load.Summary{Failures: map[string]int{}}
	for _, run := range sc.Runs {
		for k, n := range run.Summary.Failures {
			all.Failures[k] += n
		}
		if run.Outage != nil {
			h.HasOutage = true
		}
	}
	h.FailureKinds = all.FailureKinds()
	for ri := range sc.Runs {
		h.Runs = append(h.Runs, buildRun(sc, &sc.Runs[ri], fmt.Sprintf("%s-r%d", h.ID, ri+1), ri == 0, h.FailureKinds, col))
	}
	return h
}

func buildRun(sc *ScenarioResult, run *RunResult, id string, first bool, kinds []string, col colours) htmlRun {
	sum := run.Summary
	h := htmlRun{
		ID:          id,
		Setup:       run.Setup,
		Mode:        run.Mode,
		Description: run.Description,
		Requests:    formatCount(sum.Requests),
		Success:     "–",
		P50:         "–",
		P95:         "–",
		Goodput:     strconv.FormatFloat(sum.Goodput, 'f', 1, 64),
		Calls:       "–",
		Failovers:   formatCount(sum.Failovers),
		Failed:      formatCount(sum.Failed),
	}
	if first || run.Mode == "gateway" {
		h.Open = "open"
	}
	if sum.Requests > 0 {
		h.Success = formatPercent(sum.SuccessRate)
	}
	if sum.Latency.N > 0 {
		h.P50, h.P95 = formatDuration(sum.Latency.P50), formatDuration(sum.Latency.P95)
	}
	if sum.Upstream != nil {
		h.Calls = strconv.FormatFloat(sum.Upstream.CallsPerRequest, 'f', 2, 64)
	}
	if sum.Dropped > 0 {
		h.Requests += fmt.Sprintf(" (+%s dropped)", formatCount(sum.Dropped))
	}
	for _, k := range kinds {
		if n := sum.Failures[k]; n > 0 {
			h.Failures = append(h.Failures, formatCount(n))
		} else {
			h.Failures = append(h.Failures, "–")
		}
	}
	if o := run.Outage; o != nil {
		h.Outage = &htmlOutage{
			Primary: o.Primary,
			Failed:  outageFailed(o),
			Moved:   formatDuration(o.Moved),
			Benched: formatDuration(o.Benched),
			Back:    formatDuration(o.Back),
			Closed:  formatDuration(o.Closed),
		}
	}
	if run.Noise != nil {
		h.Noise = noiseLine(run.Noise)
	}
	for _, n := range run.Notifications {
		h.Notes = append(h.Notes, fmt.Sprintf("%s at %s: %s", n.Kind, formatDuration(n.At), n.Text))
	}
	h.SummaryLine = fmt.Sprintf("%s · %s — %s success, p95 %s, %s failovers", run.Setup, run.Mode, h.Success, h.P95, h.Failovers)

	backends := runBackends(sc, run)
	span := runSpan(run)
	buckets := bucketRequests(run.Samples, backends, span, bucketWidth(span))
	h.BucketWidth = formatDuration(buckets.Width)
	h.RPS = rpsPlot(run, buckets, span, id, col)
	var shown int
	h.Latency, shown = latencyPlot(run, backends, span, col)
	if shown < len(run.Samples) {
		h.ShownPoints = fmt.Sprintf("an even %s of the %s requests", formatCount(shown), formatCount(len(run.Samples)))
	} else {
		h.ShownPoints = fmt.Sprintf("all %s requests", formatCount(len(run.Samples)))
	}
	h.Breakers = breakerPlot(run, backends, span)
	return h
}

// secondsTicks are the time axis ticks of a run, labelled in seconds.
func secondsTicks(span time.Duration) []tick {
	return linearTicks(0, span.Seconds(), 10, trimFloat)
}

const timeCaption = "seconds since the start of the run"

// rpsPlot draws the requests per second of a run, stacked by backend with
// failures on top, with fault windows shaded and breaker opens and closes
// marked.
func rpsPlot(run *RunResult, b rpsBuckets, span time.Duration, id string, col colours) template.HTML {
	items := make([]legendItem, 0, len(b.Backends)+4)
	for _, be := range b.Backends {
		items = append(items, legendItem{label: backendLabel(be), colour: col.of(be)})
	}
	items = append(items, legendItem{label: "failed", colour: colourFailed})
	var markers []Transition
	for _, t := range run.Transitions {
		if t.To == "open" || t.To == "closed" {
			markers = append(markers, t)
		}
	}
	slices.SortStableFunc(markers, func(a, b Transition) int { return cmpDuration(a.At, b.At) })
	if len(run.Faults) > 0 {
		items = append(items, legendItem{label: "fault window", colour: colourFault})
	}
	if slices.ContainsFunc(markers, func(t Transition) bool { return t.To == "open" }) {
		items = append(items, legendItem{label: "breaker opened", colour: colourOpen, shape: "line"})
	}
	if slices.ContainsFunc(markers, func(t Transition) bool { return t.To == "closed" }) {
		items = append(items, legendItem{label: "breaker closed", colour: colourClosedMarker, shape: "line"})
	}
	legendH := legendHeight(items, plotWidth)
	const markerRows, markerRow = 2, 12.0
	top := 6 + legendH + 18
	if len(markers) > 0 {
		top += markerRows * markerRow
	}
	const area = 200.0
	p := newSVGPlot(plotWidth, top+area+38, margins{top: top, right: plotRight, bottom: 38, left: plotLeft},
		"plot rps", "requests per second by backend over time")
	p.legend(items, 6)

	// Stack the series: lower and upper edges per bucket, in req/s.
	n := len(b.Failed)
	perSec := 1 / b.Width.Seconds()
	series := append(slices.Clone(b.OK), b.Failed)
	lower := make([]float64, n)
	peak := 0.0
	for i := range n {
		total := 0
		for _, s := range series {
			total += s[i]
		}
		peak = max(peak, float64(total)*perSec)
	}
	p.setX(0, span.Seconds())
	// Headroom above the peak for the fault labels, up to a whole tick.
	step := niceStep(peak * 1.05 / 6)
	ymax := math.Ceil(peak*1.05/step) * step
	if peak == 0 {
		ymax = 1
	}
	p.setY(0, ymax, false)
	p.yAxis(linearTicks(0, ymax, 6, trimFloat), "req/s")

	p.open("g", "class", "stack")
	for si, s := range series {
		name, colour := colourFailed, colourFailed
		if si < len(b.Backends) {
			name, colour = b.Backends[si], col.of(b.Backends[si])
		}
		upper := make([]float64, n)
		nonzero := false
		for i := range n {
			upper[i] = lower[i] + float64(s[i])*perSec
			nonzero = nonzero || s[i] > 0
		}
		if nonzero {
			class := "series"
			if si == len(b.Backends) {
				class, name = "series failed", "failed"
			}
			p.path(stepArea(p, b.Width, span, lower, upper), "class", class, "data-series", name, "fill", colour)
		}
		lower = upper
	}
	p.close("g")

	// Fault windows over the stack, see-through and hatched.
	if len(run.Faults) > 0 {
		hatch := "hatch-" + id
		p.open("defs")
		p.open("pattern", "id", hatch, "width", "6", "height", "6", "patternUnits", "userSpaceOnUse", "patternTransform", "rotate(45)")
		p.line(0, 0, 0, 6, "stroke", colourFault, "stroke-width", "2")
		p.close("pattern")
		p.close("defs")
		p.open("g", "class", "faults")
		for _, f := range run.Faults {
			x0 := p.px(max(f.From, 0).Seconds())
			x1 := p.px(min(f.To, span).Seconds())
			if f.To <= f.From || x1 <= x0 {
				x1 = x0 + 1
			}
			label := f.Mode + " · " + f.Region
			p.open("g", "class", "fault", "data-region", f.Region)
			p.title(fmt.Sprintf("fault %s on %s from %s to %s", f.Mode, f.Region, formatDuration(f.From), formatDuration(f.To)))
			p.rect(x0, p.top(), x1-x0, p.bottom()-p.top(), "class", "fault", "fill", "url(#"+hatch+")", "fill-opacity", "0.45", "stroke", colourFault, "stroke-dasharray", "4 3")
			p.text(x0+3, p.top()+12, label, "fill", "#444", "font-style", "italic", "stroke", "#fff", "stroke-width", "3", "paint-order", "stroke", "stroke-opacity", "0.8")
			p.close("g")
		}
		p.close("g")
	}

	// Breaker markers: a line down the plot, a triangle on top and the
	// backend's name in a strip above, where there is room for it.
	if len(markers) > 0 {
		p.open("g", "class", "markers")
		var rowEnd [markerRows]float64
		for i := range rowEnd {
			rowEnd[i] = math.Inf(-1)
		}
		for _, t := range markers {
			x := p.px(t.At.Seconds())
			colour := colourOpen
			if t.To == "closed" {
				colour = colourClosedMarker
			}
			p.open("g", "class", "marker "+t.To, "data-backend", t.Backend)
			p.title(fmt.Sprintf("%s breaker %s → %s at %s: %s", t.Backend, t.From, t.To, formatDuration(t.At), t.Cause))
			p.line(x, p.top(), x, p.bottom(), "stroke", colour, "stroke-width", "1.5", "stroke-dasharray", "5 3")
			p.path("M"+num(x-4)+" "+num(p.top()-6)+"h8l-4 6z", "fill", colour)
			label := t.Backend + " " + t.To
			w := textWidth(label)
			lx := min(max(x-w/2, p.left()), p.right()-w)
			for row := range markerRows {
				if lx >= rowEnd[row]+6 {
					rowEnd[row] = lx + w
					p.text(lx, p.top()-10-float64(row)*markerRow, label, "fill", colour)
					break
				}
			}
			p.close("g")
		}
		p.close("g")
	}
	p.xAxis(secondsTicks(span), timeCaption)
	return p.html()
}

// stepArea is the path of a stacked step area between lower and upper
// (req/s per bucket of width w), drawn to span. Runs of equal buckets make
// one segment.
func stepArea(p *svgPlot, w, span time.Duration, lower, upper []float64) string {
	n := len(upper)
	x := func(i int) string { return num(p.px(min(time.Duration(i)*w, span).Seconds())) }
	var d strings.Builder
	d.WriteString("M" + x(0) + " " + num(p.py(upper[0])))
	for i := range n {
		if i == n-1 || upper[i+1] != upper[i] {
			d.WriteString("H" + x(i+1))
			if i < n-1 {
				d.WriteString("V" + num(p.py(upper[i+1])))
			}
		}
	}
	d.WriteString("V" + num(p.py(lower[n-1])))
	for i := n - 1; i >= 0; i-- {
		if i == 0 || lower[i-1] != lower[i] {
			d.WriteString("H" + x(i))
			if i > 0 {
				d.WriteString("V" + num(p.py(lower[i-1])))
			}
		}
	}
	d.WriteString("Z")
	return d.String()
}

// latencyPlot draws each request's latency at its start time on a log
// scale, successes as dots coloured by backend and failures as red
// crosses, with the run's p50 and p95 as reference lines. It returns the
// plot and how many requests it shows.
func latencyPlot(run *RunResult, backends []string, span time.Duration, col colours) (template.HTML, int) {
	items := make([]legendItem, 0, len(backends)+3)
	for _, be := range backends {
		items = append(items, legendItem{label: backendLabel(be), colour: col.of(be), shape: "dot"})
	}
	items = append(items, legendItem{label: "failed", colour: colourFailed, shape: "cross"})
	lat := run.Summary.Latency
	if lat.N > 0 {
		items = append(items, legendItem{label: "p50 / p95 of all requests", colour: colourReference, shape: "line"})
	}
	top := 6 + legendHeight(items, plotWidth) + 18
	const area = 180.0
	p := newSVGPlot(plotWidth, top+area+38, margins{top: top, right: plotRight, bottom: 38, left: plotLeft},
		"plot latency", "latency of each request at its start time")
	p.legend(items, 6)
	p.setX(0, span.Seconds())

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	lo, hi := math.Inf(1), 0.0
	for _, s := range run.Samples {
		v := math.Max(ms(s.Latency), 0.1)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if len(run.Samples) == 0 {
		lo, hi = 1, 1000
	}
	ylo := math.Pow(10, math.Floor(math.Log10(lo)))
	yhi := math.Pow(10, math.Ceil(math.Log10(hi)))
	if yhi <= ylo {
		yhi = ylo * 10
	}
	p.setY(ylo, yhi, true)
	p.yAxis(logTicks(ylo, yhi, formatMillis), "latency")

	for _, f := range run.Faults {
		x0, x1 := p.px(max(f.From, 0).Seconds()), p.px(min(f.To, span).Seconds())
		p.rect(x0, p.top(), max(x1-x0, 1), p.bottom()-p.top(), "class", "fault", "fill", colourFault, "fill-opacity", "0.12")
	}

	shown := thinSamples(run.Samples, maxScatterPoints)
	names := slices.Clone(backends)
	dots := make([]*strings.Builder, len(names))
	var crosses strings.Builder
	for _, s := range shown {
		x, y := p.px(s.Start.Seconds()), p.py(math.Max(ms(s.Latency), ylo))
		if !s.OK {
			crosses.WriteString(crossPath(x, y, 2.5))
			continue
		}
		i := slices.Index(names, s.Backend)
		if i < 0 {
			names, dots = append(names, s.Backend), append(dots, nil)
			i = len(names) - 1
		}
		if dots[i] == nil {
			dots[i] = &strings.Builder{}
		}
		dots[i].WriteString("M" + num(x) + " " + num(y) + "h0")
	}
	p.open("g", "class", "points", "stroke-linecap", "round", "fill", "none")
	for i, be := range names {
		if dots[i] != nil {
			p.path(dots[i].String(), "class", "series", "data-series", be, "stroke", col.of(be), "stroke-width", "3", "stroke-opacity", "0.6")
		}
	}
	if crosses.Len() > 0 {
		p.path(crosses.String(), "class", "series failed", "data-series", "failed", "stroke", colourFailed, "stroke-width", "1.2")
	}
	p.close("g")

	if lat.N > 0 {
		p.open("g", "class", "reference")
		// p50's label goes under its line and p95's over its own, so the
		// two do not collide when the lines are close.
		for _, ref := range []struct {
			name string
			d    time.Duration
			dy   float64
		}{{"p50", lat.P50, 12}, {"p95", lat.P95, -4}} {
			y := p.py(math.Max(ms(ref.d), ylo))
			p.line(p.left(), y, p.right(), y, "stroke", colourReference, "stroke-width", "1", "stroke-dasharray", "6 4")
			p.text(p.right()-4, y+ref.dy, ref.name+" "+formatDuration(ref.d), "text-anchor", "end", "fill", colourReference,
				"stroke", "#fff", "stroke-width", "3", "paint-order", "stroke")
		}
		p.close("g")
	}
	p.xAxis(secondsTicks(span), timeCaption)
	return p.html(), len(shown)
}

// stateColour is the band colour of a breaker state.
func stateColour(state string) string {
	switch state {
	case "closed":
		return colourClosed
	case "half_open":
		return colourHalfOpen
	case "open":
		return colourOpen
	}
	return colourOtherState
}

// stateClass is a CSS class for a breaker state name from the data.
func stateClass(state string) string {
	switch state {
	case "closed", "half_open", "open":
		return "band " + state
	}
	return "band other"
}

// breakerPlot draws one band per backend showing its breaker state over
// the run, or says that no breaker changed state.
func breakerPlot(run *RunResult, backends []string, span time.Duration) template.HTML {
	if len(run.Transitions) == 0 {
		p := newSVGPlot(plotWidth, 30, margins{left: plotLeft, right: plotRight}, "plot breakers", "breaker states: no changes")
		p.text(plotLeft, 19, "No breaker changed state during this run.", "fill", colourCaption, "font-style", "italic")
		return p.html()
	}
	var bands []string
	for _, be := range backends {
		if be != "" {
			bands = append(bands, be)
		}
	}
	items := []legendItem{
		{label: "closed", colour: colourClosed},
		{label: "half_open", colour: colourHalfOpen},
		{label: "open", colour: colourOpen},
	}
	const row, gap = 16.0, 5.0
	top := 6 + legendHeight(items, plotWidth) + 6
	h := top + float64(len(bands))*(row+gap) + 38
	p := newSVGPlot(plotWidth, h, margins{top: top, right: plotRight, bottom: 38, left: plotLeft},
		"plot breakers", "breaker state per backend over time")
	p.legend(items, 6)
	p.setX(0, span.Seconds())
	for i, be := range bands {
		y := top + float64(i)*(row+gap)
		p.open("g", "class", "bands", "data-backend", be)
		name := be
		if r := []rune(name); len(r) > 15 {
			name = string(r[:14]) + "…"
		}
		p.open("text", "x", num(plotLeft-8), "y", num(y+row/2+4), "text-anchor", "end", "fill", colourAxisText)
		p.title(be)
		p.b.WriteString(esc(name))
		p.close("text")
		for _, s := range breakerSpans(run.Transitions, be, span) {
			x0, x1 := p.px(s.From.Seconds()), p.px(s.To.Seconds())
			tip := fmt.Sprintf("%s %s from %s to %s", be, s.State, formatDuration(s.From), formatDuration(s.To))
			if s.Cause != "" {
				tip += ": " + s.Cause
			}
			p.open("rect", "x", num(x0), "y", num(y), "width", num(max(x1-x0, 0.5)), "height", num(row),
				"class", stateClass(s.State), "fill", stateColour(s.State))
			p.title(tip)
			p.close("rect")
		}
		p.close("g")
	}
	p.xAxis(secondsTicks(span), timeCaption)
	return p.html()
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>switchover game day — {{.Started}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:1000px;margin:0 auto;padding:0 16px 48px}
h1{font-size:1.7em;margin:24px 0 4px}
h2{font-size:1.35em;margin:40px 0 6px;padding-bottom:4px;border-bottom:2px solid #ddd}
h3{font-size:1.05em;margin:18px 0 6px}
h4{font-size:.95em;margin:14px 0 2px;font-weight:600}
p{margin:6px 0}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:.92em}
.meta{color:#555}
.meta dt{float:left;clear:left;width:7em;font-weight:600}
.meta dd{margin:0 0 2px 7.5em}
.note{background:#fff8e1;border-left:4px solid #f0a30a;padding:6px 10px;margin:10px 0}
.desc{white-space:pre-line}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 8px;border-bottom:1px solid #e6e6e6;text-align:right;white-space:nowrap}
th{background:#f6f6f6;font-weight:600;vertical-align:bottom}
th.l,td.l{text-align:left}
tr.group th{background:#fff;border-bottom:none;text-align:center;color:#555;font-weight:normal}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
details{border:1px solid #ddd;border-radius:6px;margin:12px 0;padding:0 12px 8px}
summary{cursor:pointer;padding:8px 0;font-weight:600}
figure{margin:6px 0 10px}
figcaption{color:#555;font-size:.9em}
svg{display:block;max-width:100%;height:auto}
footer{margin-top:40px;border-top:1px solid #ddd;color:#444}
.toggles button{font:inherit;margin-right:6px}
</style>
</head>
<body>
<h1>switchover game day</h1>
<dl class="meta">
<dt>When</dt><dd>{{.Started}}</dd>
<dt>Machine</dt><dd>{{if .Machine}}{{.Machine}}{{else}}unknown{{end}}</dd>
<dt>Command</dt><dd>{{if .Command}}<code>{{.Command}}</code>{{else}}unknown{{end}}</dd>
<dt>Time</dt><dd>{{if .Realtime}}real time{{else}}compressed{{end}}</dd>
</dl>
{{- if not .Realtime}}
<p class="note">Durations were compressed per scenario, by the factor shown with each: quotas, request rates, breaker timings and fault times were scaled to run faster; model latency and network timeouts were not. Times on the plots are the compressed run's own.</p>
{{- end}}
{{- if .Scenarios}}
<p>Scenarios:{{range $i, $s := .Scenarios}}{{if $i}} ·{{end}} <a href="#{{$s.ID}}">{{$s.Title}}</a>{{end}}</p>
{{- end}}
<p class="toggles" id="toggles"></p>
{{range .Scenarios}}
<section id="{{.ID}}">
<h2>{{.Title}}{{if and .Name (ne .Name .Title)}} <code>{{.Name}}</code>{{end}}</h2>
{{- if .Description}}
<p class="desc">{{.Description}}</p>
{{- end}}
{{- if .Compress}}
<p class="meta">Time compressed {{.Compress}}: quotas, rates, breaker timings and fault times scaled; model latency and network timeouts not.</p>
{{- end}}
{{- if .Load}}
<p><strong>Load:</strong> {{.Load}}</p>
{{- end}}
{{- if .Targets}}
<p><strong>Targets:</strong> {{.Targets}}</p>
{{- end}}
{{- if .Regions}}
<h3>Regions</h3>
<div class="scroll"><table class="regions">
<tr><th class="l">region</th><th>median latency</th><th>RPM</th><th>TPM</th></tr>
{{- range .Regions}}
<tr><td class="l"><span class="swatch" style="{{.Swatch}}"></span>{{.Name}}</td><td>{{.Median}}</td><td>{{.RPM}}</td><td>{{.TPM}}</td></tr>
{{- end}}
</table></div>
{{- end}}
<h3>Results</h3>
<div class="scroll"><table class="results">
<tr class="group"><th colspan="10"></th>{{if .FailureKinds}}<th colspan="{{len .FailureKinds}}">failures by kind</th>{{end}}{{if .HasOutage}}<th colspan="5">primary outage</th>{{end}}</tr>
<tr><th class="l">setup</th><th class="l">mode</th><th>requests</th><th>success</th><th title="latency of all requests">p50</th><th title="latency of all requests">p95</th><th title="successful requests per second">goodput req/s</th><th title="model calls per request sent">upstream calls/req</th><th>failovers</th><th>failed</th>
{{- range .FailureKinds}}<th>{{.}}</th>{{end}}
{{- if .HasOutage}}<th title="of the requests in flight at some moment of the outage (those in flight when it began included), how many failed">failed in outage</th><th title="from the outage's start to the first answer from another region">moved after</th><th title="from the outage's start to the primary's breaker opening">benched after</th><th title="from the outage's end to the primary answering again">back after</th><th title="from the outage's end to the primary's breaker closing">closed after</th>{{end}}</tr>
{{- $outage := .HasOutage}}
{{- range .Runs}}
<tr class="run" id="row-{{.ID}}"><td class="l"><a href="#{{.ID}}">{{.Setup}}</a></td><td class="l">{{.Mode}}</td><td>{{.Requests}}</td><td class="success">{{.Success}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.Goodput}}</td><td>{{.Calls}}</td><td>{{.Failovers}}</td><td>{{.Failed}}</td>
{{- range .Failures}}<td>{{.}}</td>{{end}}
{{- if $outage}}{{with .Outage}}<td>{{.Failed}}</td><td>{{.Moved}}</td><td>{{.Benched}}</td><td>{{.Back}}</td><td>{{.Closed}}</td>{{else}}<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>{{end}}{{end}}</tr>
{{- end}}
</table></div>
{{- range .Runs}}
<details id="{{.ID}}" class="run"{{if .Open}} open{{end}}>
<summary>{{.SummaryLine}}</summary>
{{- if .Description}}
<p class="desc">{{.Description}}</p>
{{- end}}
{{- if .Noise}}
<p class="desc">Noise load (key noise, not in the table): {{.Noise}}</p>
{{- end}}
{{- with .Outage}}
<p class="outage">Outage of <strong>{{.Primary}}</strong>: {{.Failed}} requests in flight during it failed · moved to another region after: {{.Moved}} · breaker opened after: {{.Benched}} · answered again after the outage ended: {{.Back}} · breaker closed after the outage ended: {{.Closed}}</p>
{{- end}}
{{- if .Notes}}
<p class="desc">Notifications sent (times from the start of the run):</p>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
<figure>
<h4>Requests per second by backend</h4>
{{.RPS}}
<figcaption>Completed requests per {{.BucketWidth}}, counted when they ended, stacked: successes by the backend that answered, failures on top.</figcaption>
</figure>
<figure>
<h4>Latency of each request</h4>
{{.Latency}}
<figcaption>Each dot is a request, at the time it was sent, at the height of its latency (log scale); showing {{.ShownPoints}}.</figcaption>
</figure>
<figure>
<h4>Breaker state per backend</h4>
{{.Breakers}}
</figure>
</details>
{{- end}}
</section>
{{end}}
<footer>
<h3>Reading the plots</h3>
<p>All plots of a run share one time axis, in seconds from the start of the run{{if not .Realtime}} (compressed time){{end}}.</p>
<p><strong>Requests per second</strong> stacks the requests that ended in each time bucket: one coloured band per backend that answered, failed requests in red on top. A failover shows as colour moving from one band to another, a failback as it moving back. Hatched grey areas are fault windows (the fault and the region are written on them). Dashed vertical lines mark a breaker opening (red) or closing (green), named at the top; hover for the cause.</p>
<p><strong>Latency</strong> shows every request (or an even sample of them) at the time it was sent: successes as dots in the colour of the backend that answered, failures as red crosses. The dashed lines are the run's p50 and p95 over all requests. Fast red crosses are refusals; slow ones timeouts.</p>
<p><strong>Breaker state</strong> shows each backend's circuit breaker: green while closed (taking traffic), red while open (benched), amber while half open (letting a probe through). Hover a band for when and why it changed.</p>
<p class="meta">Generated by switchover. The page is self-contained: it loads nothing from the network.</p>
</footer>
<script>
(function(){var t=document.getElementById("toggles");if(!t)return;function all(o){document.querySelectorAll("details.run").forEach(function(d){d.open=o})}[["Expand all runs",true],["Collapse all runs",false]].forEach(function(a){var b=document.createElement("button");b.type="button";b.textContent=a[0];b.onclick=function(){all(a[1])};t.appendChild(b)});function reveal(){var d=location.hash&&document.getElementById(location.hash.slice(1));if(d&&d.tagName==="DETAILS")d.open=true}window.addEventListener("hashchange",reveal);reveal()})();
</script>
</body>
</html>
`))
