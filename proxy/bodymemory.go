package proxy

import (
	"errors"
	"io"
	"sync/atomic"
)

// bodyMemory counts the bytes held by request bodies in flight across all
// requests, against a limit given with each reservation (the routes' in
// force, so a reload changes it). A body reserves its declared
// Content-Length before it is read, or, sent chunked, grows its
// reservation in steps as it is read; when the total would go over the
// limit the request is refused instead of read. The zero value is ready
// to use. It is safe for concurrent use.
type bodyMemory struct {
	used atomic.Int64
}

// errBodyMemoryFull is returned by a reservation's reader when the body
// outgrows what is left of the budget.
var errBodyMemoryFull = errors.New("switchover: the gateway's memory for request bodies is full")

// chunkedStep is how much a chunked body's reservation grows at a time.
const chunkedStep = 64 << 10

// reserve takes n bytes of the budget if the total stays within limit,
// and reports whether it did.
func (m *bodyMemory) reserve(n, limit int64) bool {
	for {
		used := m.used.Load()
		if used+n > limit {
			return false
		}
		if m.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// inUse is the number of bytes reserved now.
func (m *bodyMemory) inUse() int64 { return m.used.Load() }

// reservation is one body's share of the budget. Not safe for concurrent
// use: it belongs to one request.
type reservation struct {
	m     *bodyMemory // nil: no limit, nothing counted
	limit int64
	held  int64
	rr    reservingReader // reader's, allocated with the reservation
}

// open reserves declared bytes (a Content-Length, or -1 for a body of
// unknown length, which reserves nothing yet) within limit, and reports
// whether it could. A limit of zero or less means none: nothing is
// counted and nothing refused.
func (m *bodyMemory) open(declared, limit int64) (*reservation, bool) {
	if limit <= 0 {
		return &reservation{}, true
	}
	r := &reservation{m: m, limit: limit}
	if declared > 0 {
		if !m.reserve(declared, limit) {
			return r, false
		}
		r.held = declared
	}
	return r, true
}

// reader returns src with the reservation grown as src is read past what
// is held; a read that cannot grow it fails with errBodyMemoryFull. It is
// called once per reservation.
func (r *reservation) reader(src io.Reader) io.Reader {
	if r.m == nil {
		return src
	}
	r.rr = reservingReader{r: r, src: src}
	return &r.rr
}

// grow adds n bytes to the reservation, if the total stays within its
// limit, and reports whether it did: the memory that decoding a body
// takes beyond the body (route.Request.DecodeMemory). A reservation
// without a limit always grows.
func (r *reservation) grow(n int64) bool {
	if r == nil || r.m == nil {
		return true
	}
	if !r.m.reserve(n, r.limit) {
		return false
	}
	r.held += n
	return true
}

// close gives the reservation back. Later calls do nothing.
func (r *reservation) close() {
	if r == nil {
		return
	}
	if r.m != nil && r.held > 0 {
		r.m.used.Add(-r.held)
	}
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
		if !rr.r.m.reserve(grow, rr.r.limit) {
			return n, errBodyMemoryFull
		}
		rr.r.held += grow
	}
	return n, err
}
