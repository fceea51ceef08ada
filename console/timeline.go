package console

import (
	"fmt"
	"strconv"

	"github.com/switchover-gw/switchover/ledger"
)

// timeline is a request's attempts laid out for the SVG of the request
// page: one bar per attempt on a common axis of milliseconds.
type timeline struct {
	Width, Height int
	// Scale is the axis's length in ms.
	Scale int64
	Bars  []timelineBar
	Ticks []timelineTick
	// FirstByte is the x of the request's first byte, 0 when unknown.
	FirstByte float64
}

type timelineBar struct {
	Y         int
	X, W      float64
	Label     string
	Class     string
	Title     string
	LabelX    float64
	LabelLeft bool
}

type timelineTick struct {
	X     float64
	Label string
}

// Layout of the timeline, in SVG units.
const (
	tlLeft  = 8
	tlRight = 8
	tlWidth = 720
	tlRow   = 28
	tlTop   = 8
	tlAxis  = 24
)

// timelineOf lays out u's attempts; the axis spans the longest of the
// request's duration and its attempts' ends.
func timelineOf(u ledger.Usage) timeline {
	scale := max(u.DurationMs, 1)
	for _, a := range u.Attempts {
		scale = max(scale, a.StartMs+a.DurationMs)
	}
	t := timeline{Width: tlWidth, Scale: scale, Height: tlTop + tlRow*max(len(u.Attempts), 1) + tlAxis}
	span := float64(tlWidth - tlLeft - tlRight)
	x := func(ms int64) float64 { return tlLeft + span*float64(ms)/float64(scale) }
	for i, a := range u.Attempts {
		b := timelineBar{Y: tlTop + i*tlRow, X: x(a.StartMs), W: max(x(a.StartMs+a.DurationMs)-x(a.StartMs), 2)}
		status := "no answer"
		if a.Status != 0 {
			status = strconv.Itoa(a.Status)
		}
		switch {
		case a.Reason == "ok":
			b.Class = "ok"
		case a.Abandoned:
			b.Class = "abandoned"
		default:
			b.Class = "failed"
		}
		b.Label = fmt.Sprintf("%s · %s %s · %d ms", a.Backend, status, a.Reason, a.DurationMs)
		if a.Hedge {
			b.Label += " · hedge"
		}
		b.Title = fmt.Sprintf("attempt %d: %s, started at +%d ms, %d ms", i+1, b.Label, a.StartMs, a.DurationMs)
		// The label goes right of the bar, or left of it when the bar
		// ends in the right half.
		b.LabelX = b.X + b.W + 4
		if b.X+b.W > tlLeft+span/2 {
			b.LabelX, b.LabelLeft = b.X-4, true
		}
		t.Bars = append(t.Bars, b)
	}
	step := niceStep(scale)
	for ms := int64(0); ms <= scale; ms += step {
		t.Ticks = append(t.Ticks, timelineTick{X: x(ms), Label: strconv.FormatInt(ms, 10) + " ms"})
	}
	if u.FirstByteMs > 0 {
		t.FirstByte = x(u.FirstByteMs)
	}
	return t
}

// niceStep is a step of 1, 2 or 5 × 10ⁿ ms giving at most 6 ticks.
func niceStep(scale int64) int64 {
	for step := int64(1); ; step *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if scale/(step*m) <= 5 {
				return step * m
			}
		}
	}
}

// AxisY is the y of the axis line.
func (t timeline) AxisY() int { return t.Height - tlAxis + 4 }
