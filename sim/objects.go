package sim

import (
	"container/list"
	"sync"
)

// Bounds of each deployment's stored objects. When a store is full the
// oldest object is forgotten, as if it had expired.
const (
	// MaxStoredResponses is how many responses (store: true) a deployment
	// keeps, newest first.
	MaxStoredResponses = 10000
	// MaxStoredFiles is how many files (uploads and batch outputs) a
	// deployment keeps.
	MaxStoredFiles = 1000
	// MaxStoredFileBytes is the total size of the files a deployment keeps.
	MaxStoredFileBytes = 64 << 20
	// MaxStoredBatches is how many batches (and, for anthropic, message
	// batches) a deployment keeps.
	MaxStoredBatches = 1000
)

// objects are one deployment's stored objects.
type objects struct {
	responses  *store[*storedResponse]
	files      *store[*storedFile]
	batches    *store[*storedBatch]
	msgBatches *store[*storedMessageBatch]
	chats      *store[*storedChat]

	conversations *store[*storedConversation]
}

func newObjects() *objects {
	return &objects{
		responses:  newStore[*storedResponse](MaxStoredResponses, 0),
		files:      newStore[*storedFile](MaxStoredFiles, MaxStoredFileBytes),
		batches:    newStore[*storedBatch](MaxStoredBatches, 0),
		msgBatches: newStore[*storedMessageBatch](MaxStoredBatches, 0),
		chats:      newStore[*storedChat](MaxStoredChats, 0),

		conversations: newStore[*storedConversation](MaxStoredConversations, 0),
	}
}

// store keeps objects by id, bounded in count and (when maxBytes > 0) in
// total size, forgetting the oldest first. It is safe for concurrent use;
// the values are shared, so callers that change one must hold the store's
// lock (see update).
type store[T any] struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64
	byID     map[string]*list.Element
	order    *list.List // of *storeEntry[T], oldest at the front
}

type storeEntry[T any] struct {
	id   string
	v    T
	size int64
}

func newStore[T any](max int, maxBytes int64) *store[T] {
	return &store[T]{max: max, maxBytes: maxBytes, byID: map[string]*list.Element{}, order: list.New()}
}

// put stores v under id with size bytes, forgetting the oldest objects
// until the bounds hold. It reports false, storing nothing, when size
// alone is above the byte bound.
func (s *store[T]) put(id string, v T, size int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxBytes > 0 && size > s.maxBytes {
		return false
	}
	if el, ok := s.byID[id]; ok {
		s.removeLocked(el)
	}
	s.byID[id] = s.order.PushBack(&storeEntry[T]{id: id, v: v, size: size})
	s.bytes += size
	for s.order.Len() > s.max || (s.maxBytes > 0 && s.bytes > s.maxBytes) {
		s.removeLocked(s.order.Front())
	}
	return true
}

// removeLocked forgets el. Requires s.mu held.
func (s *store[T]) removeLocked(el *list.Element) {
	e := el.Value.(*storeEntry[T])
	s.order.Remove(el)
	delete(s.byID, e.id)
	s.bytes -= e.size
}

// get returns the object stored under id.
func (s *store[T]) get(id string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		var zero T
		return zero, false
	}
	return el.Value.(*storeEntry[T]).v, true
}

// update calls fn with the object stored under id while holding the lock,
// and reports whether there was one.
func (s *store[T]) update(id string, fn func(T)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if ok {
		fn(el.Value.(*storeEntry[T]).v)
	}
	return ok
}

// remove forgets the object stored under id and reports whether there was
// one.
func (s *store[T]) remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if ok {
		s.removeLocked(el)
	}
	return ok
}

// page lists up to limit objects newest first (oldest first when asc),
// starting after the object with id after ("" for the start), and reports
// whether more follow. fn, called under the lock, renders each.
func page[T, R any](s *store[T], after string, limit int, asc bool, fn func(T) R) (out []R, more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := func(el *list.Element) *list.Element {
		if asc {
			return el.Next()
		}
		return el.Prev()
	}
	var el *list.Element
	switch {
	case after != "":
		a, ok := s.byID[after]
		if !ok {
			return nil, false
		}
		el = next(a)
	case asc:
		el = s.order.Front()
	default:
		el = s.order.Back()
	}
	for ; el != nil; el = next(el) {
		if len(out) == limit {
			return out, true
		}
		out = append(out, fn(el.Value.(*storeEntry[T]).v))
	}
	return out, false
}

// len is the number of objects stored.
func (s *store[T]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}
