package clock

import (
	"testing"
	"time"
)

// delays is a Clock that records the delays it is asked to arm.
type delays struct {
	now time.Time
	d   []time.Duration
}

func (c *delays) Now() time.Time { return c.now }

func (c *delays) AfterFunc(d time.Duration, f func()) Timer {
	c.d = append(c.d, d)
	return time.AfterFunc(time.Hour, f)
}

// TestAtOnAClockOfDelays: on a clock without AfterFuncAt, At arms the
// delay from the clock's reading to the instant (negative once it has
// passed, which AfterFunc runs at once).
func TestAtOnAClockOfDelays(t *testing.T) {
	c := &delays{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	for _, d := range []time.Duration{3 * time.Second, -time.Second} {
		At(c, c.now.Add(d), func() {}).Stop()
	}
	if len(c.d) != 2 || c.d[0] != 3*time.Second || c.d[1] != -time.Second {
		t.Fatalf("armed %v, want [3s -1s]", c.d)
	}
}
