package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Options shape a run. Exactly one of Rate, Concurrency must be set.
type Options struct {
	// Rate is the open model: requests arrive at this many per second
	// whatever the responses do, as k6's constant-arrival-rate executor
	// sends them. A slow or failing target does not slow the arrivals.
	Rate float64
	// Concurrency is the closed model: this many callers, each sending its
	// next request when the previous one ends.
	Concurrency int
	// Duration is how long requests are started. Required unless Total is
	// set. Requests in flight at the end are waited for.
	Duration time.Duration
	// Total, if set, stops after this many requests (a burst: with
	// Concurrency, "N requests from C callers as fast as possible").
	Total int
	// MaxInFlight bounds the open model's outstanding requests; arrivals
	// beyond it are counted as dropped. Default 10000.
	MaxInFlight int
	// Progress, if set, gets a line every ProgressEvery (default 1s):
	// elapsed, sent, answered, failed, current rate.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Result is a finished run.
type Result struct {
	Samples []Sample
	Summary Summary
	// Began is the wall-clock time the run started; Sample.Start is
	// relative to it.
	Began time.Time
}

// Run sends requests through caller as opts say, waits for the last one,
// and summarizes. It stops early, with what it has, when ctx ends.
func Run(ctx context.Context, opts Options, caller Caller) (*Result, error) {
	if (opts.Rate > 0) == (opts.Concurrency > 0) {
		return nil, errors.New("load: set exactly one of a rate (open model) or a concurrency (closed model)")
	}
	if opts.Duration <= 0 && opts.Total <= 0 {
		return nil, errors.New("load: set a duration or a total number of requests")
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 10000
	}
	r := &runner{caller: caller, began: time.Now()}
	var stopProgress func()
	if opts.Progress != nil {
		stopProgress = r.progress(opts.Progress, opts.ProgressEvery)
	}
	runCtx := ctx
	var cancel context.CancelFunc
	if opts.Duration > 0 {
		runCtx, cancel = context.WithDeadline(ctx, r.began.Add(opts.Duration))
		defer cancel()
	}
	if opts.Rate > 0 {
		r.open(runCtx, ctx, opts)
	} else {
		r.closed(runCtx, ctx, opts)
	}
	r.wg.Wait()
	if stopProgress != nil {
		stopProgress()
	}
	res := &Result{Samples: r.samples, Began: r.began}
	res.Summary = Summarize(r.samples, int(r.dropped.Load()))
	return res, nil
}

type runner struct {
	caller Caller
	began  time.Time
	wg     sync.WaitGroup

	mu      sync.Mutex
	samples []Sample

	sent, ok, failed, dropped, inFlight atomic.Int64
}

func (r *runner) call(ctx context.Context) {
	start := time.Since(r.began)
	r.sent.Add(1)
	s := r.caller.Call(ctx, start)
	if s.OK {
		r.ok.Add(1)
	} else {
		r.failed.Add(1)
	}
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}

// open starts requests at a fixed rate until sendCtx ends; each request
// runs under reqCtx, so requests in flight when the duration ends finish.
func (r *runner) open(sendCtx, reqCtx context.Context, opts Options) {
	interval := time.Duration(float64(time.Second) / opts.Rate)
	next := time.Now()
	for n := 0; opts.Total <= 0 || n < opts.Total; n++ {
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-sendCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if sendCtx.Err() != nil {
			return
		}
		// The schedule, not the clock, sets the next arrival, so a late
		// wake-up is made up for and the average rate holds.
		next = next.Add(interval)
		if r.inFlight.Load() >= int64(opts.MaxInFlight) {
			r.dropped.Add(1)
			continue
		}
		r.inFlight.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.inFlight.Add(-1)
			r.call(reqCtx)
		}()
	}
}

// closed runs Concurrency callers until sendCtx ends or Total requests
// have been started.
func (r *runner) closed(sendCtx, reqCtx context.Context, opts Options) {
	var started atomic.Int64
	for i := 0; i < opts.Concurrency; i++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for sendCtx.Err() == nil {
				if opts.Total > 0 && started.Add(1) > int64(opts.Total) {
					return
				}
				r.inFlight.Add(1)
				r.call(reqCtx)
				r.inFlight.Add(-1)
			}
		}()
	}
}

// progress prints a line every interval until the returned stop is called.
func (r *runner) progress(w io.Writer, every time.Duration) func() {
	if every <= 0 {
		every = time.Second
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		lastSent, last := int64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				sent := r.sent.Load()
				rate := float64(sent-lastSent) / now.Sub(last).Seconds()
				lastSent, last = sent, now
				fmt.Fprintf(w, "%6.1fs  sent %6d  answered %6d  failed %6d  in flight %4d  %6.1f req/s\n",
					time.Since(r.began).Seconds(), sent, r.ok.Load(), r.failed.Load(), r.inFlight.Load(), rate)
			}
		}
	}()
	return func() { close(done); <-stopped }
}
