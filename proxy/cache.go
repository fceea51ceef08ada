package proxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/internal/cachepolicy"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// The response cache and request coalescing (see docs/cache.md): the
// stage cacheLookup stands in the pipeline before relay. It answers a hit
// or a coalesced call itself, and calls relay as a flight's leader to
// store the answer; for everything else it returns nil and relay, the
// next stage, runs from the pipeline as it does on a pool without a
// cache: no frame of the cache's under a waiting stream (see relay.go's
// stack note and TestStreamStackStaysSmall).

// HeaderCache is the request header that steers the cache for one call
// ("bypass": neither read nor stored, nor coalesced; "refresh": called
// afresh and stored), and the answer's header that says where it came
// from: "hit" (the cache), "coalesced" (an identical call in flight),
// "miss" (a backend, now stored when it could be), "bypass".
const HeaderCache = "X-Switchover-Cache"

// CachePolicy is how a pool's or a key's calls are cached, its defaults
// filled in (internal/cachepolicy, which reads and checks what the
// configuration file and the admin API write); the zero value stores
// nothing and coalesces nothing.
type CachePolicy = cachepolicy.Effective

// CacheObserver hears what the cache did, for metrics. Its methods must
// be safe for concurrent use.
type CacheObserver interface {
	// CacheResult counts a cacheable call by pool and result (hit, miss,
	// coalesced, bypass); bytes is the size of a replayed answer.
	CacheResult(pool, result string, bytes int)
	// CacheStored counts an answer stored, of bytes.
	CacheStored(pool string, bytes int)
	// CacheEvicted counts an entry of pool evicted for cause: "size"
	// (the memory bound) or "expired".
	CacheEvicted(pool, cause string)
}

// ResponseCache is the cache's state that outlives a configuration: the
// store and the flights in progress. Safe for concurrent use.
type ResponseCache struct {
	// Store keeps answers. Nil means none: only coalescing works.
	Store cache.Store
	// Observer hears hits, misses and stores. Nil means none.
	Observer CacheObserver
	// Clock stamps and ages entries. Nil means the wall clock.
	Clock   clock.Clock
	flights cache.Flights
}

// CacheRoutes are the cache's settings in a configuration: the policies
// of pools (by pool name) and of keys (by key ID, winning over their
// pools'), on the long-lived ResponseCache.
type CacheRoutes struct {
	*ResponseCache
	Pools map[string]*CachePolicy
	Keys  map[string]*CachePolicy
}

// Flights is the number of coalesced flights under way, and Waiting
// the number of calls waiting on them.
func (rc *ResponseCache) Flights() int { return rc.flights.InFlight() }

// Waiting is the number of calls waiting on a flight now.
func (rc *ResponseCache) Waiting() int { return rc.flights.Waiting() }

func (rc *ResponseCache) now() time.Time { return clock.Or(rc.Clock).Now() }

func (rc *ResponseCache) result(pool, result string, n int) {
	if rc.Observer != nil {
		rc.Observer.CacheResult(pool, result, n)
	}
}

// cachePolicy is the cache policy of x's call (cachepolicy.Pick): its
// key's own, whole, when it has one (a stored key's, on its Principal,
// else a configuration key's, in Routes.Cache.Keys), else its pool's;
// nil when that neither caches nor coalesces.
func (x *exchange) cachePolicy() *CachePolicy {
	cr := x.rt.Cache
	if cr == nil || cr.ResponseCache == nil || x.pool == nil || x.req == nil {
		return nil
	}
	var own *CachePolicy
	switch {
	case x.lg.who != nil && (x.lg.who.Cache != nil || x.lg.who.Source == "store"):
		own = x.lg.who.Cache // a stored key's is only on its Principal
	case x.lg.key != "":
		own = cr.Keys[x.lg.key]
	}
	return cachepolicy.Pick(own, cr.Pools[x.pool.Name])
}

// cacheMode is what the caller's headers ask of the cache.
type cacheMode int

const (
	cacheUse     cacheMode = iota // read, coalesce, store
	cacheRefresh                  // call afresh, store
	cacheBypass                   // none of it
)

// readCacheMode reads the request's Cache-Control and x-switchover-cache
// headers; an unknown x-switchover-cache value gets 400.
func readCacheMode(h http.Header) (cacheMode, error) {
	mode := cacheUse
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(d)) {
			case "no-store":
				mode = cacheBypass
			case "no-cache":
				mode = max(mode, cacheRefresh)
			}
		}
	}
	switch v := strings.ToLower(strings.TrimSpace(h.Get(HeaderCache))); v {
	case "":
	case "bypass":
		mode = cacheBypass
	case "refresh":
		mode = max(mode, cacheRefresh)
	default:
		return 0, requestError(http.StatusBadRequest, "invalid_cache_header",
			"switchover: "+HeaderCache+" must be bypass or refresh, not "+strconv.Quote(truncate(v, 40)))
	}
	return mode, nil
}

