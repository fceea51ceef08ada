// Package asynclog is a buffered, asynchronous io.Writer for a log: a
// write appends the line to a buffer and returns; the buffer is written
// out by a goroutine of its own when it passes a size, by a timer an
// interval after the first line of an empty buffer, on Flush and on
// Close, so an idle writer arms no timer and wakes nothing. A request
// log line costs a copy instead of a write(2) on the request's goroutine.
// When the buffer is full (the output is not keeping up) lines are
// dropped and counted, never waited for.
package asynclog

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Options adjust a Writer. The zero value is valid.
type Options struct {
	// FlushSize is how many bytes pending wake the writer goroutine.
	// Default 32 KiB.
	FlushSize int
	// MaxPending bounds the bytes buffered; a line that would go over it
	// is dropped. Default 4 MiB, at least FlushSize.
	MaxPending int
	// Interval is the longest a line waits before it is written out: a
	// timer armed by the first line of an empty buffer. Default 200ms;
	// negative means no timer (lines then go out by size, Flush and
	// Close only; tests use this).
	Interval time.Duration
	// OnDrop, if set, is called once per dropped line, with no lock
	// held. Nil means the drop is only counted (Dropped).
	OnDrop func()
}

// Writer is the buffered writer. Each Write must be one whole line (as
// slog handlers write). It holds up to twice MaxPending (the buffer being
// filled and the one being written out). It is safe for concurrent use.
type Writer struct {
	out  io.Writer
	opts Options

	// outMu serialises writes to out and keeps their order.
	outMu sync.Mutex
	// mu guards buf, spare, closed and timer.
	mu     sync.Mutex
	buf    []byte
	spare  []byte
	closed bool
	// timer writes the buffer out Interval after a line found it empty;
	// nil until the first such line, or without an Interval.
	timer *time.Timer
	// wakes counts the times the buffer was written out by size or by
	// the timer (tests).
	wakes atomic.Uint64

	dropped   atomic.Uint64
	wake      chan struct{}
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	err       error
}

var _ io.Writer = (*Writer)(nil)

// New returns a Writer on out and starts its goroutine; Close it to stop
// the goroutine and write out what is left.
func New(out io.Writer, o Options) *Writer {
	if o.FlushSize <= 0 {
		o.FlushSize = 32 << 10
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 4 << 20
	}
	o.MaxPending = max(o.MaxPending, o.FlushSize)
	if o.Interval == 0 {
		o.Interval = 200 * time.Millisecond
	}
	w := &Writer{out: out, opts: o, buf: make([]byte, 0, o.FlushSize), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go w.run()
	return w
}

// Write buffers p and returns at once; it never fails. A line that does
// not fit in what is left of MaxPending is dropped. After Close it
// writes p straight to the output.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.outMu.Lock()
		defer w.outMu.Unlock()
		return w.out.Write(p)
	}
	if len(w.buf)+len(p) > w.opts.MaxPending {
		w.mu.Unlock()
		w.dropped.Add(1)
		if w.opts.OnDrop != nil {
			w.opts.OnDrop()
		}
		return len(p), nil
	}
	if len(w.buf) == 0 && w.opts.Interval > 0 {
		if w.timer == nil {
			w.timer = time.AfterFunc(w.opts.Interval, w.timeUp)
		} else {
			w.timer.Reset(w.opts.Interval)
		}
	}
	w.buf = append(w.buf, p...)
	full := len(w.buf) >= w.opts.FlushSize
	w.mu.Unlock()
	if full {
		select {
		case w.wake <- struct{}{}:
		default: // already woken
		}
	}
	return len(p), nil
}

// Flush writes out every line buffered so far, and returns the output's
// error, if any.
func (w *Writer) Flush() error {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	return w.flushLocked()
}

// flushLocked writes the buffer out. Requires outMu held.
func (w *Writer) flushLocked() error {
	w.mu.Lock()
	b := w.buf
	if len(b) == 0 {
		w.mu.Unlock()
		return nil
	}
	w.buf, w.spare = w.spare[:0], nil
	w.mu.Unlock()
	_, err := w.out.Write(b)
	w.mu.Lock()
	w.spare = b[:0]
	w.mu.Unlock()
	return err
}

// Dropped is how many lines have been dropped since New.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Close stops the goroutine and writes out what is buffered; later
// writes go straight to the output. Later calls return the first's
// result.
func (w *Writer) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		<-w.stopped
		w.outMu.Lock()
		defer w.outMu.Unlock()
		// Closed and emptied at once, so that no line is left behind;
		// writes from now on wait for outMu, so they follow these lines.
		w.mu.Lock()
		w.closed = true
		if w.timer != nil {
			w.timer.Stop()
		}
		b := w.buf
		w.buf, w.spare = nil, nil
		w.mu.Unlock()
		if len(b) > 0 {
			_, w.err = w.out.Write(b)
		}
	})
	return w.err
}

// run writes the buffer out each time it passes FlushSize, until Close.
func (w *Writer) run() {
	defer close(w.stopped)
	for {
		select {
		case <-w.wake:
		case <-w.stop:
			return
		}
		w.wakes.Add(1)
		w.Flush()
	}
}

// timeUp writes the buffer out an Interval after its first line (on the
// timer's goroutine). Lines that came since are written with it; a buffer
// written out meanwhile, by size or Flush, leaves nothing or what came
// after, which is then at most Interval old.
func (w *Writer) timeUp() {
	w.wakes.Add(1)
	w.Flush()
}
