package bench

import (
	"context"
	"fmt"
	"time"
)

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
		with, before, anon, per, err := r.heldRSS(ctx, t, r.up)
		if err != nil {
			return err
		}
		r.rep.row("rss", label, "MiB", 1).add(t.name, with/mib)
		r.rep.row("rss_before", "  before the streams (after the warm-up)", "MiB", 1).add(t.name, before/mib)
		r.rep.row("rss_anon", "  of which anonymous (RssAnon: heap, stacks)", "MiB", 1).add(t.name, anon/mib)
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
	with, _, _, per, err := r.heldRSS(ctx, t, up)
	if err != nil {
		return err
	}
	r.rep.row("rss_h2", fmt.Sprintf("RSS with %d open streams (HTTP/2 upstream)", r.o.OpenStreams), "MiB", 1).add(t.name, with/mib)
	r.rep.row("rss_h2_per_stream", "  memory per open stream", "KiB", 1).add(t.name, per/kib)
	return nil
}

// heldRSS opens the streams through t to up, held by up, and returns t's
// resident memory with them open, before they were opened, the anonymous
// part of the first, and the difference per stream.
func (r *runner) heldRSS(ctx context.Context, t *target, up *Upstream) (with, before, anon, perStream float64, err error) {
	n := r.o.OpenStreams
	r.progress("%s: opening %d streams", t.name, n)
	b, err := rssOf(t.pids)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	before = float64(b)
	up.SetStream(StreamShape{Chunks: 3, Hold: true})
	defer up.SetStream(StreamShape{Chunks: r.o.Chunks, Interval: r.o.Interval})
	base := up.Held()
	wait := openStreams(ctx, t.url, n, r.o.OpenRate)
	held := up.waitHeld(ctx, base+int64(n), 30*time.Second) - base
	settle(ctx, min(time.Second, r.o.Duration))
	rss, err := rssOf(t.pids)
	if err == nil {
		var a int64
		a, err = anonOf(t.pids)
		anon = float64(a)
	}
	up.Release()
	failed, firstErr := wait()
	r.rep.fail(t.name, int(failed))
	if failed > 0 {
		r.rep.note("%s: %d of %d held streams failed; the first: %v", t.name, failed, n, firstErr)
	}
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if held < int64(n) {
		r.rep.note("%s: only %d of %d streams were open at once", t.name, held, n)
	}
	if held <= 0 {
		return float64(rss), before, anon, 0, nil
	}
	return float64(rss), before, anon, (float64(rss) - before) / float64(held), ctx.Err()
}

// settle lets a process's memory settle after a burst: d, or until ctx ends.
func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
