package gameday

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// svgPlot builds one inline SVG chart: a canvas of w×h pixels holding a plot
// area inside margins, with a linear x scale and a linear or log10 y scale
// mapping data values to pixels. Every attribute value and text written
// through its methods is escaped, so data (region names, causes) may hold
// any characters. The zero value is not usable; use newSVGPlot. Not safe for
// concurrent use.
type svgPlot struct {
	w, h float64
	m    margins
	// x0..x1 and y0..y1 are the data ranges of the axes; logY makes the y
	// scale log10 (y0 and y1 must then be positive).
	x0, x1, y0, y1 float64
	logY           bool
	b              strings.Builder
}

// Colours of the plots' furniture.
const (
	colourAxis     = "#666"
	colourAxisText = "#333"
	colourCaption  = "#666"
	colourGrid     = "#eee"
)

// margins are the space around a plot's area, in pixels.
type margins struct{ top, right, bottom, left float64 }

// newSVGPlot starts an SVG of w×h pixels with the plot area inside m. class
// and label (the accessible name) go on the <svg> element.
func newSVGPlot(w, h float64, m margins, class, label string) *svgPlot {
	p := &svgPlot{w: w, h: h, m: m, x0: 0, x1: 1, y0: 0, y1: 1}
	p.open("svg", "class", class, "viewBox", "0 0 "+num(w)+" "+num(h),
		"width", num(w), "height", num(h), "role", "img", "aria-label", label,
		"font-family", "system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif", "font-size", "11")
	return p
}

// setX sets the x data range.
func (p *svgPlot) setX(lo, hi float64) {
	if hi <= lo {
		hi = lo + 1
	}
	p.x0, p.x1 = lo, hi
}

// setY sets the y data range, log10 when logY (lo and hi then positive).
func (p *svgPlot) setY(lo, hi float64, logY bool) {
	if logY {
		lo = math.Max(lo, 1e-9)
		hi = math.Max(hi, lo*10)
	} else if hi <= lo {
		hi = lo + 1
	}
	p.y0, p.y1, p.logY = lo, hi, logY
}

// Edges of the plot area, in pixels.
func (p *svgPlot) left() float64   { return p.m.left }
func (p *svgPlot) right() float64  { return p.w - p.m.right }
func (p *svgPlot) top() float64    { return p.m.top }
func (p *svgPlot) bottom() float64 { return p.h - p.m.bottom }

// px maps an x data value to pixels, clamped to the plot area.
func (p *svgPlot) px(v float64) float64 {
	f := (v - p.x0) / (p.x1 - p.x0)
	return p.left() + clamp01(f)*(p.right()-p.left())
}

// py maps a y data value to pixels, clamped to the plot area.
func (p *svgPlot) py(v float64) float64 {
	var f float64
	if p.logY {
		if v <= 0 {
			v = p.y0
		}
		f = (math.Log10(v) - math.Log10(p.y0)) / (math.Log10(p.y1) - math.Log10(p.y0))
	} else {
		f = (v - p.y0) / (p.y1 - p.y0)
	}
	return p.bottom() - clamp01(f)*(p.bottom()-p.top())
}

func clamp01(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Min(math.Max(f, 0), 1)
}

// open writes a start tag with attributes given as name, value pairs.
func (p *svgPlot) open(name string, attrs ...string) {
	p.tag(name, attrs)
	p.b.WriteByte('>')
}

// close writes an end tag.
func (p *svgPlot) close(name string) {
	p.b.WriteString("</" + name + ">")
}

// el writes an empty element with attributes given as name, value pairs.
func (p *svgPlot) el(name string, attrs ...string) {
	p.tag(name, attrs)
	p.b.WriteString("/>")
}

// tag writes "<name" and the attributes, leaving out those whose value is
// "" (except a path's d).
func (p *svgPlot) tag(name string, attrs []string) {
	p.b.WriteString("<" + name)
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i+1] == "" && attrs[i] != "d" {
			continue
		}
		p.b.WriteString(" " + attrs[i] + `="` + esc(attrs[i+1]) + `"`)
	}
}

