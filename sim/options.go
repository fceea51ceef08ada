package sim

import (
	"context"
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// Clock tells the time. The simulator reads it for every quota, schedule and
// timestamp decision; nothing in the decision logic calls time.Now itself.
// A Clock that also has AfterFunc (a [clock.Clock], such as fakeclock)
// paces the keep-alive comments of the keepalive_hang fault; without it
// that fault sends only its first comment. Implementations must be safe
// for concurrent use.
type Clock interface {
	Now() time.Time
}

// Waiter holds a response back for a simulated latency. Implementations must
// be safe for concurrent use.
type Waiter interface {
	// Wait returns nil once d has passed, or ctx.Err() if ctx is done first.
	Wait(ctx context.Context, d time.Duration) error
}

// Option changes how [Start] builds a [Sim].
type Option func(*options)

type options struct {
	clock  Clock
	logger *slog.Logger
	waiter Waiter
	tls    *tls.Config
}

// WithClock sets the clock behind quota slices, schedules and timestamps.
// nil, the default, means the system clock.
func WithClock(c Clock) Option {
	return func(o *options) { o.clock = c }
}

// WithLogger sets the logger for fault changes and server errors. nil, the
// default, discards logs.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithWaiter sets how simulated latency is waited out. nil, the default,
// waits in real time. Tests pass a recorder that returns at once to observe
// the latency draws without sleeping.
func WithWaiter(w Waiter) Option {
	return func(o *options) { o.waiter = w }
}

// WithTLS serves every listener (deployments, the shared listener, the
// control address) over TLS with c's certificates, offering HTTP/2 and
// HTTP/1.1 (ALPN), as real regions sit behind TLS; the endpoints' URLs
// are https. c is cloned. nil, the default, serves plain HTTP. Under TLS
// the reset fault closes the connection without a TCP reset (and resets
// the stream on HTTP/2).
func WithTLS(c *tls.Config) Option {
	return func(o *options) { o.tls = c }
}

func buildOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.clock == nil {
		o.clock = systemClock{}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.waiter == nil {
		o.waiter = realWaiter{}
	}
	return o
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// AfterFunc runs f after d, for the timers of keepalive_hang.
func (systemClock) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

var (
	_ Clock      = systemClock{}
	_ timerClock = systemClock{}
)
