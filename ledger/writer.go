package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// ErrSpooled is returned (wrapped) by Writer.Close (and AuditLog.Close)
// when records it could not store were left in its spool for the next
// start: nothing was lost.
var ErrSpooled = errors.New("records left in the spool")

// Recorder stores batches of usage; Store implements it.
type Recorder interface {
	RecordUsage(ctx context.Context, batch []Usage) error
}

// WriterOptions configures a Writer. The zero value works.
type WriterOptions = BatchOptions[Usage]

// BatchOptions configures a BatchWriter (a Writer of usage, an AuditLog).
// The zero value works.
type BatchOptions[T any] struct {
	// Buffer is the most records held, waiting or being written; Add drops
	// what comes beyond it. Default 10000. Memory is about 300 bytes a
	// record; a larger buffer rides out a longer outage of the store.
	Buffer int
	// Batch is the most records written in one call, and the number that
	// wakes the writer before Every has passed. Default 500.
	Batch int
	// Every is the longest a record waits before it is written while the
	// store works. Default 1 s.
	Every time.Duration
	// MinBackoff and MaxBackoff bound the wait before retrying a failed
	// write; it doubles from MinBackoff after each failure in a row.
	// Defaults 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds one write to the store. Default 10 s.
	Timeout time.Duration
	// OnDrop, if not nil, is told how many records were dropped: by Add on
	// a full buffer or after Close (counted, and reported from the
	// writer's goroutine, never from Add), batches the store refused as
	// ErrInvalid, and records left unwritten when Close gives up. Nil
	// means drops are only counted (see Dropped).
	OnDrop func(n int)
	// OnWritten, if not nil, is called from the writer's goroutine with
	// each batch once it is stored.
	OnWritten func(batch []T)
	// OnError, if not nil, is called with each failed write; the writer
	// keeps the batch and retries. Nil means failures are not reported.
	OnError func(error)
	// Clock is the writer's time source; nil is the wall clock.
	Clock clock.Clock
	// Spool, if not nil, makes each record durable before Add returns
	// (see Spool): Add appends it to the spool and waits for the spool's
	// fsync, the writer empties the spool as records are stored, and
	// Close leaves what it could not store in the spool (neither dropped
	// nor counted) for the next start. Nil means records live only in
	// memory until stored: a crash loses what is buffered. Close closes
	// the spool.
	Spool *SpoolOf[T]
	// Replay are records to store first: those OpenSpool found in the
	// spool. They are kept however many there are, Buffer aside.
	Replay []T
	// MaxBodyMemory (usage only) bounds the bytes of request bodies (Usage.Bodies)
	// held, waiting or being written: past it a record is kept without
	// its bodies (counted in BodiesDropped). Default 32 MiB.
	MaxBodyMemory int64
	// Secrets (usage only), if not nil, returns the configuration's own secrets
	// (config.SecretValues), which are redacted word for word from the
	// records' bodies before they go to the store (whose own rules,
	// RedactBody, redact what is shaped as a secret). Called on the
	// writer's goroutine, once per batch that has bodies.
	Secrets func() []string
	// OnSpoolError, if not nil, is told of each failed write or fsync of
	// the spool (from Add, on the request path, or from the writer's
	// goroutine); the record stays buffered in memory as without a spool.
	OnSpoolError func(error)
}

