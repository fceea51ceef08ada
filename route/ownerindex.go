package route

import (
	"context"
	"encoding/json"
	"sync"
)

// Files, uploads, containers and Anthropic's message batches have no
// metadata to carry an owner mark, so the gateway keeps one aside: an
// OwnerIndex records, as the gateway answers the call that made such an
// object, the owner mark of its tenant (markOf, never the key) by backend
// and the provider's id, and a list answer keeps the entries whose
// recorded mark is the caller's.

// OwnerIndex keeps the owner marks of stored objects that have no
// metadata. Implementations must be safe for concurrent use. An error
// never shows an object to another tenant: a list then keeps only the
// entries marked in their metadata, as without an index.
type OwnerIndex interface {
	// Record notes that the object id (the provider's) on backend
	// belongs to the tenant of mark.
	Record(ctx context.Context, backend, id, mark string) error
	// Marks returns the marks recorded for those of ids (the provider's)
	// on backend that the index holds.
	Marks(ctx context.Context, backend string, ids []string) (map[string]string, error)
	// Forget drops the object id on backend, deleted through the gateway.
	Forget(ctx context.Context, backend, id string) error
}

// MemoryIndex is an OwnerIndex held in this process: it knows only the
// objects made through this process since it started, and holds at most
// its bound of them, forgetting the oldest first. It is safe for
// concurrent use.
type MemoryIndex struct {
	max   int
	mu    sync.Mutex
	seq   uint64
	marks map[indexKey]indexed
	order []recorded // in the order recorded; may hold stale entries
}

type indexKey struct{ backend, id string }

// indexed is a mark and the sequence number of its recording.
type indexed struct {
	mark string
	seq  uint64
}

// recorded is an entry of MemoryIndex.order: stale unless marks holds
// the key with the same seq.
type recorded struct {
	key indexKey
	seq uint64
}

// DefaultMemoryIndexSize is the bound of NewMemoryIndex(0): objects.
const DefaultMemoryIndexSize = 100_000

var _ OwnerIndex = (*MemoryIndex)(nil)

// NewMemoryIndex returns an empty MemoryIndex of at most max objects;
// zero or less means DefaultMemoryIndexSize.
func NewMemoryIndex(max int) *MemoryIndex {
	if max <= 0 {
		max = DefaultMemoryIndexSize
	}
	return &MemoryIndex{max: max, marks: map[indexKey]indexed{}}
}

// Record implements OwnerIndex.
func (m *MemoryIndex) Record(_ context.Context, backend, id, mark string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := indexKey{backend, id}
	m.seq++
	m.marks[k] = indexed{mark, m.seq}
	m.order = append(m.order, recorded{k, m.seq})
	for len(m.marks) > m.max && len(m.order) > 0 {
		if m.live(m.order[0]) {
			delete(m.marks, m.order[0].key)
		}
		m.order = m.order[1:]
	}
	if len(m.order) > 2*m.max { // stale entries pile up: compact
		kept := make([]recorded, 0, len(m.marks))
		for _, r := range m.order {
			if m.live(r) {
				kept = append(kept, r)
			}
		}
		m.order = kept
	}
	return nil
}

// live reports whether r is the recording in force of its key. Requires
// m.mu held.
func (m *MemoryIndex) live(r recorded) bool {
	v, ok := m.marks[r.key]
	return ok && v.seq == r.seq
}

// Marks implements OwnerIndex.
func (m *MemoryIndex) Marks(_ context.Context, backend string, ids []string) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for _, id := range ids {
		if v, ok := m.marks[indexKey{backend, id}]; ok {
			out[id] = v.mark
		}
	}
	return out, nil
}

// Forget implements OwnerIndex.
func (m *MemoryIndex) Forget(_ context.Context, backend, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.marks, indexKey{backend, id})
	return nil
}

// record notes in the Tagger's index the objects a successful answer
// made (the Tagger's Made): the answer's id, and the id of the file an
// upload's completion made.
func (t *Tagger) record(ctx context.Context, body []byte, backend string) {
	var o struct {
		ID   string `json:"id"`
		File *struct {
			ID string `json:"id"`
		} `json:"file"`
	}
	if json.Unmarshal(body, &o) != nil {
		return
	}
	ids := []string{o.ID}
	if o.File != nil {
		ids = append(ids, o.File.ID)
	}
	mark := markOf(t.signer().keys[0], t.Tenant)
	for _, id := range ids {
		if isStateful(id) {
			// A failure leaves the object out of its owner's lists,
			// never in another's: nothing to undo.
			_ = t.Index.Record(ctx, backend, id, mark)
		}
	}
}

// indexMarks returns the marks the index holds for the ids of a list's
// entries; nil without an index or on its failure.
func (t *Tagger) indexMarks(ctx context.Context, backend string, data []json.RawMessage) map[string]string {
	if t.Index == nil || backend == "" {
		return nil
	}
	ids := make([]string, 0, len(data))
	for _, e := range data {
		var v struct{ ID string }
		if json.Unmarshal(e, &v) == nil && v.ID != "" {
			ids = append(ids, v.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	marks, err := t.Index.Marks(ctx, backend, ids)
	if err != nil {
		return nil
	}
	return marks
}