// cacheScope is whose entries x's call reads and makes: its key's team,
// else its key, else (no keys, or a shared pool) everyone's.
func (x *exchange) cacheScope(pol *CachePolicy) string {
	switch {
	case pol.Shared:
		return ""
	case x.lg.who != nil && x.lg.who.Team != "":
		return "t:" + x.lg.who.Team
	case x.lg.key != "":
		return "k:" + x.lg.key
	}
	return ""
}

// cacheLookup is the stage that answers a cacheable call from the cache,
// or from an identical call in flight, or else relays it (relay) and
// stores its answer; having answered, it stops the pipeline
// (errAnswered). A call its pool and key do not cache, or that is not
// cacheable (cache.KeyOf), or bypasses the cache, goes on to relay
// untouched.
func cacheLookup(x *exchange) error {
	pol := x.cachePolicy()
	if pol == nil {
		return nil // relay, the next stage, calls the pool
	}
	mode, err := readCacheMode(x.r.Header)
	if err != nil {
		return err
	}
	rc := x.rt.Cache.ResponseCache
	k, err := cache.KeyOf(cache.Call{Op: string(x.req.Op), Format: string(x.format), Pool: x.pool.Name,
		Path: x.r.URL.Path, Query: x.r.URL.RawQuery, Stream: x.req.Stream, Scope: x.cacheScope(pol),
		Body: x.body, Header: x.r.Header})
	if err != nil || x.req.Owner != "" {
		return nil // not cacheable: no header, no count; relay calls the pool
	}
	if mode == cacheBypass {
		x.w.Header().Set(HeaderCache, "bypass")
		x.lg.cache = "bypass"
		rc.result(x.pool.Name, "bypass", 0)
		return nil
	}
	store := pol.TTL > 0 && rc.Store != nil
	if mode == cacheUse && store {
		if e, ok := rc.Store.Get(k, rc.now()); ok {
			return answered(x.replay(rc, e, "hit"))
		}
	}
	if mode == cacheUse && pol.Coalesce {
		f, e, rd := x.follow(rc, pol, k, store)
		switch {
		case rd != nil:
			return answered(x.followStream(rc, rd))
		case e != nil:
			return answered(x.replay(rc, e, x.lg.cache))
		case f != nil:
			return answered(x.lead(rc, pol, k, f, store))
		}
		if err := x.r.Context().Err(); err != nil {
			return clientGone(err) // it left while it waited
		}
	}
	return answered(x.lead(rc, pol, k, nil, store))
}

// answered is err, or errAnswered for nil: the cache's stage has answered
// and the pipeline must not relay the call again.
func answered(err error) error {
	if err == nil {
		return errAnswered
	}
	return err
}

// follow joins the flight of k. As its leader it returns the flight, to
// land. As a follower it waits, at most pol.MaxWait, for the leader's
// answer and returns it (x.lg.cache "coalesced"), or the Reader of the
// leader's stream once it starts (to follow as it arrives), or, when the
// leader had none to share, tries again: a stored answer ("hit"), or the
// flight of the next leader. Past the wait, when the caller leaves, or
// when the leader's stream passed max_entry before the follower could
// join it, it returns none of them, and the call goes on alone.
func (x *exchange) follow(rc *ResponseCache, pol *CachePolicy, k cache.Key, store bool) (*cache.Flight, *cache.Entry, *cache.Reader) {
	wait := pol.MaxWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	ctx, cancel := context.WithCancel(x.r.Context())
	defer cancel()
	timer := clock.Or(rc.Clock).AfterFunc(wait, cancel) // on the injected clock
	defer timer.Stop()
	for {
		f, leader := rc.flights.Join(k)
		if leader {
			return f, nil, nil
		}
		e, rd, err := f.Wait(ctx)
		if rd != nil || e != nil {
			x.lg.cache = "coalesced"
			return nil, e, rd
		}
		if err != nil {
			return nil, nil, nil
		}
		if store {
			if e, ok := rc.Store.Get(k, rc.now()); ok {
				x.lg.cache = "hit"
				return nil, e, nil
			}
		}
	}
}

