package cache

import (
	"context"
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

// Flight is one call in flight, with its followers.
type Flight struct {
	fs    *Flights
	done  chan struct{}
	entry *Entry // the answer, once done; nil when the leader had none to share
}

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
	f = &Flight{fs: fs, done: make(chan struct{})}
	fs.m[k] = f
	return f, true
}

// Land ends the leader's flight of k with its answer e (nil: none to
// share, the followers call for themselves or join a new flight): the
// followers wake, and the next call of k leads a new flight.
func (fs *Flights) Land(k Key, f *Flight, e *Entry) {
	fs.mu.Lock()
	if fs.m[k] == f {
		delete(fs.m, k)
	}
	fs.mu.Unlock()
	f.entry = e
	close(f.done)
}

// InFlight is the number of flights under way.
func (fs *Flights) InFlight() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.m)
}

// Waiting is the number of followers waiting now.
func (fs *Flights) Waiting() int { return int(fs.waiting.Load()) }

// Wait waits for the flight's answer until ctx is done. It returns the
// answer, or nil when the leader had none to share or ctx ended first.
func (f *Flight) Wait(ctx context.Context) (*Entry, error) {
	f.fs.waiting.Add(1)
	defer f.fs.waiting.Add(-1)
	select {
	case <-f.done:
		return f.entry, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