func (o BatchOptions[T]) withDefaults() BatchOptions[T] {
	if o.Buffer <= 0 {
		o.Buffer = 10000
	}
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.Batch > o.Buffer {
		o.Batch = o.Buffer
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(30*time.Second, o.MinBackoff)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxBodyMemory <= 0 {
		o.MaxBodyMemory = 32 << 20
	}
	o.Clock = clock.Or(o.Clock)
	return o
}

// Writer records usage off the request path: Add buffers a record and
// returns at once; a goroutine writes batches every Every, or as soon as
// Batch records wait. When the store fails, the writer keeps the batch
// and retries with backoff, and Add keeps buffering up to Buffer records
// in all; beyond that records are dropped and counted. Close writes what
// is buffered. A Writer is safe for concurrent use.
type Writer = BatchWriter[Usage]

// BatchWriter stores records of type T off the request path, as told of
// Writer, which is the BatchWriter of usage; AuditLog is that of the
// audit trail. A BatchWriter is safe for concurrent use.
type BatchWriter[T any] struct {
	rec     func(ctx context.Context, batch []T) error
	prepare func(*T, time.Time) // fills in an id and a time
	what    string              // the records, in errors: "usage records"
	o       BatchOptions[T]

	mu       sync.Mutex
	buf      []T    // waiting, oldest first
	held     int    // records taken by the goroutine and not yet written
	dropped  uint64 // total dropped
	reported uint64 // dropped already passed to OnDrop
	closed   bool   // Close was called
	// bodyBytes are the bytes of the bodies held (MaxBodyMemory),
	// bodiesDropped the records whose bodies were left out for it.
	bodyBytes     int64
	bodiesDropped uint64
	// weigh and strip, for usage, are what a record's bodies weigh
	// against MaxBodyMemory and leave them out; redact prepares a batch
	// for the store. Nil for records without bodies.
	weigh  func(*T) int64
	strip  func(*T)
	redact func([]T) []T

	kick    chan struct{} // Batch records wait
	timer   chan struct{} // the goroutine's timer fired
	closing chan struct{} // closed by Close
	ctx     context.Context
	abort   context.CancelFunc // Close's context ended: stop writing
	done    chan struct{}      // closed when the goroutine returns
	lost    int                // records left unwritten at the end
	spooled int                // records left in the spool at the end
}

// NewWriter starts a writer of usage into rec. Close it to stop it.
func NewWriter(rec Recorder, o WriterOptions) *Writer {
	w := newBatchWriter(rec.RecordUsage, func(u *Usage, now time.Time) {
		if u.RequestID == "" {
			u.RequestID = "req_" + randomBase62(20)
		}
		if u.At.IsZero() {
			u.At = now
		}
	}, "usage records", o, func(w *Writer) {
		w.weigh = func(u *Usage) int64 { return int64(u.Bodies.size()) }
		w.strip = func(u *Usage) { u.Bodies = nil }
		secrets := w.o.Secrets
		w.redact = func(b []Usage) []Usage { return redactUsage(b, secrets) }
	})
	return w
}

// newBatchWriter starts a writer; setup, if not nil, is called before
// its goroutine starts.
func newBatchWriter[T any](rec func(context.Context, []T) error, prepare func(*T, time.Time), what string, o BatchOptions[T], setup func(*BatchWriter[T])) *BatchWriter[T] {
	w := &BatchWriter[T]{
		rec:     rec,
		prepare: prepare,
		what:    what,
		o:       o.withDefaults(),
		kick:    make(chan struct{}, 1),
		timer:   make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	w.buf = append(w.buf, o.Replay...)
	w.o.Replay = nil
	w.ctx, w.abort = context.WithCancel(context.Background())
	if setup != nil {
		setup(w)
	}
	go w.run()
	return w
}

// Add buffers u for writing. Without a spool it never blocks; with one
// it returns once u is on disk in the spool (one fsync, shared with the
// Adds of the same moment). A u without RequestID gets a random one, so
// that retries of its batch and replays of the spool stay idempotent, and
// one without At gets the clock's time. When Buffer records are held
// already, or the writer is closed, u is dropped and counted.
func (w *BatchWriter[T]) Add(u T) {
	w.prepare(&u, w.o.Clock.Now())
	w.mu.Lock()
	if w.closed || len(w.buf)+w.held >= w.o.Buffer {
		w.dropped++
		w.mu.Unlock()
		return
	}
	if w.weigh != nil {
		if n := w.weigh(&u); n > 0 && w.bodyBytes+n > w.o.MaxBodyMemory {
			w.strip(&u)
			w.bodiesDropped++
		} else {
			w.bodyBytes += n
		}
	}
	// The line and the buffer change together, under w.mu, so that the
	// goroutine's compaction of the spool never loses a line.
	var seq uint64
	var err error
	if w.o.Spool != nil {
		seq, err = w.o.Spool.write(u)
	}
	w.buf = append(w.buf, u)
	full := len(w.buf) >= w.o.Batch
	w.mu.Unlock()
	if full {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	if w.o.Spool != nil && err == nil {
		err = w.o.Spool.wait(seq)
	}
	if err != nil {
		w.spoolError(err)
	}
}

func (w *BatchWriter[T]) spoolError(err error) {
	if w.o.OnSpoolError != nil {
		w.o.OnSpoolError(err)
	}
}

// compact sets the spool back to the records not yet stored, after a
// batch was: empty when nothing waits, rewritten when the file holds many
// more lines than wait (so it costs O(1) a record over time).
func (w *BatchWriter[T]) compact() {
	sp := w.o.Spool
	if sp == nil {
		return
	}
	w.mu.Lock()
	var err error
	switch pending := len(w.buf) + w.held; {
	case pending == 0:
		err = sp.Truncate()
	case sp.Lines() > 2*pending+w.o.Batch:
		err = sp.Rewrite(w.buf)
	}
	w.mu.Unlock()
	if err != nil {
		w.spoolError(err)
	}
}

// Dropped returns how many records have been dropped so far.
func (w *BatchWriter[T]) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Pending returns how many records are held, waiting or being written.
func (w *BatchWriter[T]) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf) + w.held
}

// Close writes what is buffered and stops the writer. If ctx ends first
// (the store is down), it stops retrying, counts what is left as dropped
// and returns an error saying how many records were lost; with a spool,
// what is left stays in the spool instead, not counted as dropped, and
// the error (wrapping ErrSpooled) says how many wait there. Records added
// after Close are dropped and counted in Dropped (OnDrop hears of those
// dropped before the writer stopped).
func (w *BatchWriter[T]) Close(ctx context.Context) error {
	w.mu.Lock()
	first := !w.closed
	w.closed = true
	w.mu.Unlock()
	if first {
		close(w.closing)
	}
	stop := context.AfterFunc(ctx, w.abort)
	defer stop()
	<-w.done
	if sp := w.o.Spool; sp != nil {
		if err := sp.Close(); err != nil {
			w.spoolError(err)
		}
		if w.spooled > 0 {
			return fmt.Errorf("ledger: %d %s left unwritten in the spool %s, for the next start: %w",
				w.spooled, w.what, sp.Path(), ErrSpooled)
		}
	}
	if w.lost > 0 {
		err := ctx.Err()
		if err == nil {
			err = errors.New("writer aborted")
		}
		return fmt.Errorf("ledger: %d %s left unwritten: %w", w.lost, w.what, err)
	}
	return nil
}

func (w *BatchWriter[T]) run() {
	defer close(w.done)
	defer w.abort()
	var held []T
	var backoff time.Duration // 0 while the store works
	for {
		w.reportDrops()
		closing := w.isClosing()
		if !closing || backoff > 0 {
			wait := w.o.Every
			if backoff > 0 {
				wait = backoff
			}
			if !w.sleep(wait, backoff == 0) {
				// Close's context ended while the store failed.
				w.giveUp(held)
				return
			}
		}
		// Write everything buffered, a batch at a time, until the store
		// fails or nothing is left.
		for {
			if held == nil {
				held = w.take()
				if held == nil {
					break
				}
			}
			err := w.write(held)
			if err == nil && w.o.OnWritten != nil {
				w.o.OnWritten(held)
			}
			if err == nil || errors.Is(err, ErrInvalid) {
				if err != nil {
					w.drop(len(held))
					w.report(err)
				}
				w.release(held)
				held, backoff = nil, 0
				w.compact()
				continue
			}
			w.report(err)
			if w.ctx.Err() != nil {
				w.giveUp(held)
				return
			}
			backoff = min(max(2*backoff, w.o.MinBackoff), w.o.MaxBackoff)
			break
		}
		if held == nil && w.isClosing() && w.Pending() == 0 {
			w.reportDrops()
			return
		}
	}
}

// sleep waits for d to pass, for Batch records when kickable, or for
// Close; it returns false when Close's context ended.
func (w *BatchWriter[T]) sleep(d time.Duration, kickable bool) bool {
	t := w.o.Clock.AfterFunc(d, func() {
		select {
		case w.timer <- struct{}{}:
		default:
		}
	})
	defer func() {
		t.Stop()
		select { // a tick that fired meanwhile is stale
		case <-w.timer:
		default:
		}
	}()
	kick := w.kick
	if !kickable {
		kick = nil
	}
	closing := w.closing
	if !kickable {
		closing = nil // while retrying, Close does not hurry the retry
	}
	select {
	case <-w.timer:
	case <-kick:
	case <-closing:
	case <-w.ctx.Done():
		return false
	}
	return true
}

func (w *BatchWriter[T]) write(batch []T) error {
	ctx, cancel := context.WithTimeout(w.ctx, w.o.Timeout)
	defer cancel()
	if w.redact != nil {
		batch = w.redact(batch)
	}
	return w.rec(ctx, batch)
}

// redacted is batch with Secrets redacted from its bodies: a copy where
// a body changes, so that the batch held (and its bodies' bytes, counted
// in MaxBodyMemory) stays as it was.
func redactUsage(batch []Usage, secretsOf func() []string) []Usage {
	if secretsOf == nil || !slices.ContainsFunc(batch, func(u Usage) bool { return u.Bodies != nil }) {
		return batch
	}
	secrets := secretsOf()
	if len(secrets) == 0 {
		return batch
	}
	out := slices.Clone(batch)
	for i, u := range out {
		if u.Bodies == nil {
			continue
		}
		b := *u.Bodies
		b.Request = RedactLiterals(slices.Clip(b.Request), secrets, b.RequestTruncated)
		b.Response = RedactLiterals(slices.Clip(b.Response), secrets, b.ResponseTruncated)
		out[i].Bodies = &b
	}
	return out
}

// take removes up to Batch records from the buffer and holds them.
func (w *BatchWriter[T]) take() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.buf), w.o.Batch)
	if n == 0 {
		return nil
	}
	batch := make([]T, n)
	copy(batch, w.buf)
	rest := copy(w.buf, w.buf[n:])
	clear(w.buf[rest:])
	w.buf = w.buf[:rest]
	w.held += n
	return batch
}

