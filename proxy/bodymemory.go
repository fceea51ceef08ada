package proxy

import (
	"errors"
	"io"
	"sync/atomic"
)

// bodyMemory counts the bytes held by request bodies in flight across all
// requests, against a limit given with each reservation (the routes' in
// force, so a reload changes it), and each key's bodies against its share
// of it. A body reserves its declared Content-Length before it is read,
// or, sent chunked, grows its reservation in steps as it is read; when
// the total (or its key's) would go over its limit the request is refused
// instead of read. The zero value is ready to use. It is safe for
// concurrent use.
type bodyMemory struct {
	used atomic.Int64
}

// errBodyMemoryFull is returned by a reservation's reader when the body
// outgrows what is left of the budget.
var errBodyMemoryFull = errors.New("switchover: the gateway's memory for request bodies is full")

// chunkedStep is how much a chunked body's reservation grows at a time.
const chunkedStep = 64 << 10

// errKeyBodyMemoryFull is returned by a reservation's reader when the
// body outgrows what is left of its key's share of the budget.
var errKeyBodyMemoryFull = errors.New("switchover: the key's share of the memory for request bodies is full")

// reserveIn adds n to *used if the total stays within limit, and reports
// whether it did.
func reserveIn(used *atomic.Int64, n, limit int64) bool {
	for {
		u := used.Load()
		if u+n > limit {
			return false
		}
		if used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// inUse is the number of bytes reserved now.
func (m *bodyMemory) inUse() int64 { return m.used.Load() }

// reservation is one body's share of the budget, and of its key's share
// of it. The zero value holds nothing. Not safe for concurrent use: it
// belongs to one request.
type reservation struct {
	m        *bodyMemory // nil: no limit, nothing counted
	limit    int64       // m's; zero or less: none
	key      *atomic.Int64
	keyLimit int64 // key's; zero or less (or a nil key): none
	held     int64
	shared   int64           // of held, in the budget alone (growShared)
	rr       reservingReader // reader's, kept with the reservation
}

// open makes r a reservation in m within limit, and in key (the bytes
// its key's bodies hold, nil for none) within keyLimit (a limit of zero
// or less is none), and reserves declared bytes (a Content-Length, or -1
// for a body of unknown length, which reserves nothing yet). It returns
// errKeyBodyMemoryFull or errBodyMemoryFull when there is no room; then
// r holds nothing.
func (m *bodyMemory) open(r *reservation, declared, limit int64, key *atomic.Int64, keyLimit int64) error {
	*r = reservation{}
	if keyLimit > 0 && key != nil {
		r.key, r.keyLimit = key, keyLimit
	}
	if limit > 0 {
		r.limit = limit
	}
	if r.key == nil && r.limit == 0 {
		return nil
	}
	r.m = m
	if declared > 0 {
		return r.grow(declared)
	}
	return nil
}

// grow reserves n more bytes, in the key's share first.
func (r *reservation) grow(n int64) error {
	if r.key != nil && !reserveIn(r.key, n, r.keyLimit) {
		return errKeyBodyMemoryFull
	}
	if r.limit > 0 && !reserveIn(&r.m.used, n, r.limit) {
		if r.key != nil {
			r.key.Add(-n)
		}
		return errBodyMemoryFull
	}
	r.held += n
	return nil
}

// reader returns src with the reservation grown as src is read past what
// is held; a read that cannot grow it fails with errKeyBodyMemoryFull or
// errBodyMemoryFull. It is called once per reservation.
func (r *reservation) reader(src io.Reader) io.Reader {
	if r.m == nil {
		return src
	}
	r.rr = reservingReader{r: r, src: src}
	return &r.rr
}

// growShared adds n bytes to the reservation in the gateway's budget
// alone, if the total stays within its limit, and reports whether it
// did: the memory that decoding a body takes beyond the body
// (route.Request.DecodeMemory). It is not counted in the key's share: a
// key's share bounds what its callers make the gateway hold, and a
// decoding that could never fit a share would be refused for good with a
// 429 that says to retry. A reservation without a limit always grows.
func (r *reservation) growShared(n int64) bool {
	if r == nil || r.m == nil || r.limit <= 0 {
		return true
	}
	if !reserveIn(&r.m.used, n, r.limit) {
		return false
	}
	r.held += n
	r.shared += n
	return true
}

// close gives the reservation back. Later calls do nothing.
func (r *reservation) close() {
	if r.m != nil && r.held > 0 {
		if r.limit > 0 {
			r.m.used.Add(-r.held)
		}
		if r.key != nil {
			r.key.Add(-(r.held - r.shared))
		}
	}
	r.held, r.shared = 0, 0
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
		if gerr := rr.r.grow(grow); gerr != nil {
			return n, gerr
		}
	}
	return n, err
}
