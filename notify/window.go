package notify

import "time"

// maxBuckets bounds the memory of a window: longer windows get wider
// buckets.
const maxBuckets = 600

// window counts events within a sliding span of time, in fixed-width
// buckets (one second for spans up to 10 minutes), so that adding an event
// costs O(1) amortised and no allocation. Instants that go backwards count
// in the newest bucket. Requires external locking.
type window struct {
	width  int64 // bucket width in nanoseconds
	counts []int
	total  int
	newest int64 // bucket number of the newest bucket
	used   bool
}

func newWindow(span time.Duration) window {
	width := time.Second
	if span > maxBuckets*width {
		width = (span + maxBuckets - 1) / maxBuckets
	}
	n := int((span + width - 1) / width)
	if n < 1 {
		n = 1
	}
	return window{width: int64(width), counts: make([]int, n)}
}

func (w *window) slot(b int64) int {
	n := int64(len(w.counts))
	return int(((b % n) + n) % n)
}

// advance expires the buckets that fell out of the span at at.
func (w *window) advance(at time.Time) {
	b := at.UnixNano() / w.width
	if !w.used {
		w.newest, w.used = b, true
		return
	}
	if b <= w.newest {
		return
	}
	if steps := b - w.newest; steps >= int64(len(w.counts)) {
		clear(w.counts)
		w.total = 0
	} else {
		for i := w.newest + 1; i <= b; i++ {
			s := w.slot(i)
			w.total -= w.counts[s]
			w.counts[s] = 0
		}
	}
	w.newest = b
}

// add counts one event at at and returns the count within the span.
func (w *window) add(at time.Time) int {
	w.advance(at)
	w.counts[w.slot(w.newest)]++
	w.total++
	return w.total
}

// count returns the number of events within the span ending at at.
func (w *window) count(at time.Time) int {
	w.advance(at)
	return w.total
}
