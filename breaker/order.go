package breaker

import "sync"

// Order keeps, per breaker name, the Seq of the last transition applied,
// so that an observer that keeps state can tell a transition that arrives
// late (transitions are delivered outside the breaker's lock). It is safe
// for concurrent use; the zero value is ready.
type Order struct {
	mu   sync.Mutex
	last map[string]uint64
}

// Fresh reports whether t is newer than the last transition applied for
// its breaker, and if so records it. A Seq of 0 (not numbered) is always
// fresh.
func (o *Order) Fresh(t Transition) bool {
	if t.Seq == 0 {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.Seq <= o.last[t.Name] {
		return false
	}
	if o.last == nil {
		o.last = map[string]uint64{}
	}
	o.last[t.Name] = t.Seq
	return true
}

// Forget drops what is known of name, whose next breaker numbers its
// transitions afresh.
func (o *Order) Forget(name string) {
	o.mu.Lock()
	delete(o.last, name)
	o.mu.Unlock()
}
