package cache

import (
	"time"

	"github.com/maypok86/otter/v2"
)

// DefaultMaxMemory is the in-process store's bound when none is set.
const DefaultMaxMemory = 64 << 20

// Memory is the in-process Store: entries in an otter cache bounded by
// their total Size, evicted by frequency and recency past the bound and
// dropped once their TTL has passed. It is safe for concurrent use.
type Memory struct {
	c       *otter.Cache[Key, *Entry]
	onEvict func(cause string, e *Entry)
}

var _ Store = (*Memory)(nil)

// MemoryOptions are a Memory's settings; the zero value works.
type MemoryOptions struct {
	// MaxBytes bounds the entries' total Size. Zero means
	// DefaultMaxMemory.
	MaxBytes int64
	// OnEvict, if set, hears each entry that leaves the store other than
	// by Purge or replacement: cause "size" (the memory bound) or
	// "expired". It runs on a goroutine of its own, never under the
	// store's locks. Nil means none.
	OnEvict func(cause string, e *Entry)
}

// NewMemory returns an empty in-process store.
func NewMemory(o MemoryOptions) *Memory {
	max := o.MaxBytes
	if max <= 0 {
		max = DefaultMaxMemory
	}
	m := &Memory{onEvict: o.OnEvict}
	m.c = otter.Must(&otter.Options[Key, *Entry]{
		MaximumWeight: uint64(max),
		Weigher: func(_ Key, e *Entry) uint32 {
			return uint32(min(e.Size(), 1<<31))
		},
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[Key, *Entry]) time.Duration {
			return e.Value.TTL
		}),
		OnDeletion: m.deleted,
	})
	return m
}

func (m *Memory) deleted(ev otter.DeletionEvent[Key, *Entry]) {
	if m.onEvict == nil {
		return
	}
	switch ev.Cause {
	case otter.CauseOverflow:
		m.onEvict("size", ev.Value)
	case otter.CauseExpiration:
		m.onEvict("expired", ev.Value)
	}
}

// Get implements Store.
func (m *Memory) Get(k Key, now time.Time) (*Entry, bool) {
	e, ok := m.c.GetIfPresent(k)
	if !ok || !e.Fresh(now) {
		return nil, false
	}
	return e, true
}

// Set implements Store.
func (m *Memory) Set(k Key, e *Entry) { m.c.Set(k, e) }

// Purge implements Store: a scan of every entry, for an operator's call.
func (m *Memory) Purge(f Filter) int {
	var keys []Key
	for k, e := range m.c.All() {
		if f.Match(e) {
			keys = append(keys, k)
		}
	}
	n := 0
	for _, k := range keys {
		if _, ok := m.c.Invalidate(k); ok {
			n++
		}
	}
	return n
}

// Bytes is the entries' total Size now.
func (m *Memory) Bytes() int64 { return int64(m.c.WeightedSize()) }

// Len is the number of entries now (expired ones not yet dropped
// included).
func (m *Memory) Len() int { return m.c.EstimatedSize() }

// Close stops the store's background work; it must not be used after.
func (m *Memory) Close() { m.c.StopAllGoroutines() }