// title writes a <title> element (a tooltip for its parent).
func (p *svgPlot) title(s string) {
	p.b.WriteString("<title>" + esc(s) + "</title>")
}

// text writes s at pixel (x, y).
func (p *svgPlot) text(x, y float64, s string, attrs ...string) {
	p.open("text", append([]string{"x", num(x), "y", num(y)}, attrs...)...)
	p.b.WriteString(esc(s))
	p.close("text")
}

// rect writes a rectangle in pixels.
func (p *svgPlot) rect(x, y, w, h float64, attrs ...string) {
	p.el("rect", append([]string{"x", num(x), "y", num(y), "width", num(w), "height", num(h)}, attrs...)...)
}

// line writes a line in pixels.
func (p *svgPlot) line(x1, y1, x2, y2 float64, attrs ...string) {
	p.el("line", append([]string{"x1", num(x1), "y1", num(y1), "x2", num(x2), "y2", num(y2)}, attrs...)...)
}

// path writes a path with data d.
func (p *svgPlot) path(d string, attrs ...string) {
	p.el("path", append([]string{"d", d}, attrs...)...)
}

// tick is an axis tick: a data value and its label.
type tick struct {
	v     float64
	label string
}

// xAxis draws the x axis line at the bottom of the plot area, ticks and
// their labels, and caption centred below.
func (p *svgPlot) xAxis(ticks []tick, caption string) {
	b := p.bottom()
	p.open("g", "class", "axis", "stroke", colourAxis)
	p.line(p.left(), b, p.right(), b)
	for _, t := range ticks {
		x := p.px(t.v)
		p.line(x, b, x, b+4)
	}
	p.close("g")
	p.open("g", "class", "axis-labels", "fill", colourAxisText, "text-anchor", "middle")
	for _, t := range ticks {
		p.text(p.px(t.v), b+15, t.label)
	}
	if caption != "" {
		p.text((p.left()+p.right())/2, b+29, caption, "fill", colourCaption, "font-style", "italic")
	}
	p.close("g")
}

// yAxis draws the y axis line, tick labels and light grid lines across the
// plot area; caption goes above the axis, left of the plot area.
func (p *svgPlot) yAxis(ticks []tick, caption string) {
	l := p.left()
	p.open("g", "class", "grid", "stroke", colourGrid)
	for _, t := range ticks {
		y := p.py(t.v)
		p.line(l, y, p.right(), y)
	}
	p.close("g")
	p.open("g", "class", "axis", "stroke", colourAxis)
	p.line(l, p.top(), l, p.bottom())
	for _, t := range ticks {
		y := p.py(t.v)
		p.line(l-4, y, l, y)
	}
	p.close("g")
	p.open("g", "class", "axis-labels", "fill", colourAxisText, "text-anchor", "end")
	for _, t := range ticks {
		p.text(l-6, p.py(t.v)+4, t.label)
	}
	if caption != "" {
		p.text(l-6, p.top()-8, caption, "fill", colourCaption, "font-style", "italic")
	}
	p.close("g")
}

// legendItem is one entry of a plot legend: a swatch and a label. shape is
// "rect" (a filled square), "line" (a dash), "dot" or "cross".
type legendItem struct {
	label, colour, shape string
}

// legendHeight is the height in pixels that legend takes when laid out in
// rows across width w.
func legendHeight(items []legendItem, w float64) float64 {
	_, rows := legendLayout(items, w)
	return float64(rows) * legendRow
}

const (
	legendRow  = 16  // pixels per legend row
	charWidth  = 6.4 // estimated width of one character of 11px text
	legendPad  = 8   // left and right padding of a legend
	swatchSize = 10
)

// legendLayout places items in rows across width w, returning each item's
// x offset and row, and the row count.
func legendLayout(items []legendItem, w float64) (pos [][2]float64, rows int) {
	x, row := float64(legendPad), 0
	for _, it := range items {
		iw := swatchSize + 4 + textWidth(it.label) + 14
		if x+iw > w-legendPad && x > legendPad {
			x, row = legendPad, row+1
		}
		pos = append(pos, [2]float64{x, float64(row)})
		x += iw
	}
	if len(items) > 0 {
		rows = row + 1
	}
	return pos, rows
}

