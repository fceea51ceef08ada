package route

import (
	"sync"

	"github.com/switchover-gw/switchover/translate"
)

// What decoding a request body whole may cost. The engine passes a body
// upstream as it came, reading only its model and stream (peek): that
// costs nothing beyond the body. Translating it to another provider's
// format (a chat call to an Anthropic or Gemini member, a Responses call
// to a chat-only one) decodes all of it, and what that allocates grows
// with the body's values more than with its bytes: a message of two
// bytes of text is a struct of a few hundred. ScanJSON counts the values
// without building them, so a gateway can charge a request for that
// memory before any of it is taken (see Request.DecodeMemory).
const (
	// decodeValueCost is what decoding and translating one JSON value
	// may allocate, at most, in bytes: measured on the costliest shapes
	// (see TestDecodeMemoryBoundsTranslation), with room to spare.
	decodeValueCost = 1536
	// decodeByteFactor is what it may allocate per byte of the body:
	// the decoded strings, the translated body and its buffers.
	decodeByteFactor = 12
)

// DecodeMemory is about the most memory, in bytes, that decoding r's
// body whole may allocate beyond the body itself: for a translation to
// another provider's format (the intermediate OpenAI chat body
// included), or to count its tokens. It is 0 for a body NewRequest did
// not scan (multipart, a call on a stored object).
func (r *Request) DecodeMemory() int64 {
	if r.values == 0 {
		return 0
	}
	return int64(len(r.Body))*decodeByteFactor + int64(r.values)*decodeValueCost
}

// Translates reports whether a member of p, or of a pool p may fall back
// to, would take r translated to another format than its own: whether
// calling p with r may cost r.DecodeMemory. It is safe for concurrent use.
func (p *Pool) Translates(r *Request) bool {
	if !r.Op.Translatable() || r.Path != "" {
		return false
	}
	key := translateKey{r.Op, r.format()}
	if v, ok := p.translated.get(key); ok {
		return v
	}
	var seen [2 * (MaxFallbackDepth + 1)]*Pool
	v := p.translates(r, seen[:0])
	p.translated.put(key, v)
	return v
}

// translateKey is what Translates' answer depends on besides the pools'
// members: the operation and the client's format.
type translateKey struct {
	op   Operation
	from translate.Format
}

// translateCache keeps Translates' answers, so that a call does not walk
// every member of its pool and fallbacks (a pool's members and fallbacks
// do not change once it is in use). It is safe for concurrent use.
type translateCache struct {
	mu sync.RWMutex
	m  map[translateKey]bool
}

func (c *translateCache) get(k translateKey) (v, ok bool) {
	c.mu.RLock()
	v, ok = c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *translateCache) put(k translateKey, v bool) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[translateKey]bool)
	}
	c.m[k] = v
	c.mu.Unlock()
}

func (p *Pool) translates(r *Request, seen []*Pool) bool {
	if p == nil || len(seen) == cap(seen) {
		return false
	}
	for _, q := range seen {
		if q == p {
			return false
		}
	}
	seen = append(seen, p)
	from := r.format()
	for _, m := range p.Members {
		prov := m.Backend.Provider
		if wireFormat(prov, r.Op) != from || !serves(prov, r.Op) {
			return true
		}
	}
	return p.Fallback.translates(r, seen) || p.ContextFallback.translates(r, seen)
}
