package proxy

import "net/http"

// BodyRoutes are the request log's body settings in a configuration
// (request_log: on pools and keys): which calls keep their bodies, and
// how much of each. Nil in Routes means no call keeps any.
type BodyRoutes struct {
	// Pools by pool name, Keys by key name (a configuration key's); a
	// key's fields, where set, win over its pool's.
	Pools map[string]BodyPolicy
	Keys  map[string]BodyPolicy
}

// BodyPolicy is one pool's or key's request_log: whether its calls keep
// their bodies (nil: not said, the pool's for a key) and the most bytes
// kept of each (0: not said; DefaultMaxBodyBytes in the end).
type BodyPolicy struct {
	Bodies   *bool
	MaxBytes int64
}

// DefaultMaxBodyBytes is the most kept of a body when neither the key
// nor the pool says (config.DefaultMaxBodyBytes).
const DefaultMaxBodyBytes = 16 << 10

// Bodies are the bodies captured of one call, for the request log
// (Spend.Bodies): the first MaxBytes of the request's body, as the
// caller sent it, and of the answer's, as the caller got it (a stream's
// events as they went out). Headers are never captured. The store
// redacts their secrets (ledger.RedactBody) before it writes them.
type Bodies struct {
	Request, Response []byte
	// RequestSize and ResponseSize are the bodies' whole sizes; -1 when
	// unknown.
	RequestSize, ResponseSize int64
	// RequestTruncated and ResponseTruncated mark a body cut at the
	// bound.
	RequestTruncated, ResponseTruncated bool
	// Note says why a body was not kept ("" when both were).
	Note string
}

// bodyCapture is a call's capture of its bodies, on its log line; nil
// when its pool and key keep none. It belongs to its request.
type bodyCapture struct {
	b     Bodies
	limit int
	off   bool // the response is not captured (see Note)
}

// startCapture starts the capture of x's call, if its key or pool keeps
// bodies: a copy of the first bytes of the request's body. A key's
// settings, where set, win over its pool's: a configuration key's from
// Routes.Bodies, a stored key's from its principal (RequestLog). It
// costs two nil checks when no pool or key keeps any.
//
//go:noinline
func (x *exchange) startCapture() {
	br, who := x.rt.Bodies, x.lg.who
	stored := who != nil && who.Source == "store"
	if x.pool == nil || (br == nil && (!stored || who.RequestLog == nil)) {
		return
	}
	var pol BodyPolicy
	if br != nil {
		pol = br.Pools[x.pool.Name]
	}
	switch {
	case stored:
		if l := who.RequestLog; l != nil {
			if l.Bodies != nil {
				pol.Bodies = l.Bodies
			}
			if l.MaxBodyBytes > 0 {
				pol.MaxBytes = l.MaxBodyBytes
			}
		}
	case x.lg.key != "":
		if k, ok := br.Keys[x.lg.key]; ok {
			if k.Bodies != nil {
				pol.Bodies = k.Bodies
			}
			if k.MaxBytes > 0 {
				pol.MaxBytes = k.MaxBytes
			}
		}
	}
	if pol.Bodies == nil || !*pol.Bodies {
		return
	}
	limit := int(pol.MaxBytes)
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	c := &bodyCapture{limit: limit}
	n := min(len(x.body), limit)
	c.b.Request = append(make([]byte, 0, n), x.body[:n]...)
	c.b.RequestSize, c.b.RequestTruncated = int64(len(x.body)), len(x.body) > limit
	c.b.ResponseSize = -1
	x.lg.bodies = c
}

// answer prepares the capture of the answer whose header is h and
// declared length n (-1 unknown): a compressed one is not kept.
func (c *bodyCapture) answer(h http.Header, n int64) {
	if enc := h.Get("Content-Encoding"); enc != "" && enc != "identity" {
		c.off = true
		c.b.Note = "the response is compressed (" + truncate(enc, 32) + "): not kept"
		return
	}
	if n > 0 {
		c.b.Response = make([]byte, 0, min(n, int64(c.limit)))
	}
}

// response keeps what p adds to the answer, up to the bound. Called
// after p went out to the client. Not inlined: it would grow the frame of
// copyBody, under which every stream waits (relay.go).
//
//go:noinline
func (c *bodyCapture) response(p []byte) {
	if c.off {
		return
	}
	room := c.limit - len(c.b.Response)
	if len(p) > room {
		p = p[:room]
		c.b.ResponseTruncated = true
	}
	c.b.Response = append(c.b.Response, p...)
}

// done returns the bodies captured, the answer's whole size being n
// bytes (-1: there was no answer).
func (c *bodyCapture) done(n int64) *Bodies {
	b := c.b
	b.ResponseSize = n
	if n > int64(len(b.Response)) && !c.off {
		b.ResponseTruncated = true
	}
	if n < 0 && b.Note == "" {
		b.Note = "no backend answered"
	}
	if b.Response == nil {
		b.Response = []byte{}
	}
	return &b
}
