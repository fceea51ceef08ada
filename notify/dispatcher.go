package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Errors reported with dropped deliveries.
var (
	// ErrQueueFull: the sink's queue was full, so its oldest notification
	// was dropped to make room for the new one.
	ErrQueueFull = errors.New("notify: queue full, oldest notification dropped")
	// ErrClosed: the Dispatcher was closed before the notification could
	// be delivered, or Enqueue was called after Close.
	ErrClosed = errors.New("notify: dispatcher closed")
	// ErrSinkPanic: a sink's Send panicked; the dispatcher recovered.
	ErrSinkPanic = errors.New("sink panicked")
)

// Waiter waits between retries. Tests give the Dispatcher one that returns
// at once and records the waits.
type Waiter interface {
	// Wait returns after d, or with ctx's error when ctx ends first.
	Wait(ctx context.Context, d time.Duration) error
}

type timerWaiter struct{}

func (timerWaiter) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Outcome says how a delivery ended.
type Outcome uint8

// Outcomes.
const (
	// Sent: the sink accepted the notification.
	Sent Outcome = iota + 1
	// Failed: every attempt failed, or the error was permanent, or the
	// dispatcher was closed while retrying.
	Failed
	// Dropped: the notification was never tried on this sink (queue full
	// or dispatcher closed).
	Dropped
)

func (o Outcome) String() string {
	switch o {
	case Sent:
		return "sent"
	case Failed:
		return "failed"
	case Dropped:
		return "dropped"
	default:
		return fmt.Sprintf("Outcome(%d)", o)
	}
}

// Delivery is the result of handing one notification to one sink.
type Delivery struct {
	Sink         string
	Notification Notification
	Outcome      Outcome
	// Attempts is how many times Send was called (0 for Dropped).
	Attempts int
	// Err is the last attempt's error for Failed, ErrQueueFull or
	// ErrClosed for Dropped, nil for Sent.
	Err error
}

// Observer receives every Delivery, for metrics (sent, failed and dropped
// per sink). ObserveDelivery is called without any lock held, from the
// sink's worker goroutine or, for drops, from Enqueue or Close; it must be
// fast and safe for concurrent use.
type Observer interface {
	ObserveDelivery(Delivery)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Delivery)

var _ Observer = ObserverFunc(nil)

// ObserveDelivery implements Observer.
func (f ObserverFunc) ObserveDelivery(d Delivery) { f(d) }

// DispatcherSettings configure a Dispatcher. The zero value is valid.
type DispatcherSettings struct {
	// QueueSize is how many notifications wait per sink. Default 1000.
	// When a sink's queue is full, Enqueue drops that sink's oldest
	// notification (the newest says more about the current state),
	// counts it and reports it with ErrQueueFull.
	QueueSize int
	// AttemptTimeout bounds each call of a sink's Send. Default 5s.
	AttemptTimeout time.Duration
	// Attempts is how many times a notification is tried on a sink,
	// counting the first. Default 3. Errors matching ErrPermanent (such
	// as an HTTPError with a 4xx other than 408 or 429) are not retried.
	Attempts int
	// Backoff is the wait before the first retry, doubled for each further
	// one (1s, 2s, 4s…), up to MaxBackoff. Default 1s. A long backoff holds
	// up the sink's later notifications, not other sinks.
	Backoff time.Duration
	// MaxBackoff caps the wait between retries. Default 30s.
	MaxBackoff time.Duration
	// Waiter waits between retries. Nil means real timers.
	Waiter Waiter
	// Observer receives every delivery result. Nil means none.
	Observer Observer
	// Logger logs failed and dropped deliveries (Warn) and failed attempts
	// that will be retried (Debug). Nil means no logging. Entries name the
	// sink, never its URL or secret.
	Logger *slog.Logger
}

// Defaults for the zero DispatcherSettings.
const (
	DefaultQueueSize      = 1000
	DefaultAttemptTimeout = 5 * time.Second
	DefaultAttempts       = 3
	DefaultBackoff        = time.Second
	DefaultMaxBackoff     = 30 * time.Second
)