// legend draws items in rows starting at pixel y0 (the top of the first
// row), across the whole width of the SVG.
func (p *svgPlot) legend(items []legendItem, y0 float64) {
	pos, _ := legendLayout(items, p.w)
	p.open("g", "class", "legend")
	for i, it := range items {
		x, y := pos[i][0], y0+pos[i][1]*legendRow+legendRow/2
		p.open("g", "class", "key")
		switch it.shape {
		case "line":
			p.line(x, y, x+swatchSize, y, "stroke", it.colour, "stroke-width", "2", "stroke-dasharray", "3 2")
		case "dot":
			p.path("M"+num(x+swatchSize/2)+" "+num(y)+"h0", "stroke", it.colour, "stroke-width", "5", "stroke-linecap", "round")
		case "cross":
			p.path(crossPath(x+swatchSize/2, y, 3.5), "stroke", it.colour, "stroke-width", "1.5")
		default:
			p.rect(x, y-swatchSize/2, swatchSize, swatchSize, "fill", it.colour)
		}
		p.text(x+swatchSize+4, y+4, it.label, "fill", colourAxisText)
		p.close("g")
	}
	p.close("g")
}

// textWidth estimates the width in pixels of s in the plots' 11px font.
func textWidth(s string) float64 {
	return float64(utf8.RuneCountInString(s)) * charWidth
}

// html closes the SVG and returns it for a template. Everything in it was
// escaped as it was written.
func (p *svgPlot) html() template.HTML {
	p.close("svg")
	return template.HTML(p.b.String())
}

// crossPath is the path of an × of half-size r centred at (x, y).
func crossPath(x, y, r float64) string {
	return "M" + num(x-r) + " " + num(y-r) + "l" + num(2*r) + " " + num(2*r) +
		"m0 " + num(-2*r) + "l" + num(-2*r) + " " + num(2*r)
}

// num formats a pixel or data value with at most one decimal.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	f = math.Round(f*10) / 10
	if f == 0 {
		f = 0 // no "-0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// esc escapes s for XML/HTML text and double-quoted attribute values, and
// drops characters XML does not allow (control characters, invalid UTF-8),
// so the SVG stays well-formed whatever the data holds.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError, r < 0x20 && r != '\t' && r != '\n' && r != '\r',
			r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return -1
		}
		return r
	}, s)
	return template.HTMLEscapeString(s)
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks returns ticks at a nice step over [lo, hi], about n of them,
// labelled by format.
func linearTicks(lo, hi float64, n int, format func(float64) string) []tick {
	if hi <= lo || n < 1 {
		return []tick{{lo, format(lo)}}
	}
	step := niceStep((hi - lo) / float64(n))
	var out []tick
	for i := math.Ceil(lo/step - 1e-9); ; i++ {
		v := roundSig(i * step)
		if v == 0 {
			v = 0 // no "-0"
		}
		if v > hi+step*1e-9 {
			break
		}
		out = append(out, tick{v, format(v)})
	}
	return out
}

// logTicks returns ticks at 1, 2 and 5 times each power of ten in [lo, hi],
// or at the powers of ten only when that would be too many.
func logTicks(lo, hi float64, format func(float64) string) []tick {
	var out []tick
	decades := math.Log10(hi) - math.Log10(lo)
	mults := []float64{1, 2, 5}
	if decades > 3 {
		mults = []float64{1}
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range mults {
			v := roundSig(m * math.Pow(10, e))
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				out = append(out, tick{v, format(v)})
			}
		}
	}
	return out
}

// roundSig rounds f to 9 significant digits, dropping float noise such as
// 0.30000000000000004.
func roundSig(f float64) float64 {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	v, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 9, 64), 64)
	if err != nil {
		return f
	}
	return v
}

// trimFloat formats f with no trailing zeros and no exponent.
func trimFloat(f float64) string {
	return strconv.FormatFloat(roundSig(f), 'f', -1, 64)
}
