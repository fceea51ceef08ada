package console

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// svgChart is a server-rendered SVG chart (spend.html's "chart" template):
// stacked bars per day, and/or lines, on axes with units; every bar and
// point carries its value in a <title>, which browsers show on hover.
// Built by the chart builders below; the template only places it.
type svgChart struct {
	ID, Title string
	// Unit names the y axis ("USD", "requests", "ms").
	Unit          string
	Width, Height int
	// Left, Bottom and Top are the plot area's edges (y of the x axis is
	// Bottom).
	Left, Right, Top, Bottom float64
	YTicks, XTicks           []chartTick
	Bars                     []chartBar
	Lines                    []chartLine
	Legend                   []chartSeries
	// Empty says why there is nothing to draw, or "".
	Empty string
}

type chartTick struct {
	X, Y  float64
	Label string
}

type chartBar struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type chartLine struct {
	Points string
	Stroke string
	// Dashed marks a limit line.
	Dashed bool
	Dots   []chartDot
	Title  string
}

type chartDot struct {
	X, Y  float64
	Title string
}

type chartSeries struct {
	Name, Fill string
}

// palette colours series in order; the last is "other".
var palette = []string{"#1a5fb4", "#c64600", "#2e7d32", "#8e24aa", "#00838f", "#ad1457", "#5d4037", "#616161"}

// maxSeries is how many series a chart shows; the rest are summed as
// "other".
const maxSeries = 7

// Layout of the charts, in SVG units (scaled to the page's width).
const (
	chWidth  = 720
	chHeight = 240
	chLeft   = 64
	chRight  = 12
	chTop    = 10
	chBottom = 26
)

func newChart(id, title, unit string) svgChart {
	return svgChart{ID: id, Title: title, Unit: unit, Width: chWidth, Height: chHeight,
		Left: chLeft, Right: chWidth - chRight, Top: chTop, Bottom: chHeight - chBottom}
}

// series is one named series of values per day (index into days).
type series struct {
	Name   string
	Values []float64
}

// topSeries keeps the maxSeries largest series (by total) in that order,
// and sums the rest into "other".
func topSeries(all []series, days int) []series {
	total := func(s series) float64 {
		var t float64
		for _, v := range s.Values {
			t += v
		}
		return t
	}
	slices.SortStableFunc(all, func(a, b series) int {
		ta, tb := total(a), total(b)
		switch {
		case ta > tb:
			return -1
		case ta < tb:
			return 1
		}
		return 0
	})
	if len(all) <= maxSeries+1 {
		return all
	}
	other := series{Name: "other", Values: make([]float64, days)}
	for _, s := range all[maxSeries:] {
		for i, v := range s.Values {
			other.Values[i] += v
		}
	}
	return append(all[:maxSeries:maxSeries], other)
}

// stackedDays draws series as bars stacked per day, days[i] being the
// UTC day of Values[i]; format prints a value with its unit.
func stackedDays(c svgChart, days []time.Time, ss []series, format func(float64) string) svgChart {
	if len(days) == 0 {
		c.Empty = "No days in the range."
		return c
	}
	var top float64
	for i := range days {
		var sum float64
		for _, s := range ss {
			sum += s.Values[i]
		}
		top = max(top, sum)
	}
	if top == 0 {
		c.Empty = "Nothing recorded in the range."
	}
	y := c.yAxis(top, format)
	slot := (c.Right - c.Left) / float64(len(days))
	w := max(slot*0.7, 1)
	for i, d := range days {
		x := c.Left + slot*float64(i) + (slot-w)/2
		var base float64
		for j, s := range ss {
			v := s.Values[i]
			if v == 0 {
				continue
			}
			y0, y1 := y(base), y(base+v)
			c.Bars = append(c.Bars, chartBar{X: round2(x), Y: round2(y1), W: round2(w), H: round2(max(y0-y1, 0.5)), Fill: palette[j%len(palette)],
				Title: fmt.Sprintf("%s · %s: %s", d.Format(time.DateOnly), s.Name, format(v))})
			base += v
		}
	}
	c.XTicks = dayTicks(c, days, slot)
	for j, s := range ss {
		c.Legend = append(c.Legend, chartSeries{Name: s.Name, Fill: palette[j%len(palette)]})
	}
	return c
}

// linesDays draws series as lines over days; a NaN value is a gap (no
// data that day). limit, when > 0, is drawn as a dashed line named
// limitName.
func linesDays(c svgChart, days []time.Time, ss []series, format func(float64) string, limit float64, limitName string) svgChart {
	if len(days) == 0 {
		c.Empty = "No days in the range."
		return c
	}
	top := limit
	seen := false
	for _, s := range ss {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				top, seen = max(top, v), true
			}
		}
	}
	if !seen {
		c.Empty = "Nothing recorded in the range."
	}
	y := c.yAxis(top, format)
	slot := (c.Right - c.Left) / float64(len(days))
	x := func(i int) float64 { return round2(c.Left + slot*float64(i) + slot/2) }
	for j, s := range ss {
		l := chartLine{Stroke: palette[j%len(palette)], Title: s.Name}
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			px, py := x(i), round2(y(v))
			l.Points += fmt.Sprintf("%g,%g ", px, py)
			l.Dots = append(l.Dots, chartDot{X: px, Y: py, Title: fmt.Sprintf("%s · %s: %s", days[i].Format(time.DateOnly), s.Name, format(v))})
		}
		c.Lines = append(c.Lines, l)
		c.Legend = append(c.Legend, chartSeries{Name: s.Name, Fill: l.Stroke})
	}
	if limit > 0 {
		ly := round2(y(limit))
		c.Lines = append(c.Lines, chartLine{Points: fmt.Sprintf("%g,%g %g,%g", c.Left, ly, c.Right, ly), Stroke: "#c62828", Dashed: true,
			Title: limitName + ": " + format(limit)})
		c.Legend = append(c.Legend, chartSeries{Name: limitName + " " + format(limit), Fill: "#c62828"})
	}
	c.XTicks = dayTicks(c, days, slot)
	return c
}

// yAxis sets c's y ticks for values 0 to top and returns the y of a
// value.
func (c *svgChart) yAxis(top float64, format func(float64) string) func(float64) float64 {
	step := niceStepF(top)
	ymax := step * math.Ceil(top/step)
	if ymax <= 0 {
		ymax = step
	}
	y := func(v float64) float64 { return c.Bottom - (c.Bottom-c.Top)*v/ymax }
	for v := 0.0; v <= ymax*1.0000001; v += step {
		c.YTicks = append(c.YTicks, chartTick{X: c.Left, Y: round2(y(v)), Label: format(v)})
	}
	return y
}

// dayTicks labels at most 8 days evenly.
func dayTicks(c svgChart, days []time.Time, slot float64) []chartTick {
	every := (len(days) + 7) / 8
	var out []chartTick
	for i := 0; i < len(days); i += every {
		out = append(out, chartTick{X: round2(c.Left + slot*float64(i) + slot/2), Y: c.Bottom, Label: days[i].Format("Jan 2")})
	}
	return out
}

// niceStepF is a step of 1, 2 or 5 × 10ⁿ giving at most 5 steps to top
// (1 for a top of 0).
func niceStepF(top float64) float64 {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(top/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top/(p*m) <= 5 {
			return p * m
		}
	}
	return p * 10
}

// Formats of the charts' values.
func fmtUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v < 0.01:
		return "$" + strconv.FormatFloat(v, 'g', 3, 64)
	case v < 100:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.0f", v)
}

func fmtCount(unit string) func(float64) string {
	return func(v float64) string {
		if v == math.Trunc(v) {
			return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	}
}
