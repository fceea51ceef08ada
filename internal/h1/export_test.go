package h1

import "time"

// SetCheckAfter sets how long a connection waits idle before it is
// checked before use; negative: never checked.
func SetCheckAfter(t *Transport, d time.Duration) {
	if d < 0 {
		d = 1 << 62
	}
	t.checkAfter = d
}

// Sweep runs the idle connections' sweep now.
func Sweep(t *Transport) { t.sweepIdle() }
