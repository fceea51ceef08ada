package proxy

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// bodyDeadline bounds how long a request body may take to arrive: the
// whole of Handler.BodyReadTimeout (the grace), then at least
// Routes.MinBodyRate bytes a second on average, counted from the start
// of the read. A body of n bytes so far may take until
//
//	start + grace + n/rate
//
// and a body that falls behind that line is ended at once: its
// connection's read deadline is set in the past, so the read blocked on
// it fails, and the request is answered 408 with its slot and memory
// given back. A link that sends at the rate is never cut, however large
// the body; a client that trickles a byte a second is cut a moment after
// the grace. With no rate, the body must arrive whole within the grace;
// with no grace, nothing is bounded.
//
// It runs on the handler's clock (Handler.Clock), one timer per
// watch, re-armed as the body arrives. A watch is kept with its exchange
// and used again by the next request (no allocation per request). Safe
// for concurrent use: the timer's function runs on its own goroutine.
type bodyDeadline struct {
	clk   clock.Clock
	timer clock.Timer
	fire  func() // d.expire, made once

	read atomic.Int64   // the bytes read so far
	cr   countingReader // reader's

	mu      sync.Mutex
	w       http.ResponseWriter // whose connection is watched; nil: none
	start   time.Time
	grace   time.Duration
	rate    int64 // bytes a second; zero or less: none
	expired bool
}

// newBodyDeadline returns a watch on clk.
func newBodyDeadline(clk clock.Clock) *bodyDeadline {
	d := &bodyDeadline{clk: clk}
	d.fire = d.expire
	return d
}

// watch starts watching the body read through w's connection, from now,
// with grace and rate as bodyDeadline says. It reports false when there
// is nothing to bound (no grace): then stop need not be called.
func (d *bodyDeadline) watch(w http.ResponseWriter, grace time.Duration, rate int64) bool {
	if grace <= 0 {
		return false
	}
	now := d.clk.Now()
	d.read.Store(0)
	d.mu.Lock()
	d.w, d.start, d.grace, d.rate, d.expired = w, now, grace, rate, false
	due := d.dueLocked(0)
	d.mu.Unlock()
	if d.timer == nil {
		d.timer = clock.At(d.clk, due, d.fire)
	} else {
		d.timer.Reset(due.Sub(now))
	}
	return true
}

// dueLocked is when a body of n bytes so far is behind. Requires d.mu
// held.
func (d *bodyDeadline) dueLocked(n int64) time.Time {
	due := d.start.Add(d.grace)
	if d.rate > 0 {
		due = due.Add(time.Duration(float64(n) / float64(d.rate) * float64(time.Second)))
	}
	return due
}

// expire is the timer's function: it ends a body that has fallen behind,
// or re-arms the timer for when it would. A call left over from an
// earlier request sees that request's watch stopped, or the next one's
// state, and acts on that alone.
func (d *bodyDeadline) expire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w == nil || d.expired {
		return
	}
	now := d.clk.Now()
	if due := d.dueLocked(d.read.Load()); now.Before(due) {
		d.timer.Reset(due.Sub(now))
		return
	}
	d.expired = true
	// A read deadline in the past ends the read blocked on the connection
	// now, with a timeout error.
	http.NewResponseController(d.w).SetReadDeadline(time.Unix(1, 0))
}

// stop ends the watch and reports whether the body fell behind. Once it
// returns, the watch touches the connection no more.
func (d *bodyDeadline) stop() (expired bool) {
	d.timer.Stop()
	d.mu.Lock()
	expired, d.w = d.expired, nil
	d.mu.Unlock()
	return expired
}

// reader returns src counting, for the watch, the bytes read from it.
// It is called once per watch.
func (d *bodyDeadline) reader(src io.Reader) io.Reader {
	d.cr = countingReader{src: src, n: &d.read}
	return &d.cr
}

type countingReader struct {
	src io.Reader
	n   *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.src.Read(p)
	c.n.Add(int64(n))
	return n, err
}