func (s DispatcherSettings) withDefaults() DispatcherSettings {
	if s.QueueSize <= 0 {
		s.QueueSize = DefaultQueueSize
	}
	if s.AttemptTimeout <= 0 {
		s.AttemptTimeout = DefaultAttemptTimeout
	}
	if s.Attempts <= 0 {
		s.Attempts = DefaultAttempts
	}
	if s.Backoff <= 0 {
		s.Backoff = DefaultBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.Waiter == nil {
		s.Waiter = timerWaiter{}
	}
	return s
}

// Dispatcher delivers notifications to sinks without blocking the caller.
// Each sink has its own bounded queue and worker goroutine, so a slow or
// failing sink delays only its own notifications; each sink receives the
// notifications in Enqueue order. It is safe for concurrent use. Close it to
// stop its goroutines.
type Dispatcher struct {
	s       DispatcherSettings
	workers []*worker

	ctx    context.Context // cancelled when Close gives up draining
	cancel context.CancelFunc

	mu      sync.RWMutex // guards closed against Enqueue
	closed  bool
	closing chan struct{} // closed by Close: workers finish their queues and exit
	done    chan struct{} // closed when every worker has exited
}

type worker struct {
	sink Sink
	name string
	wake chan struct{} // capacity 1: "the queue may have work"

	mu   sync.Mutex
	ring []Notification
	head int
	n    int

	sent, failed, dropped atomic.Uint64
}

// NewDispatcher starts one worker per sink.
func NewDispatcher(s DispatcherSettings, sinks ...Sink) *Dispatcher {
	s = s.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{
		s: s, ctx: ctx, cancel: cancel,
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	var wg sync.WaitGroup
	for _, sk := range sinks {
		w := &worker{sink: sk, name: sk.Name(), wake: make(chan struct{}, 1), ring: make([]Notification, s.QueueSize)}
		d.workers = append(d.workers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.run(w)
		}()
	}
	go func() {
		wg.Wait()
		close(d.done)
	}()
	return d
}

// push appends n, dropping the oldest when full.
func (w *worker) push(n Notification) (old Notification, dropped bool) {
	w.mu.Lock()
	if w.n == len(w.ring) {
		old, dropped = w.ring[w.head], true
		w.ring[w.head] = n
		w.head = (w.head + 1) % len(w.ring)
	} else {
		w.ring[(w.head+w.n)%len(w.ring)] = n
		w.n++
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return old, dropped
}

func (w *worker) pop() (Notification, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return Notification{}, false
	}
	n := w.ring[w.head]
	w.ring[w.head] = Notification{}
	w.head = (w.head + 1) % len(w.ring)
	w.n--
	return n, true
}

func (w *worker) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Enqueue queues n for every sink and returns at once; it never blocks on
// a sink. Drops (a full queue, or a closed dispatcher) are counted and
// reported to the Observer before it returns.
func (d *Dispatcher) Enqueue(n Notification) {
	type drop struct {
		w *worker
		n Notification
	}
	var drops []drop
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		for _, w := range d.workers {
			d.drop(w, n, ErrClosed)
		}
		return
	}
	for _, w := range d.workers {
		if old, ok := w.push(n); ok {
			drops = append(drops, drop{w, old})
		}
	}
	d.mu.RUnlock()
	for _, dr := range drops {
		d.drop(dr.w, dr.n, ErrQueueFull)
	}
}

func (d *Dispatcher) drop(w *worker, n Notification, err error) {
	w.dropped.Add(1)
	if d.s.Logger != nil {
		d.s.Logger.Warn("notification dropped", "sink", w.name, "kind", string(n.Kind), "pool", n.Pool, "error", err)
	}
	if d.s.Observer != nil {
		d.s.Observer.ObserveDelivery(Delivery{Sink: w.name, Notification: n, Outcome: Dropped, Err: err})
	}
}

// run is a sink's worker: it delivers the queue in order until Close.
func (d *Dispatcher) run(w *worker) {
	draining := false
	for {
		n, ok := w.pop()
		if !ok {
			if draining {
				return
			}
			select {
			case <-w.wake:
			case <-d.closing:
				// No Enqueue can add to the queue any more: finish it.
				draining = true
			}
			continue
		}
		if d.ctx.Err() != nil {
			d.drop(w, n, ErrClosed)
			continue
		}
		d.deliver(w, n)
	}
}

// deliver tries n on w's sink with retries and reports the result.
func (d *Dispatcher) deliver(w *worker, n Notification) {
	var err error
	attempts := 0
	wait := d.s.Backoff
	for attempts < d.s.Attempts {
		attempts++
		actx, cancel := context.WithTimeout(d.ctx, d.s.AttemptTimeout)
		err = safeSend(actx, w.sink, w.name, n)
		cancel()
		if err == nil {
			w.sent.Add(1)
			if d.s.Observer != nil {
				d.s.Observer.ObserveDelivery(Delivery{Sink: w.name, Notification: n, Outcome: Sent, Attempts: attempts})
			}
			return
		}
		if attempts == d.s.Attempts || !temporary(err) || d.ctx.Err() != nil {
			break
		}
		if d.s.Logger != nil {
			d.s.Logger.Debug("notification attempt failed, retrying", "sink", w.name, "kind", string(n.Kind),
				"pool", n.Pool, "attempt", attempts, "retry_in", wait, "error", err)
		}
		if d.s.Waiter.Wait(d.ctx, wait) != nil {
			break
		}
		wait = min(wait*2, d.s.MaxBackoff)
	}
	w.failed.Add(1)
	if d.s.Logger != nil {
		d.s.Logger.Warn("notification not delivered", "sink", w.name, "kind", string(n.Kind),
			"pool", n.Pool, "attempts", attempts, "error", err)
	}
	if d.s.Observer != nil {
		d.s.Observer.ObserveDelivery(Delivery{Sink: w.name, Notification: n, Outcome: Failed, Attempts: attempts, Err: err})
	}
}

// temporary reports whether err may go away on another attempt: unless it
// is ErrPermanent, it may.
func temporary(err error) bool { return !errors.Is(err, ErrPermanent) }

// safeSend calls Send, turning a panic into an error so that one broken
// sink cannot take the gateway down.
func safeSend(ctx context.Context, s Sink, name string, n Notification) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("notify: %s: %w (%T)", name, ErrSinkPanic, r)
		}
	}()
	return s.Send(ctx, n)
}

// Close stops accepting notifications (later Enqueues are dropped with
// ErrClosed), lets each sink's worker deliver what is queued, and returns
// nil once all have. If ctx ends first, it cancels the attempts in flight
// and the waits between retries, drops what is still queued (reported with
// ErrClosed), waits for the workers to exit and returns ctx's error. Sinks
// must honour their context for Close to return promptly. After Close no
// goroutine of the Dispatcher remains. Calling Close again waits likewise
// and returns nil once the workers are gone.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.closing)
	}
	d.mu.Unlock()
	select {
	case <-d.done:
		d.cancel()
		return nil
	case <-ctx.Done():
		d.cancel()
		<-d.done
		return ctx.Err()
	}
}

// SinkStats counts one sink's deliveries since the Dispatcher started.
type SinkStats struct {
	Name                  string
	Sent, Failed, Dropped uint64
	// Queued is how many notifications wait now.
	Queued int
}

// Stats returns the counts per sink, in the order the sinks were given.
func (d *Dispatcher) Stats() []SinkStats {
	out := make([]SinkStats, len(d.workers))
	for i, w := range d.workers {
		out[i] = SinkStats{Name: w.name, Sent: w.sent.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load(), Queued: w.queued()}
	}
	return out
}
