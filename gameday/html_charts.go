package gameday

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/load"
)

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

// secondsTicks are the time axis ticks of a run, labelled in seconds.
func secondsTicks(span time.Duration) []tick {
	return linearTicks(0, span.Seconds(), 10, trimFloat)
}

const timeCaption = "seconds since the start of the run"

// formatMillis labels a latency axis tick given in milliseconds.
func formatMillis(v float64) string {
	if v >= 1000 {
		return trimFloat(v/1000) + " s"
	}
	return trimFloat(v) + " ms"
}

// Breaker markers name their backend in a strip above the rps plot's area,
// of markerRows rows markerRowHeight pixels high.
const (
	markerRows      = 2
	markerRowHeight = 12.0
)

// rpsPlot draws the requests per second of a run, stacked by backend with
// failures on top, with fault windows shaded and breaker opens and closes
// marked.
func rpsPlot(run *RunResult, b rpsBuckets, span time.Duration, id string, col colours) template.HTML {
	markers := breakerMarkers(run.Transitions)
	items := rpsLegend(b.Backends, len(run.Faults) > 0, markers, col)
	top := 6 + legendHeight(items, plotWidth) + 18
	if len(markers) > 0 {
		top += markerRows * markerRowHeight
	}
	const area = 200.0
	p := newSVGPlot(plotWidth, top+area+38, margins{top: top, right: plotRight, bottom: 38, left: plotLeft},
		"plot rps", "requests per second by backend over time")
	p.legend(items, 6)
	p.setX(0, span.Seconds())
	drawStack(p, b, span, col)
	drawFaultWindows(p, run.Faults, span, "hatch-"+id)
	drawBreakerMarkers(p, markers)
	p.xAxis(secondsTicks(span), timeCaption)
	return p.html()
}

// breakerMarkers are the transitions the rps plot marks, breakers opening
// and closing, in time order.
func breakerMarkers(transitions []Transition) []Transition {
	var markers []Transition
	for _, t := range transitions {
		if t.To == "open" || t.To == "closed" {
			markers = append(markers, t)
		}
	}
	slices.SortStableFunc(markers, func(a, b Transition) int { return cmpDuration(a.At, b.At) })
	return markers
}

// rpsLegend lists what the rps plot shows: each backend, failures, and the
// fault windows and kinds of breaker marker if there are any.
func rpsLegend(backends []string, faults bool, markers []Transition, col colours) []legendItem {
	items := make([]legendItem, 0, len(backends)+4)
	for _, be := range backends {
		items = append(items, legendItem{label: backendLabel(be), colour: col.of(be)})
	}
	items = append(items, legendItem{label: "failed", colour: colourFailed})
	if faults {
		items = append(items, legendItem{label: "fault window", colour: colourFault})
	}
	if slices.ContainsFunc(markers, func(t Transition) bool { return t.To == "open" }) {
		items = append(items, legendItem{label: "breaker opened", colour: colourOpen, shape: "line"})
	}
	if slices.ContainsFunc(markers, func(t Transition) bool { return t.To == "closed" }) {
		items = append(items, legendItem{label: "breaker closed", colour: colourClosedMarker, shape: "line"})
	}
	return items
}

// drawStack sets p's y axis to fit b and draws b's series stacked in req/s:
// successes by backend from the bottom, failures on top.
func drawStack(p *svgPlot, b rpsBuckets, span time.Duration, col colours) {
	n := len(b.Failed)
	perSec := 1 / b.Width.Seconds()
	series := append(slices.Clone(b.OK), b.Failed)
	ymax := stackTop(series, n, perSec)
	p.setY(0, ymax, false)
	p.yAxis(linearTicks(0, ymax, 6, trimFloat), "req/s")

	// Lower and upper edges per bucket, in req/s.
	lower := make([]float64, n)
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
}

// stackTop is the top of the rps plot's y axis for series of n buckets
// (counts, perSec turning them into req/s): the peak of their stack, with
// headroom above it for the fault labels, up to a whole tick; 1 if every
// bucket is empty.
func stackTop(series [][]int, n int, perSec float64) float64 {
	peak := 0.0
	for i := range n {
		total := 0
		for _, s := range series {
			total += s[i]
		}
		peak = max(peak, float64(total)*perSec)
	}
	step := niceStep(peak * 1.05 / 6)
	ymax := math.Ceil(peak*1.05/step) * step
	if peak == 0 {
		ymax = 1
	}
	return ymax
}

