package bench

import (
	"context"
	"fmt"
	"time"
)

const (
	mib = 1 << 20
	kib = 1 << 10
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fixedRate is the CPU, latency and allocation rows: Rate requests a
// second through each target per round, with the target's CPU time read
// from /proc before and after, and the gateway's allocation counter from
// its /metrics.
func (r *runner) fixedRate(ctx context.Context) error {
	rate := fmt.Sprintf("%g req/s", r.o.Rate)
	cpu := r.rep.row("cpu", "CPU per request at "+rate+", us", "us", 1)
	p50 := r.rep.row("p50", "p50 added at "+rate+", ms (direct: its own)", "ms", 3)
	p99 := r.rep.row("p99", "p99 added at "+rate+", ms (direct: its own)", "ms", 3)
	allocs := r.rep.row("allocs", "allocations per request at "+rate+" (/metrics)", "allocs", 1)
	p50.added, p99.added = true, true
	callers := map[string]*caller{}
	counters := map[string]*mallocCounter{}
	for _, t := range r.targets {
		callers[t.name] = &caller{client: newClient(1024), req: chatRequest(t.url, false)}
		if t.metrics != "" {
			mc, err := newMallocCounter(ctx, t.metrics)
			if err != nil {
				r.rep.note("%s: no allocation count: %v", t.name, err)
				continue
			}
			counters[t.name] = mc
		}
	}
	for round := range r.o.Rounds {
		r.progress("%s, round %d of %d", rate, round+1, r.o.Rounds)
		m50, m99 := map[string]float64{}, map[string]float64{}
		for _, t := range r.order(round) {
			cpu0, err := cpuOf(t.pids)
			if err != nil {
				return err
			}
			mc := counters[t.name]
			var a0 float64
			if mc != nil {
				if a0, err = mc.read(ctx); err != nil {
					return err
				}
			}
			sum, err := fixedRate(ctx, callers[t.name], r.o.Rate, r.o.Duration)
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			cpu1, err := cpuOf(t.pids)
			if err != nil {
				return err
			}
			r.rep.fail(t.name, sum.Failed+sum.Dropped)
			if sum.Requests == 0 {
				continue
			}
			if len(t.pids) > 0 {
				cpu.add(t.name, float64((cpu1-cpu0)/time.Microsecond)/float64(sum.Requests))
			}
			if mc != nil {
				a1, err := mc.read(ctx)
				if err != nil {
					return err
				}
				allocs.add(t.name, (a1-a0-mc.perScrape)/float64(sum.Requests))
			}
			m50[t.name], m99[t.name] = ms(sum.Success.P50), ms(sum.Success.P99)
		}
		addAdded(p50, m50)
		addAdded(p99, m99)
	}
	return nil
}
