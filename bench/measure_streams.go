package bench

import (
	"context"
	"fmt"
	"net/http"
)

// streams is the first-token row: Streams streams per target and round,
// one after the other, timed to their first content chunk, and checked
// for each chunk arriving on its own.
func (r *runner) streams(ctx context.Context) error {
	if r.o.Streams <= 0 {
		return nil
	}
	r.up.SetStream(StreamShape{Chunks: r.o.Chunks, Interval: r.o.Interval})
	clients := map[string]*http.Client{}
	apart := map[string][2]int{}
	for _, t := range r.targets {
		clients[t.name] = newClient(4)
	}
	ttft := r.rep.row("first_token", "stream first token added, ms (direct: its own)", "ms", 3)
	ttft.added = true
	for round := range r.o.Rounds {
		r.progress("streams, round %d of %d", round+1, r.o.Rounds)
		med := map[string]float64{}
		for _, t := range r.order(round) {
			var firsts []float64
			for range r.o.Streams {
				s, err := readStream(ctx, clients[t.name], t.url)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					r.rep.fail(t.name, 1)
					continue
				}
				firsts = append(firsts, ms(s.FirstToken))
				a := apart[t.name]
				a[1]++
				if flushedApart(s, r.o.Chunks, r.o.Interval) {
					a[0]++
				}
				apart[t.name] = a
			}
			if len(firsts) > 0 {
				med[t.name] = median(firsts)
			}
		}
		addAdded(ttft, med)
	}
	flushed := r.rep.row("flushed", fmt.Sprintf("streams with each of %d chunks flushed on its own", r.o.Chunks), "share", 2)
	for _, t := range r.targets {
		a := apart[t.name]
		if a[1] == 0 {
			continue
		}
		flushed.add(t.name, float64(a[0])/float64(a[1]))
		if a[0] < a[1] {
			r.rep.note("%s: in %d of %d streams a chunk arrived with another, or sooner than half the upstream's interval after it (a reader stalled by a busy machine looks the same; a target that buffers fails them all)",
				t.name, a[1]-a[0], a[1])
		}
	}
	return nil
}

// addAdded records one round of an "added" row: direct's own figure, and
// every other target's less direct's of the same round.
func addAdded(row *Row, med map[string]float64) {
	d, ok := med[Direct]
	for name, v := range med {
		switch {
		case name == Direct:
			row.add(name, v)
		case ok:
			row.add(name, v-d)
		}
	}
}