// lead relays the call, its answer captured as it goes out; f, when not
// nil, is the flight of k it leads, landed with the answer whatever
// happens. A whole 2xx answer the backend did not mark no-store, no
// larger than the policy's bound (a stream: complete, see
// cache.StreamComplete), is shared with the flight's followers, and
// stored under k when store is set.
//
// A streamed 2xx answer is shared as it goes out (shareStream): the
// followers read it as it arrives, and their streams end as its caller's
// did. Its call then outlives the leader's client for as long as a
// follower reads it.
func (x *exchange) lead(rc *ResponseCache, pol *CachePolicy, k cache.Key, f *cache.Flight, store bool) error {
	limit := pol.MaxEntry
	if limit <= 0 {
		limit = 1 << 20
	}
	var e *cache.Entry
	var ended error // how the stream the leader's caller got ended, for the flight's readers
	if f != nil {
		defer func() { rc.flights.Land(k, f, e, ended) }()
	}
	x.w.Header().Set(HeaderCache, "miss")
	x.lg.cache = "miss"
	rc.result(x.pool.Name, "miss", 0)
	c := &capture{ResponseWriter: x.w, limit: limit}
	if f != nil && x.req.Stream {
		defer x.shareStream(c, f)()
	}
	x.w = c
	err := relay(x)
	x.w = c.ResponseWriter
	ended = err
	if c.gone && err == nil {
		// Its client left; the call went on, whole, for the followers.
		err = clientGone(context.Canceled)
	}
	if ended != nil || c.over || c.status < 200 || c.status > 299 || cache.NoStore(c.header.Values("Cache-Control")) {
		return err
	}
	body := c.body
	if c.sharing {
		body = f.Bytes() // nil past the bound
	}
	if body == nil || x.eventStream && !cache.StreamComplete(string(x.req.Op), string(x.format), body) {
		return err
	}
	e = &cache.Entry{Status: c.status, Header: cache.StoredHeader(c.header), Body: body, Stored: rc.now(), TTL: pol.TTL,
		Pool: x.pool.Name, Scope: x.cacheScope(pol), Key: x.lg.key}
	if rep := x.lg.report; rep != nil {
		if rep.Served != nil {
			e.Backend = rep.Served.Backend.Name
		}
		if rep.Usage != nil && rep.Usage.Known {
			e.Usage = *rep.Usage
		}
	}
	if store {
		rc.Store.Set(k, e)
		if rc.Observer != nil {
			rc.Observer.CacheStored(x.pool.Name, e.Size())
		}
	}
	return err
}

// shareStream readies c, the leader's writer, to share a streamed answer
// with the readers of f (capture.WriteHeader starts it), and the call to
// outlive the leader's client while they read: the call's context is no
// longer the client's, but is cancelled when the client has left and no
// reader is left (cache.Flight.LeaderLeft). It returns what undoes it.
func (x *exchange) shareStream(c *capture, f *cache.Flight) func() {
	r := x.r
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c.flight = f
	c.leave = func() bool { return f.LeaderLeft(cancel) }
	stop := context.AfterFunc(r.Context(), func() { f.LeaderLeft(cancel) })
	x.r = r.WithContext(ctx)
	return func() {
		stop()
		cancel()
		x.r = r
	}
}

// followStream answers x with the stream an identical call's leader is
// relaying, read from rd: the bytes its caller has had, then each as the
// leader relays it, flushed on its own, to the end its caller's stream
// had (followEnd). Its header is the leader's as a hit's is (replay),
// without a length; its Age is 0.
func (x *exchange) followStream(rc *ResponseCache, rd *cache.Reader) error {
	defer rd.Close()
	hdr := x.w.Header()
	for k, vv := range rd.Header() {
		hdr[k] = slices.Clip(vv)
	}
	hdr.Set("X-Request-Id", x.lg.id)
	if x.format == translate.Anthropic {
		hdr.Set("Request-Id", x.lg.id)
	}
	hdr.Set(HeaderCache, "coalesced")
	hdr.Set("Age", "0")
	x.eventStream = true
	x.lg.cache = "coalesced"
	x.lg.usage = route.Usage{Known: true} // no backend's tokens, as for a hit
	x.writeHeader(rd.Status())
	ctl := http.NewResponseController(x.w)
	ctx := x.r.Context()
	for {
		p, err := rd.Next(ctx)
		if len(p) > 0 {
			n, werr := x.w.Write(p)
			x.lg.bytes += int64(n)
			if werr == nil {
				werr = ctl.Flush()
			}
			if werr != nil {
				return clientGone(werr)
			}
		}
		if err != nil {
			rc.result(x.pool.Name, "coalesced", int(x.lg.bytes))
			if e := rd.Entry(); e != nil {
				x.lg.saved, x.lg.savedBackend = e.Usage, e.Backend
			}
			return x.followEnd(err)
		}
	}
}

