package console

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// sample is what the console keeps of one Status: the counters it turns
// into rates.
type sample struct {
	at time.Time
	// attempts and errors by member (pool and backend).
	attempts, errors map[memberID]uint64
	// firstByte by backend, cumulative.
	firstByte map[string][]Bucket
}

type memberID struct{ pool, backend string }

// sampler keeps the last samples of the gateway's status in a bounded
// ring, one per interval, and tells the event streams of each new one. It
// starts on first use and runs until its context ends or Close. It is safe
// for concurrent use.
type sampler struct {
	gw       Gateway
	interval time.Duration
	now      func() time.Time

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	readMu sync.Mutex // serializes reads of the status (read)

	mu   sync.Mutex
	ring []sample // len is the capacity; next is where the next goes
	next int
	n    int
	last Status
	view []byte // the last view, JSON, for the streams
	subs map[chan struct{}]bool
}

func newSampler(ctx context.Context, gw Gateway, interval time.Duration, size int, now func() time.Time) *sampler {
	s := &sampler{gw: gw, interval: interval, now: now, ring: make([]sample, size), subs: map[chan struct{}]bool{}}
	s.ctx, s.cancel = context.WithCancel(ctx)
	return s
}

// start begins sampling, once.
func (s *sampler) start() {
	s.once.Do(func() {
		s.take()
		go s.run()
	})
}

func (s *sampler) run() {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.take()
		}
	}
}

// close stops sampling and ends the streams.
func (s *sampler) close() { s.cancel() }

// done is closed once the sampler has stopped.
func (s *sampler) done() <-chan struct{} { return s.ctx.Done() }

// take reads the status, adds its sample and tells the streams.
func (s *sampler) take() { s.read(true) }

// refresh reads the status and tells the streams, without adding a
// sample: after an operator's action, so that the page it goes back to
// (and every open overview) shows the state the action left, not the last
// sample's from before it.
func (s *sampler) refresh() {
	s.start()
	s.read(false)
}

// read reads the status, adds its sample if add is set, and tells the
// streams. Reads are serialized, so that a slower read does not replace a
// newer status.
func (s *sampler) read(add bool) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	st := s.gw.Status()
	sm := sample{at: st.At, attempts: map[memberID]uint64{}, errors: map[memberID]uint64{}, firstByte: map[string][]Bucket{}}
	if sm.at.IsZero() {
		sm.at = s.now()
	}
	for _, p := range st.Pools {
		for _, m := range p.Members {
			id := memberID{p.Name, m.Backend}
			sm.attempts[id], sm.errors[id] = m.Attempts, m.Errors
			sm.firstByte[m.Backend] = m.FirstByte
		}
	}
	s.mu.Lock()
	if add {
		s.ring[s.next] = sm
		s.next = (s.next + 1) % len(s.ring)
		s.n = min(s.n+1, len(s.ring))
	}
	s.last = st
	v := s.buildView(st)
	s.view, _ = json.Marshal(v)
	subs := make([]chan struct{}, 0, len(s.subs))
	for c := range s.subs {
		subs = append(subs, c)
	}
	s.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- struct{}{}:
		default: // it has one pending already: it will read the latest view
		}
	}
}

// samples returns the samples, oldest first. Requires external locking.
func (s *sampler) samples() []sample {
	out := make([]sample, 0, s.n)
	for i := range s.n {
		out = append(out, s.ring[(s.next-s.n+i+len(s.ring))%len(s.ring)])
	}
	return out
}

// current returns the last status and its view, sampling now if nothing
// was sampled yet.
func (s *sampler) current() (Status, View) {
	s.start()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.buildView(s.last)
}

// viewJSON is the last view, JSON.
func (s *sampler) viewJSON() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view
}

// subscribe returns a channel told of every new sample (at most one
// pending) and a function that unsubscribes.
func (s *sampler) subscribe() (<-chan struct{}, func()) {
	s.start()
	c := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[c] = true
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.subs, c)
		s.mu.Unlock()
	}
}