func (w *BatchWriter[T]) release(batch []T) {
	w.mu.Lock()
	w.held -= len(batch)
	if w.weigh != nil {
		for i := range batch {
			w.bodyBytes -= w.weigh(&batch[i])
		}
	}
	w.mu.Unlock()
}

// BodiesDropped returns how many records were kept without their bodies
// so far, for MaxBodyMemory.
func (w *BatchWriter[T]) BodiesDropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bodiesDropped
}

func (w *BatchWriter[T]) drop(n int) {
	w.mu.Lock()
	w.dropped += uint64(n)
	w.mu.Unlock()
}

// giveUp counts what is held and buffered as lost, or, with a spool, as
// left in it.
func (w *BatchWriter[T]) giveUp(held []T) {
	w.mu.Lock()
	n := len(held) + len(w.buf)
	w.buf = nil
	w.held = 0
	w.bodyBytes = 0
	if w.o.Spool != nil {
		w.spooled = n
	} else {
		w.dropped += uint64(n)
		w.lost = n
	}
	w.mu.Unlock()
	w.reportDrops()
}

func (w *BatchWriter[T]) isClosing() bool {
	select {
	case <-w.closing:
		return true
	default:
		return false
	}
}

func (w *BatchWriter[T]) report(err error) {
	if w.o.OnError != nil {
		w.o.OnError(err)
	}
}

// reportDrops passes new drops to OnDrop, outside the lock.
func (w *BatchWriter[T]) reportDrops() {
	w.mu.Lock()
	n := w.dropped - w.reported
	w.reported = w.dropped
	w.mu.Unlock()
	if n > 0 && w.o.OnDrop != nil {
		w.o.OnDrop(int(n))
	}
}