// drawFaultWindows shades faults over the stack, see-through and hatched
// with a pattern of id hatch (unique on the page), each labelled with its
// fault and region.
func drawFaultWindows(p *svgPlot, faults []FaultWindow, span time.Duration, hatch string) {
	if len(faults) == 0 {
		return
	}
	p.open("defs")
	p.open("pattern", "id", hatch, "width", "6", "height", "6", "patternUnits", "userSpaceOnUse", "patternTransform", "rotate(45)")
	p.line(0, 0, 0, 6, "stroke", colourFault, "stroke-width", "2")
	p.close("pattern")
	p.close("defs")
	p.open("g", "class", "faults")
	for _, f := range faults {
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

// drawBreakerMarkers marks each of markers (breakers opening or closing)
// with a line down the plot, a triangle on top and the backend's name in
// the strip above, where there is room for it.
func drawBreakerMarkers(p *svgPlot, markers []Transition) {
	if len(markers) == 0 {
		return
	}
	p.open("g", "class", "markers")
	// rowEnd is where the last name written in each row of the strip ends.
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
				p.text(lx, p.top()-10-float64(row)*markerRowHeight, label, "fill", colour)
				break
			}
		}
		p.close("g")
	}
	p.close("g")
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
	lat := run.Summary.Latency
	items := latencyLegend(backends, lat.N > 0, col)
	top := 6 + legendHeight(items, plotWidth) + 18
	const area = 180.0
	p := newSVGPlot(plotWidth, top+area+38, margins{top: top, right: plotRight, bottom: 38, left: plotLeft},
		"plot latency", "latency of each request at its start time")
	p.legend(items, 6)
	p.setX(0, span.Seconds())
	ylo, yhi := latencyRange(run.Samples)
	p.setY(ylo, yhi, true)
	p.yAxis(logTicks(ylo, yhi, formatMillis), "latency")

	for _, f := range run.Faults {
		x0, x1 := p.px(max(f.From, 0).Seconds()), p.px(min(f.To, span).Seconds())
		p.rect(x0, p.top(), max(x1-x0, 1), p.bottom()-p.top(), "class", "fault", "fill", colourFault, "fill-opacity", "0.12")
	}
	shown := thinSamples(run.Samples, maxScatterPoints)
	drawLatencyPoints(p, shown, backends, ylo, col)
	if lat.N > 0 {
		drawPercentiles(p, lat, ylo)
	}
	p.xAxis(secondsTicks(span), timeCaption)
	return p.html(), len(shown)
}

// millis is d in milliseconds, the latency plot's unit.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyLegend lists what the latency plot shows: each backend's dots,
// failures' crosses, and the reference lines if there are any.
func latencyLegend(backends []string, percentiles bool, col colours) []legendItem {
	items := make([]legendItem, 0, len(backends)+3)
	for _, be := range backends {
		items = append(items, legendItem{label: backendLabel(be), colour: col.of(be), shape: "dot"})
	}
	items = append(items, legendItem{label: "failed", colour: colourFailed, shape: "cross"})
	if percentiles {
		items = append(items, legendItem{label: "p50 / p95 of all requests", colour: colourReference, shape: "line"})
	}
	return items
}

// latencyRange is the latency plot's y range in milliseconds: the powers
// of ten around the samples' latencies (at least 0.1 ms), at least one
// decade apart; 1 ms to 1 s when there are no samples.
func latencyRange(samples []load.Sample) (ylo, yhi float64) {
	lo, hi := math.Inf(1), 0.0
	for _, s := range samples {
		v := math.Max(millis(s.Latency), 0.1)
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if len(samples) == 0 {
		lo, hi = 1, 1000
	}
	ylo = math.Pow(10, math.Floor(math.Log10(lo)))
	yhi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if yhi <= ylo {
		yhi = ylo * 10
	}
	return ylo, yhi
}

// drawLatencyPoints draws shown at their start time and latency (at least
// ylo): successes as a dot series per backend, backends first and others
// in order of appearance, failures as one series of crosses.
func drawLatencyPoints(p *svgPlot, shown []load.Sample, backends []string, ylo float64, col colours) {
	names := slices.Clone(backends)
	dots := make([]*strings.Builder, len(names))
	var crosses strings.Builder
	for _, s := range shown {
		x, y := p.px(s.Start.Seconds()), p.py(math.Max(millis(s.Latency), ylo))
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
}

// drawPercentiles draws lat's p50 and p95 (at least ylo) as labelled
// reference lines across the plot.
func drawPercentiles(p *svgPlot, lat load.Percentiles, ylo float64) {
	p.open("g", "class", "reference")
	// p50's label goes under its line and p95's over its own, so the
	// two do not collide when the lines are close.
	for _, ref := range []struct {
		name string
		d    time.Duration
		dy   float64
	}{{"p50", lat.P50, 12}, {"p95", lat.P95, -4}} {
		y := p.py(math.Max(millis(ref.d), ylo))
		p.line(p.left(), y, p.right(), y, "stroke", colourReference, "stroke-width", "1", "stroke-dasharray", "6 4")
		p.text(p.right()-4, y+ref.dy, ref.name+" "+formatDuration(ref.d), "text-anchor", "end", "fill", colourReference,
			"stroke", "#fff", "stroke-width", "3", "paint-order", "stroke")
	}
	p.close("g")
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
