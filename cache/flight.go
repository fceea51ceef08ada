package cache

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// Flights joins identical calls in flight: the first call of a key leads
// (makes the call), the calls of the same key that arrive while it runs
// follow (wait for its answer). It is safe for concurrent use; its zero
// value is ready.
type Flights struct {
	mu      sync.Mutex
	m       map[Key]*Flight
	waiting atomic.Int64
}

// Flight is one call in flight, with its followers. Its leader may share
// its answer as it streams (Share, Append): followers waiting when the
// stream starts, or arriving while it runs and its bytes are within the
// bound, read it as it arrives (Reader). It is safe for concurrent use.
type Flight struct {
	fs   *Flights
	done chan struct{}

	mu      sync.Mutex
	entry   *Entry        // the answer, once landed; nil when the leader had none to share
	started chan struct{} // closed when the leader's stream starts (Share)
	landed  bool

	// The shared stream, once started: status and header as the leader's
	// caller got them, and the bytes sent so far, buf, from offset base
	// (bytes before base were read by every reader and let go of).
	status  int
	header  http.Header
	buf     []byte
	base    int64
	limit   int64
	over    bool          // past limit: no reader joins any more, readers read on
	wake    chan struct{} // closed at the next Append or at the landing; nil: no reader asleep
	readers map[*Reader]struct{}
	err     error // how the leader's stream ended, once landed: nil as a whole

	// After the leader's client left (LeaderLeft), the call goes on for
	// the readers: abandon cancels it when the last one leaves.
	leaderGone bool
	closed     bool // abandoned: no reader joins
	abandon    func()
}

// ErrTooLarge is a follower's wait on a stream that has passed its
// bound before the follower joined it: it calls for itself.
var ErrTooLarge = errors.New("cache: the shared stream passed its bound before this call joined it")

// ErrLagged ends the stream of a reader that fell behind the leader by
// more than the bound: the bytes it had yet to read are gone.
var ErrLagged = errors.New("cache: this call fell behind the stream it shares by more than its bound")

// Join joins the flight of k. The first caller of a key gets leader true
// and must end the flight with Land, whatever happens; the others get the
// leader's flight to Wait on.
func (fs *Flights) Join(k Key) (f *Flight, leader bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.m[k]; f != nil {
		return f, false
	}
	if fs.m == nil {
		fs.m = map[Key]*Flight{}
	}
	f = &Flight{fs: fs, done: make(chan struct{}), started: make(chan struct{})}
	fs.m[k] = f
	return f, true
}

// Land ends the leader's flight of k with its answer e (nil: none to
// share, the followers call for themselves or join a new flight), and,
// for a shared stream, with err, how the stream its caller got ended (nil
// as a whole; else the error its caller's stream ended with, which the
// readers' streams end with too): the followers wake, and the next call
// of k leads a new flight.
func (fs *Flights) Land(k Key, f *Flight, e *Entry, err error) {
	fs.mu.Lock()
	if fs.m[k] == f {
		delete(fs.m, k)
	}
	fs.mu.Unlock()
	f.mu.Lock()
	f.entry, f.err, f.landed = e, err, true
	f.wakeReaders()
	f.mu.Unlock()
	close(f.done)
}

// InFlight is the number of flights under way.
func (fs *Flights) InFlight() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.m)
}

// Waiting is the number of followers waiting now (for an answer or a
// stream's start; not those reading a stream).
func (fs *Flights) Waiting() int { return int(fs.waiting.Load()) }