// followEnd is how a follower's stream ends, err being what its Reader
// ended with: as the leader's caller's did (io.EOF: whole; the leader's
// error: the same error event, or nothing more after the backend's own,
// or an abort), or cut with an error event of its own when it fell
// behind the leader by more than max_entry.
func (x *exchange) followEnd(err error) error {
	if cerr := x.r.Context().Err(); cerr != nil {
		return clientGone(cerr)
	}
	var e *apiError
	switch {
	case err == io.EOF:
		return nil
	case errors.Is(err, cache.ErrLagged):
		return streamBroken("coalesced_stream_lagged",
			"switchover: this call shared the stream of an identical call and fell behind it by more than the cache's max_entry; the response is incomplete", err)
	case errors.As(err, &e) && !e.gone:
		c := *e // the leader's, shared: each follower its own copy
		return &c
	}
	return streamBroken("upstream_stream_error", "switchover: the call whose stream this call shared stopped; the response is incomplete", err)
}

// replay answers x with the stored or shared answer e, as result ("hit",
// "coalesced"): its status, its header with the request's own id, the
// cache's header and its age, and its body as it was sent (a stream
// whole, flushed).
func (x *exchange) replay(rc *ResponseCache, e *cache.Entry, result string) error {
	hdr := x.w.Header()
	for k, vv := range e.Header {
		hdr[k] = slices.Clip(vv)
	}
	hdr.Set("X-Request-Id", x.lg.id)
	if x.format == translate.Anthropic {
		hdr.Set("Request-Id", x.lg.id)
	}
	hdr.Set(HeaderCache, result)
	hdr.Set("Age", strconv.FormatInt(e.Age(rc.now()), 10))
	hdr.Set("Content-Length", strconv.Itoa(len(e.Body)))
	x.eventStream = strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream")
	x.lg.cache, x.lg.saved, x.lg.savedBackend = result, e.Usage, e.Backend
	x.lg.usage = route.Usage{Known: true} // no backend's tokens: the key's token limits get back its estimate
	x.writeHeader(e.Status)
	n, err := x.w.Write(e.Body)
	x.lg.bytes = int64(n)
	rc.result(x.pool.Name, result, n)
	if err != nil {
		return clientGone(err)
	}
	return nil
}

// capture is the leader's ResponseWriter: it passes everything on, and
// keeps the status, the header as sent and the body up to limit (over
// past it). With flight set (shareStream) it shares a 2xx event stream
// with the flight's readers instead of keeping its body, and, once the
// leader's client has left while readers read, goes on without it.
type capture struct {
	http.ResponseWriter
	status int
	header http.Header
	body   []byte
	limit  int64
	over   bool

	flight  *cache.Flight // the flight to share a stream with; nil: none
	sharing bool          // the answer is shared with flight's readers
	leave   func() bool   // the leader's client left: reports whether the call goes on for the readers
	gone    bool          // the leader's client left, and the call goes on for the readers
}

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status, c.header = status, c.ResponseWriter.Header().Clone()
		if c.flight != nil && status >= 200 && status <= 299 && route.IsEventStream(c.header) && !cache.NoStore(c.header.Values("Cache-Control")) {
			c.sharing = true
			c.flight.Share(status, cache.StoredHeader(c.header), c.limit)
		}
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	switch {
	case c.sharing:
		c.flight.Append(p)
	case !c.over:
		if int64(len(c.body)+len(p)) > c.limit {
			c.over, c.body = true, nil
		} else {
			c.body = append(c.body, p...)
		}
	}
	if c.gone {
		return len(p), nil
	}
	n, err := c.ResponseWriter.Write(p)
	if err != nil && c.left() {
		return len(p), nil
	}
	return n, err
}

// FlushError flushes the leader's client's writer (http.ResponseController
// calls it), until the client has left while readers read.
func (c *capture) FlushError() error {
	if c.gone {
		return nil
	}
	err := http.NewResponseController(c.ResponseWriter).Flush()
	if err != nil && c.left() {
		return nil
	}
	return err
}

// left is called when a write to the leader's client failed: it reports
// whether the call goes on without it for the flight's readers.
func (c *capture) left() bool {
	if c.leave != nil && c.sharing && c.leave() {
		c.gone = true
	}
	return c.gone
}

// Unwrap gives http.ResponseController the writer underneath.
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// spendCached records a replayed answer's use (l.cache "hit" or
// "coalesced") with the Spender: no cost, and what its making had used,
// which it saved.
func (h *Handler) spendCached(l *logLine, status int, total time.Duration) {
	sp := Spend{RequestID: l.id, Pool: l.pool, Backend: l.savedBackend, Key: l.key, Model: l.model, Status: status,
		Usage: l.saved, EndUser: l.endUser, Cache: l.cache, Duration: total, FirstByte: l.firstByte}
	if l.who != nil {
		sp.Team, sp.Tags = l.who.Team, l.who.Tags
	}
	h.Spender.Spent(sp)
	l.cost, l.priced = 0, true
}
