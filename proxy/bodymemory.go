package proxy

import (
	"errors"
	"io"
	"sync/atomic"
)

// bodyMemory bounds the bytes held by request bodies in flight across all
// requests. A body reserves its declared Content-Length before it is read,
// or, sent chunked, grows its reservation in steps as it is read; when the
// total would go over the limit the request is refused instead of read.
// A nil *bodyMemory never refuses. It is safe for concurrent use.
type bodyMemory struct {
	limit int64
	used  atomic.Int64
}

// errBodyMemoryFull is returned by a reservation's reader when the body
// outgrows what is left of the budget.
var errBodyMemoryFull = errors.New("switchover: the gateway's memory for request bodies is full")

// chunkedStep is how much a chunked body's reservation grows at a time.
const chunkedStep = 64 << 10

func newBodyMemory(limit int64) *bodyMemory {
	if limit <= 0 {
		return nil
	}
	return &bodyMemory{limit: limit}
}

// reserve takes n bytes of the budget and reports whether it could.
func (m *bodyMemory) reserve(n int64) bool {
	if m == nil || n <= 0 {
		return true
	}
	for {
		used := m.used.Load()
		if used+n > m.limit {
			return false
		}
		if m.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

func (m *bodyMemory) release(n int64) {
	if m != nil && n > 0 {
		m.used.Add(-n)
	}
}

// InUse is the number of bytes reserved now.
func (m *bodyMemory) inUse() int64 {
	if m == nil {
		return 0
	}
	return m.used.Load()
}

// reservation is one body's share of the budget. Not safe for concurrent
// use: it belongs to one request.
type reservation struct {
	m    *bodyMemory
	held int64
}

// open reserves declared bytes (a Content-Length, or -1 for a body of
// unknown length, which reserves nothing yet) and reports whether it could.
func (m *bodyMemory) open(declared int64) (*reservation, bool) {
	r := &reservation{m: m}
	if declared > 0 {
		if !m.reserve(declared) {
			return r, false
		}
		r.held = declared
	}
	return r, true
}

// reader returns src with the reservation grown as src is read past what
// is held; a read that cannot grow it fails with errBodyMemoryFull.
func (r *reservation) reader(src io.Reader) io.Reader {
	if r.m == nil {
		return src
	}
	return &reservingReader{r: r, src: src}
}

// close gives the reservation back. Later calls do nothing.
func (r *reservation) close() {
	r.m.release(r.held)
	r.held = 0
}

type reservingReader struct {
	r    *reservation
	src  io.Reader
	read int64
}

func (rr *reservingReader) Read(p []byte) (int, error) {
	n, err := rr.src.Read(p)
	rr.read += int64(n)
	if over := rr.read - rr.r.held; over > 0 {
		grow := (over + chunkedStep - 1) / chunkedStep * chunkedStep
		if !rr.r.m.reserve(grow) {
			return n, errBodyMemoryFull
		}
		rr.r.held += grow
	}
	return n, err
}