// Wait waits until ctx is done for the flight's answer or, when its
// leader shares its stream, for the stream's start. It returns the
// answer, or a Reader of the stream the follower has joined (to Close),
// or neither when the leader had none to share or ctx ended first (its
// error), or ErrTooLarge when the stream passed its bound before the
// follower could join it.
func (f *Flight) Wait(ctx context.Context) (*Entry, *Reader, error) {
	f.fs.waiting.Add(1)
	defer f.fs.waiting.Add(-1)
	for {
		select {
		case <-f.done:
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.entry, nil, nil
		case <-f.started:
			if r, err := f.join(); r != nil || err != nil {
				return nil, r, err
			}
			// abandoned by its leader: the landing follows
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// join makes a reader of the started stream, unless it has landed (the
// landing's answer then), is past its bound (ErrTooLarge) or abandoned
// (neither).
func (f *Flight) join() (*Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.landed || f.closed:
		return nil, nil
	case f.over:
		return nil, ErrTooLarge
	}
	r := &Reader{f: f, next: f.base}
	if f.readers == nil {
		f.readers = map[*Reader]struct{}{}
	}
	f.readers[r] = struct{}{}
	return r, nil
}

// Share starts sharing the leader's answer as it streams: its status and
// header (as StoredHeader keeps them), and the bytes Append adds, at most
// limit of them held for readers that join (past it, see Append). The
// followers waiting wake and read it. The leader calls it once, before
// its first Append.
func (f *Flight) Share(status int, header http.Header, limit int64) {
	f.mu.Lock()
	f.status, f.header, f.limit = status, header, limit
	f.mu.Unlock()
	close(f.started)
}

// Append adds p, the leader's next bytes as its caller got them, to the
// shared stream, and wakes the readers. Past the bound no follower joins
// any more, and the bytes every reader has read are let go of; a reader
// more than the bound behind is cut (ErrLagged). p is copied.
func (f *Flight) Append(p []byte) {
	f.mu.Lock()
	f.buf = append(f.buf, p...)
	if !f.over && f.base+int64(len(f.buf)) > f.limit {
		f.over = true
	}
	var abandon func()
	if f.over {
		abandon = f.trim()
	}
	f.wakeReaders()
	f.mu.Unlock()
	if abandon != nil {
		abandon() // its last reader cut, after its leader left
	}
}

// trim lets go of the bytes every reader has read, and cuts the readers
// more than the bound behind; it returns what checkAbandoned does.
// Requires f.mu held.
func (f *Flight) trim() func() {
	end := f.base + int64(len(f.buf))
	low := end
	for r := range f.readers {
		if end-r.next > f.limit {
			r.lagged = true
			delete(f.readers, r)
			continue
		}
		low = min(low, r.next)
	}
	if low > f.base {
		f.buf = f.buf[low-f.base:]
		f.base = low
		if len(f.buf) == 0 {
			f.buf = nil
		}
	}
	return f.checkAbandoned()
}

// wakeReaders wakes the readers asleep in Next. Requires f.mu held.
func (f *Flight) wakeReaders() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// LeaderLeft tells the flight that its leader's client has left, and
// returns whether the call goes on for the stream's readers. When it
// does, abandon is called when the last reader leaves (so the call stops
// then); when it does not (no reader), abandon is called now and the
// flight takes no reader any more. Calls after the first do nothing more.
func (f *Flight) LeaderLeft(abandon func()) bool {
	f.mu.Lock()
	if !f.leaderGone {
		f.leaderGone, f.abandon = true, abandon
	}
	goOn := !f.closed && len(f.readers) > 0
	fn := f.checkAbandoned()
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
	return goOn
}

// checkAbandoned closes a flight whose leader and readers have all left
// and returns its abandon function, to call once f.mu is released.
// Requires f.mu held.
func (f *Flight) checkAbandoned() func() {
	if !f.leaderGone || f.closed || f.landed || len(f.readers) > 0 {
		return nil
	}
	f.closed = true
	return f.abandon
}

// Reader reads a flight's shared stream from its first byte, as the
// leader relays it. It belongs to one follower and is not safe for
// concurrent use (the flight is).
type Reader struct {
	f      *Flight
	next   int64 // offset of the next byte to read
	lagged bool  // cut: it fell behind by more than the bound (set under f.mu)
	closed bool
}

// Status and Header are the stream's status and header as the leader's
// caller got them (the header without the headers StoredHeader drops).
// Header must not be changed.
func (r *Reader) Status() int { return r.f.status }

// Header: see Status.
func (r *Reader) Header() http.Header { return r.f.header }

// Next returns the stream's next bytes, waiting for them until ctx is
// done. At the stream's end it returns io.EOF when the leader's stream
// ended as a whole, or the error it ended with (Land), or ErrLagged for a
// reader cut for falling behind. The bytes returned are shared: they must
// not be changed, and are valid until the reader is closed.
func (r *Reader) Next(ctx context.Context) ([]byte, error) {
	f := r.f
	for {
		f.mu.Lock()
		if r.lagged {
			f.mu.Unlock()
			return nil, ErrLagged
		}
		end := f.base + int64(len(f.buf))
		if r.next < end {
			p := f.buf[r.next-f.base:]
			r.next = end
			f.mu.Unlock()
			return p, nil
		}
		if f.landed {
			err := f.err
			f.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Entry is the flight's answer once landed (nil before, or when the
// leader had none to share): what its making cost.
func (r *Reader) Entry() *Entry {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.f.entry
}

// Close leaves the stream: when the leader's client has left and this
// was its last reader, the call stops (LeaderLeft).
func (r *Reader) Close() {
	if r.closed {
		return
	}
	r.closed = true
	f := r.f
	f.mu.Lock()
	delete(f.readers, r)
	fn := f.checkAbandoned()
	f.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// Bytes is the whole shared stream, when every byte of it is still held
// (the bound not passed); nil otherwise. For the leader, once its stream
// has ended, to store.
func (f *Flight) Bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.over || f.base != 0 {
		return nil
	}
	return f.buf
}
