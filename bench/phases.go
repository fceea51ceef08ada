package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

const (
	mib = 1 << 20
	kib = 1 << 10
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// openStreams is the memory row: the resident memory of each target with
// OpenStreams streams held open through it, on fresh processes (only the
// warm-up has run), and the cost of one stream.
func (r *runner) openStreams(ctx context.Context) error {
	if r.o.OpenStreams <= 0 {
		return nil
	}
	label := fmt.Sprintf("RSS with %d open streams (HTTP/1.1 upstream)", r.o.OpenStreams)
	for _, t := range r.targets {
		if t.name == Direct {
			continue
		}
		with, per, err := r.heldRSS(ctx, t, r.up)
		if err != nil {
			return err
		}
		r.rep.row("rss", label, "MiB", 1).add(t.name, with/mib)
		r.rep.row("rss_per_stream", "  memory per open stream", "KiB", 1).add(t.name, per/kib)
	}
	return nil
}

// openStreamsH2 is the memory row again for the gateway alone, with a TLS
// upstream that speaks HTTP/2: one more gateway process, started and
// stopped here.
func (r *runner) openStreamsH2(ctx context.Context) error {
	if r.o.OpenStreams <= 0 || !r.o.H2 || r.get(Switchover) == nil {
		return nil
	}
	up, err := NewTLSUpstream(r.o.Dir)
	if err != nil {
		return err
	}
	defer up.Close()
	r.progress("starting switchover with an HTTP/2 upstream")
	t, err := r.starter().start(ctx, Switchover, up, true)
	if err != nil {
		return err
	}
	r.started = append(r.started, t)
	defer t.stop()
	warm := &caller{client: newClient(8), req: chatRequest(t.url, false)}
	if _, err := closedLoop(ctx, warm, 8, 300*time.Millisecond); err != nil {
		return err
	}
	with, per, err := r.heldRSS(ctx, t, up)
	if err != nil {
		return err
	}
	r.rep.row("rss_h2", fmt.Sprintf("RSS with %d open streams (HTTP/2 upstream)", r.o.OpenStreams), "MiB", 1).add(t.name, with/mib)
	r.rep.row("rss_h2_per_stream", "  memory per open stream", "KiB", 1).add(t.name, per/kib)
	return nil
}

// heldRSS opens the streams through t to up, held by up, and returns t's
// resident memory with them open and the difference per stream from
// before they were opened.
func (r *runner) heldRSS(ctx context.Context, t *target, up *Upstream) (with, perStream float64, err error) {
	n := r.o.OpenStreams
	r.progress("%s: opening %d streams", t.name, n)
	before, err := rssOf(t.pids)
	if err != nil {
		return 0, 0, err
	}
	up.SetStream(StreamShape{Chunks: 3, Hold: true})
	defer up.SetStream(StreamShape{Chunks: r.o.Chunks, Interval: r.o.Interval})
	base := up.Held()
	wait := openStreams(ctx, t.url, n, r.o.OpenRate)
	held := up.waitHeld(ctx, base+int64(n), 30*time.Second) - base
	settle(ctx, min(time.Second, r.o.Duration))
	rss, err := rssOf(t.pids)
	up.Release()
	failed, firstErr := wait()
	r.rep.fail(t.name, int(failed))
	if failed > 0 {
		r.rep.note("%s: %d of %d held streams failed; the first: %v", t.name, failed, n, firstErr)
	}
	if err != nil {
		return 0, 0, err
	}
	if held < int64(n) {
		r.rep.note("%s: only %d of %d streams were open at once", t.name, held, n)
	}
	if held <= 0 {
		return float64(rss), 0, nil
	}
	return float64(rss), float64(rss-before) / float64(held), ctx.Err()
}

// settle lets a process's memory settle after a burst: d, or until ctx ends.
func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

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
		if a := apart[t.name]; a[1] > 0 {
			flushed.add(t.name, float64(a[0])/float64(a[1]))
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

// syscalls is the syscall row: strace -f -c attached to each target's
// processes while SyscallRate requests a second go through it.
func (r *runner) syscalls(ctx context.Context) error {
	if r.o.Strace == "" || r.o.SyscallRate <= 0 {
		return nil
	}
	row := r.rep.row("syscalls", fmt.Sprintf("syscalls per request at %g req/s (strace -f -c)", r.o.SyscallRate), "syscalls", 1)
	for _, t := range r.targets {
		if len(t.pids) == 0 {
			continue
		}
		r.progress("%s: strace at %g req/s", t.name, r.o.SyscallRate)
		c := &caller{client: newClient(64), req: chatRequest(t.url, false)}
		tr, err := startStrace(ctx, r.o.Strace, r.o.Dir, t.pids)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.rep.note("%s: strace failed: %v", t.name, err)
			continue
		}
		sum, err := fixedRate(ctx, c, r.o.SyscallRate, r.o.Duration)
		rows, total, serr := tr.stop()
		if err != nil {
			return err
		}
		r.rep.fail(t.name, sum.Failed+sum.Dropped)
		if serr != nil {
			r.rep.note("%s: strace output: %v", t.name, serr)
			continue
		}
		if sum.Requests == 0 {
			continue
		}
		row.add(t.name, float64(total)/float64(sum.Requests))
		if r.o.SyscallDetail {
			if r.rep.Syscalls == nil {
				r.rep.Syscalls = map[string][]SyscallRate{}
			}
			for _, c := range rows {
				r.rep.Syscalls[t.name] = append(r.rep.Syscalls[t.name], SyscallRate{c.Name, float64(c.Calls) / float64(sum.Requests)})
			}
		}
	}
	return ctx.Err()
}

// throughput is the max req/s rows: wrk (or the built-in closed loop) at
// each of Conns, targets interleaved round by round.
func (r *runner) throughput(ctx context.Context) error {
	var script string
	if r.o.Wrk != "" {
		var err error
		if script, err = wrkScript(r.o.Dir, chatRequest("", false)); err != nil {
			return err
		}
	} else {
		r.rep.note("wrk not found: max req/s is from the built-in closed-loop generator (in the bench process, sharing its CPU), lower than wrk's")
	}
	for round := range r.o.Rounds {
		for _, tc := range r.o.Conns {
			threads, conns := tc[0], tc[1]
			label := fmt.Sprintf("max req/s, wrk -t%d -c%d", threads, conns)
			if r.o.Wrk == "" {
				label = fmt.Sprintf("max req/s, built-in, %d conns", conns)
			}
			if r.o.Rounds > 1 {
				label += fmt.Sprintf(" (median of %d)", r.o.Rounds)
			}
			row := r.rep.row(fmt.Sprintf("rps_t%dc%d", threads, conns), label, "req/s", 0)
			r.progress("%s, round %d of %d", label, round+1, r.o.Rounds)
			for _, t := range r.order(round) {
				if r.o.Wrk != "" {
					res, err := runWrk(ctx, r.o.Wrk, script, t.url, threads, conns, r.o.Duration)
					if err != nil {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						return err
					}
					r.rep.fail(t.name, int(res.Errors))
					row.add(t.name, res.RPS)
					continue
				}
				c := &caller{client: newClient(conns), req: chatRequest(t.url, false)}
				sum, err := closedLoop(ctx, c, conns, r.o.Duration)
				if err != nil {
					return err
				}
				r.rep.fail(t.name, sum.Failed)
				row.add(t.name, sum.Goodput)
				c.client.CloseIdleConnections()
			}
		}
	}
	return ctx.Err()
}
