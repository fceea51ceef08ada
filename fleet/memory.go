package fleet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// Memory is a Store held in this process: for tests, and for replicas
// run in one process (a game day). Views of one Memory (View) are the
// replicas; each has its own subscriptions and can be closed alone. Time
// (TTLs, windows) is its Clock's.
type Memory struct {
	// Clock is read for expiry; nil means the wall clock.
	Clock clock.Clock

	mu     sync.Mutex
	kv     map[string]memEntry
	counts map[string]map[string]time.Time
	logs   map[string][][]byte
	subs   map[*memSub]bool
}

type memEntry struct {
	value   []byte
	expires time.Time // zero: never
}

type memSub struct {
	ch     chan []byte
	closed bool
}

// NewMemory returns an empty shared Memory.
func NewMemory() *Memory { return &Memory{} }

func (m *Memory) now() time.Time { return clock.Or(m.Clock).Now() }

// View returns a Store over m for one replica: closing it ends its own
// subscriptions only.
func (m *Memory) View() Store { return &memView{m: m} }

type memView struct {
	m      *Memory
	mu     sync.Mutex
	closed bool
	subs   []*memSub
}

var _ Store = (*memView)(nil)

func (v *memView) check(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	return ctx.Err()
}

func (v *memView) Publish(ctx context.Context, msg []byte) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.subs {
		select {
		case s.ch <- slices.Clone(msg):
		default:
			// A subscriber that does not keep up loses its subscription,
			// as a Redis client past its output buffer limit does.
			m.dropLocked(s)
		}
	}
	return nil
}

func (m *Memory) dropLocked(s *memSub) {
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	delete(m.subs, s)
}

func (v *memView) Subscribe(ctx context.Context) (<-chan []byte, error) {
	s := &memSub{ch: make(chan []byte, 1024)}
	m := v.m
	// Checked and registered under one hold of v.mu, so that a Close
	// cannot come between and miss the subscription.
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		v.mu.Unlock()
		return nil, err
	}
	m.mu.Lock()
	if m.subs == nil {
		m.subs = map[*memSub]bool{}
	}
	m.subs[s] = true
	m.mu.Unlock()
	v.subs = append(v.subs, s)
	v.mu.Unlock()
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.dropLocked(s)
		m.mu.Unlock()
	})
	return s.ch, nil
}

func (v *memView) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kv == nil {
		m.kv = map[string]memEntry{}
	}
	e := memEntry{value: slices.Clone(value)}
	if ttl > 0 {
		e.expires = m.now().Add(ttl)
	}
	m.kv[key] = e
	return nil
}

func (v *memView) Delete(ctx context.Context, key string) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	m := v.m
	m.mu.Lock()
	delete(m.kv, key)
	m.mu.Unlock()
	return nil
}

// liveLocked returns key's value if it has not expired.
func (m *Memory) liveLocked(key string, now time.Time) ([]byte, bool) {
	e, ok := m.kv[key]
	if !ok {
		return nil, false
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		delete(m.kv, key)
		return nil, false
	}
	return e.value, true
}

func (v *memView) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if err := v.check(ctx); err != nil {
		return nil, err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := map[string][]byte{}
	for k := range m.kv {
		if strings.HasPrefix(k, prefix) {
			if val, ok := m.liveLocked(k, now); ok {
				out[k] = slices.Clone(val)
			}
		}
	}
	return out, nil
}

func (v *memView) Count(ctx context.Context, key, id string, now time.Time, window time.Duration) (int, error) {
	if err := v.check(ctx); err != nil {
		return 0, err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]map[string]time.Time{}
	}
	c := m.counts[key]
	if c == nil {
		c = map[string]time.Time{}
		m.counts[key] = c
	}
	if _, ok := c[id]; !ok {
		c[id] = now
	}
	n := 0
	for k, at := range c {
		switch {
		case !at.After(now.Add(-window)):
			delete(c, k)
		case !at.After(now):
			n++
		}
	}
	return n, nil
}

func (v *memView) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (bool, error) {
	if err := v.check(ctx); err != nil {
		return false, err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if cur, ok := m.liveLocked(key, now); ok && string(cur) != holder {
		return false, nil
	}
	if m.kv == nil {
		m.kv = map[string]memEntry{}
	}
	m.kv[key] = memEntry{value: []byte(holder), expires: now.Add(ttl)}
	return true, nil
}

func (v *memView) Release(ctx context.Context, key, holder string) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.liveLocked(key, m.now()); ok && string(cur) == holder {
		delete(m.kv, key)
	}
	return nil
}

func (v *memView) Append(ctx context.Context, key string, entry []byte, max int) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		m.logs = map[string][][]byte{}
	}
	l := append(m.logs[key], slices.Clone(entry))
	if max > 0 && len(l) > max {
		l = slices.Clone(l[len(l)-max:])
	}
	m.logs[key] = l
	return nil
}

func (v *memView) Tail(ctx context.Context, key string, n int) ([][]byte, error) {
	if err := v.check(ctx); err != nil {
		return nil, err
	}
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[key]
	if n > 0 && len(l) > n {
		l = l[len(l)-n:]
	}
	out := make([][]byte, len(l))
	for i, e := range l {
		out[i] = slices.Clone(e)
	}
	return out, nil
}

func (v *memView) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	subs := v.subs
	v.subs = nil
	v.mu.Unlock()
	m := v.m
	m.mu.Lock()
	for _, s := range subs {
		m.dropLocked(s)
	}
	m.mu.Unlock()
	return nil
}
