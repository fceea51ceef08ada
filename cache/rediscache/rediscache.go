// Package rediscache is a cache.Store on Redis (or Valkey), through
// go-redis: the response cache of a fleet (state.redis), whose replicas
// share its entries.
//
// # Layout
//
// Every key starts with Options.Prefix (the fleet store's, by default
// "switchover:") and "cache:", apart from the fleet's own keys:
//
//	PREFIX cache:e:HEX           an entry (a string), expiring at its TTL
//	PREFIX cache:i:all           the index of every entry
//	PREFIX cache:i:pool:POOL     the index of a pool's entries
//	PREFIX cache:i:team:TEAM     the index of a team's entries (scope "t:TEAM")
//	PREFIX cache:i:key:KEY       the index of the entries a key made
//
// HEX is the entry's cache.Key in hexadecimal: a SHA-256 of the canonical
// call and its scope (the team, the key, or shared), so an entry of one
// scope has a name no call of another scope computes, on any replica.
// An index is a sorted set of HEX scored by the entry's expiry (Unix
// milliseconds); each write drops the members past theirs, and the index
// itself expires with its longest-lived member, so the indexes hold about
// the live entries and no more.
//
// # Purge
//
// Purge reads the members of the one index that selects the filter
// (team, else key, else pool, else all) with ZSCAN, in batches of
// purgeBatch, and unlinks their entries with pipelined single-key
// UNLINKs. Where the index alone does not decide (a key's index, whose
// entries another key of the team may have made since, or a filter of
// several fields) it reads each entry's head and matches the filter
// first. Indexes rather than a SCAN of the namespace: a purge costs what
// it removes, not the size of the server's keyspace (which the fleet's
// state and other tenants of the server share), and it needs no walk of
// every master of a cluster.
//
// # Values
//
// A value is "swc1", a flag byte, a CRC-32 of the rest, the length of the entry's metadata
// (status, header, times, pool, scope, key, backend, usage) as JSON, that
// JSON, and the body, compressed with DEFLATE (compress/flate, fastest
// level) when that makes it smaller. A value that does not read back
// (another program's, a corrupt one, a larger body than maxBody) is a
// miss.
//
// # Failures
//
// A cache outage is never an error of a call: every Redis call is bounded
// by Options.Timeout, a Get that fails or times out is a miss and a Set
// that fails is dropped. Sets run in the background, at most
// Options.MaxWrites at once (more are dropped), so that neither the
// caller that made the answer nor the calls waiting on its flight wait
// for Redis. Options.OnHealth hears the first failure after a success and
// the first success after a failure.
//
// # Cluster
//
// Every command touches one key (the writes of a Set are a pipeline of
// single-key commands, the index upkeep a script given one key), so the
// store works on Redis Cluster, its keys spread over the masters; the
// "all" index lives on one of them.
package rediscache

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/cache"
	"github.com/switchover-gw/switchover/route"
)

// Defaults of Options.
const (
	DefaultTimeout      = 50 * time.Millisecond
	DefaultPurgeTimeout = 30 * time.Second
	DefaultMaxWrites    = 64
)

// maxBody bounds a body read back from Redis, whatever its value says:
// a corrupt or hostile value cannot make a Get inflate more.
const maxBody = 64 << 20

// purgeBatch is how many index members one step of a purge handles.
const purgeBatch = 256

// ErrBusy is the cause of a Set dropped because Options.MaxWrites writes
// were already in flight.
var ErrBusy = errors.New("rediscache: too many writes in flight")

// Options configure a Store. Client is required; the other fields work at
// their zero value.
type Options struct {
	// Client is the server's client: the fleet store's
	// (redisstore.Store.Client), whose connections the cache shares. The
	// Store never closes it.
	Client redis.UniversalClient
	// Prefix starts every key, then "cache:". Empty means "switchover:".
	Prefix string
	// Timeout bounds each Get and each Set's writes. Zero means 50 ms.
	// Past it a Get is a miss: longer waits that long on a slow server
	// before calling the backend.
	Timeout time.Duration
	// PurgeTimeout bounds a whole Purge. Zero means 30 s.
	PurgeTimeout time.Duration
	// MaxWrites bounds the Sets in flight; one more is dropped (ErrBusy).
	// Zero means 64.
	MaxWrites int
	// OnHealth, if set, hears the store's health change: err the first
	// failure after a success (or the first ever), nil the first success
	// after a failure. A miss or a dropped write is all a failure costs;
	// this is for a log line. Called on the caller's or a writer's
	// goroutine, never under a lock of the store.
	OnHealth func(err error)
	// OnError, if set, hears every failed call, by op: "get" (a lookup
	// that failed or timed out), "set" (a write that failed), "busy" (a
	// write dropped past MaxWrites), "corrupt" (a value that did not read
	// back). For a counter; called on the caller's or a writer's
	// goroutine, never under a lock of the store.
	OnError func(op string)
}

// Store is a cache.Store in Redis. It is safe for concurrent use.
type Store struct {
	rdb      redis.UniversalClient
	prefix   string
	timeout  time.Duration
	purgeTO  time.Duration
	writes   chan struct{} // a token per write in flight
	wg       sync.WaitGroup
	failing  atomic.Bool
	onHealth func(error)
	onError  func(string)
}

var _ cache.Store = (*Store)(nil)

// New returns a Store on o.Client. It does not contact the server.
func New(o Options) *Store {
	s := &Store{rdb: o.Client, prefix: o.Prefix, timeout: o.Timeout, purgeTO: o.PurgeTimeout, onHealth: o.OnHealth, onError: o.OnError}
	if s.prefix == "" {
		s.prefix = "switchover:"
	}
	s.prefix += "cache:"
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.purgeTO <= 0 {
		s.purgeTO = DefaultPurgeTimeout
	}
	n := o.MaxWrites
	if n <= 0 {
		n = DefaultMaxWrites
	}
	s.writes = make(chan struct{}, n)
	return s
}

// EntryKey is the Redis key of the entry under k.
func (s *Store) EntryKey(k cache.Key) string { return s.prefix + "e:" + hex.EncodeToString(k[:]) }

func (s *Store) indexAll() string             { return s.prefix + "i:all" }
func (s *Store) indexPool(pool string) string { return s.prefix + "i:pool:" + pool }
func (s *Store) indexTeam(team string) string { return s.prefix + "i:team:" + team }
func (s *Store) indexKey(key string) string   { return s.prefix + "i:key:" + key }

// failed counts a failed call of op.
func (s *Store) failed(op string) {
	if s.onError != nil {
		s.onError(op)
	}
}

// health records the outcome of a call and reports a change.
func (s *Store) health(err error) {
	failing := err != nil
	if s.failing.Swap(failing) != failing && s.onHealth != nil {
		s.onHealth(err)
	}
}

// Get implements cache.Store: a miss when the entry is absent, stale,
// unreadable, or Redis does not answer within the timeout.
func (s *Store) Get(k cache.Key, now time.Time) (*cache.Entry, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	b, err := s.rdb.Get(ctx, s.EntryKey(k)).Bytes()
	cancel()
	if errors.Is(err, redis.Nil) {
		s.health(nil)
		return nil, false
	}
	s.health(err)
	if err != nil {
		s.failed("get")
		return nil, false
	}
	e, err := Decode(b)
	if err != nil {
		s.failed("corrupt")
		return nil, false
	}
	if !e.Fresh(now) {
		return nil, false
	}
	return e, true
}

// indexScript adds ARGV[1] to the index KEYS[1] scored by its expiry
// ARGV[2], drops the members that expired before ARGV[3] (now), and makes
// the index live at least ARGV[4] milliseconds more.
var indexScript = `redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 0`

// Set implements cache.Store: e is encoded now and written in the
// background, with its TTL as the key's expiry, and listed in the
// indexes of its pool, team and key. A write that fails is dropped; so
// is one past Options.MaxWrites in flight.
func (s *Store) Set(k cache.Key, e *cache.Entry) {
	if e.TTL <= 0 {
		return
	}
	v, err := Encode(e)
	if err != nil {
		return
	}
	select {
	case s.writes <- struct{}{}:
	default:
		s.health(ErrBusy)
		s.failed("busy")
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.writes }()
		err := s.write(k, e, v)
		s.health(err)
		if err != nil {
			s.failed("set")
		}
	}()
}

// write stores the encoded entry v of e under k, and its index entries.
func (s *Store) write(k cache.Key, e *cache.Entry, v []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	ttl := max(e.TTL, time.Millisecond)
	member := hex.EncodeToString(k[:])
	expires := e.Stored.Add(ttl).UnixMilli()
	args := []any{member, expires, e.Stored.UnixMilli(), ttl.Milliseconds()}
	idx := []string{s.indexAll()}
	if e.Pool != "" {
		idx = append(idx, s.indexPool(e.Pool))
	}
	if team, ok := teamOf(e.Scope); ok {
		idx = append(idx, s.indexTeam(team))
	}
	if e.Key != "" {
		idx = append(idx, s.indexKey(e.Key))
	}
	// The indexes first: on one server, a write cut short leaves at
	// worst a member without its entry (which a purge skips), never an
	// entry no purge finds (a cluster runs each node's part apart).
	pipe := s.rdb.Pipeline()
	for _, i := range idx {
		pipe.Eval(ctx, indexScript, []string{i}, args...)
	}
	pipe.Set(ctx, s.EntryKey(k), v, ttl)
	_, err := pipe.Exec(ctx)
	return err
}

// teamOf is the team of scope "t:TEAM".
func teamOf(scope string) (string, bool) {
	if len(scope) > 2 && scope[:2] == "t:" {
		return scope[2:], true
	}
	return "", false
}

// Flush waits for the Sets started before it to end.
func (s *Store) Flush() { s.wg.Wait() }

// Close waits for the writes in flight; the client stays open (its owner
// closes it).
func (s *Store) Close() { s.Flush() }

// Purge implements cache.Store; PurgeContext says why it stopped short.
func (s *Store) Purge(f cache.Filter) int {
	n, _ := s.PurgeContext(context.Background(), f)
	return n
}

// PurgeContext removes the entries f selects, from every replica's view
// (they share the store), and returns how many it removed, with an error
// when Redis failed before it was done: the entries counted are gone, some
// others may remain. It is bounded by Options.PurgeTimeout.
func (s *Store) PurgeContext(ctx context.Context, f cache.Filter) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.purgeTO)
	defer cancel()
	idx, check := s.indexAll(), f.Pool != "" || f.Team != "" || f.Key != ""
	fields := 0
	for _, v := range []string{f.Pool, f.Team, f.Key} {
		if v != "" {
			fields++
		}
	}
	switch {
	case f.Team != "":
		idx, check = s.indexTeam(f.Team), fields > 1
	case f.Key != "":
		idx, check = s.indexKey(f.Key), true // another key of the team may have made the entry since
	case f.Pool != "":
		idx, check = s.indexPool(f.Pool), false
	}
	n := 0
	var cursor uint64
	for {
		members, next, err := s.rdb.ZScan(ctx, idx, cursor, "*", purgeBatch).Result()
		if err != nil {
			return n, fmt.Errorf("rediscache: purge: %w", err)
		}
		var hexes []string
		for i := 0; i < len(members); i += 2 { // member, score
			hexes = append(hexes, members[i])
		}
		m, err := s.purgeBatch(ctx, idx, hexes, f, check)
		n += m
		if err != nil {
			return n, fmt.Errorf("rediscache: purge: %w", err)
		}
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}

// purgeBatch unlinks the entries of hexes (members of idx) that f
// selects (read and matched first when check is set), drops from idx
// those unlinked or gone, and returns how many it unlinked.
func (s *Store) purgeBatch(ctx context.Context, idx string, hexes []string, f cache.Filter, check bool) (int, error) {
	if len(hexes) == 0 {
		return 0, nil
	}
	keys := make([]string, len(hexes))
	for i, h := range hexes {
		keys[i] = s.prefix + "e:" + h
	}
	drop := hexes
	if check {
		pipe := s.rdb.Pipeline()
		gets := make([]*redis.StringCmd, len(keys))
		for i, k := range keys {
			gets[i] = pipe.Get(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		var sel []string
		drop = nil
		for i, g := range gets {
			b, err := g.Bytes()
			if errors.Is(err, redis.Nil) { // gone
				drop = append(drop, hexes[i])
				continue
			}
			if err != nil {
				return 0, err
			}
			e, err := decodeMeta(b)
			if err != nil || f.Match(e) {
				sel, drop = append(sel, keys[i]), append(drop, hexes[i])
			}
		}
		keys = sel
	}
	pipe := s.rdb.Pipeline()
	dels := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		dels[i] = pipe.Unlink(ctx, k)
	}
	rem := make([]any, len(drop))
	for i, h := range drop {
		rem[i] = h
	}
	if len(rem) > 0 {
		pipe.ZRem(ctx, idx, rem...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dels {
		n += int(d.Val())
	}
	return n, nil
}

// The value's layout: magic, a flag byte, a CRC-32 (Castagnoli, big
// endian) of what follows it, the metadata's length as an unsigned
// varint, the metadata (JSON), the body.
const (
	magic    = "swc1"
	rawBody  = 0 // the body as it is
	flatBody = 1 // the body compressed with DEFLATE
)

// minCompress is the smallest body worth compressing.
const minCompress = 256

// meta is an entry without its body, as stored.
type meta struct {
	Status  int         `json:"s"`
	Header  http.Header `json:"h,omitempty"`
	Stored  int64       `json:"t"` // Unix nanoseconds
	TTL     int64       `json:"ttl"`
	Pool    string      `json:"p,omitempty"`
	Scope   string      `json:"sc,omitempty"`
	Key     string      `json:"k,omitempty"`
	Backend string      `json:"b,omitempty"`
	Usage   route.Usage `json:"u"`
}

var writers = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// readers are DEFLATE readers to reuse (flate.Resetter): each holds a
// 32 KiB window.
var readers sync.Pool

// Encode returns the stored form of e.
func Encode(e *cache.Entry) ([]byte, error) {
	m, err := json.Marshal(meta{Status: e.Status, Header: e.Header, Stored: e.Stored.UnixNano(), TTL: int64(e.TTL),
		Pool: e.Pool, Scope: e.Scope, Key: e.Key, Backend: e.Backend, Usage: e.Usage})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(magic) + 1 + binary.MaxVarintLen64 + len(m) + len(e.Body)/2 + 64)
	buf.WriteString(magic)
	buf.WriteByte(rawBody)
	buf.Write(make([]byte, 4)) // the checksum, below
	buf.Write(binary.AppendUvarint(nil, uint64(len(m))))
	buf.Write(m)
	head := buf.Len()
	if len(e.Body) >= minCompress {
		buf.Bytes()[len(magic)] = flatBody
		w := writers.Get().(*flate.Writer)
		w.Reset(&buf)
		_, err := w.Write(e.Body)
		if err == nil {
			err = w.Close()
		}
		writers.Put(w)
		if err != nil {
			return nil, err
		}
		if buf.Len()-head < len(e.Body) {
			return sealed(buf.Bytes()), nil
		}
		buf.Truncate(head)
		buf.Bytes()[len(magic)] = rawBody
	}
	buf.Write(e.Body)
	return sealed(buf.Bytes()), nil
}

// sumAt is where a value's checksum starts, and what it covers after it.
const sumAt = len(magic) + 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealed writes v's checksum in its place.
func sealed(v []byte) []byte {
	binary.BigEndian.PutUint32(v[sumAt:], crc32.Checksum(v[sumAt+4:], castagnoli))
	return v
}

// errCorrupt is the cause of a value that does not read back.
var errCorrupt = errors.New("rediscache: not an entry")

// split returns v's flag, metadata and stored body.
func split(v []byte) (byte, []byte, []byte, error) {
	if len(v) < sumAt+5 || string(v[:len(magic)]) != magic ||
		binary.BigEndian.Uint32(v[sumAt:]) != crc32.Checksum(v[sumAt+4:], castagnoli) {
		return 0, nil, nil, errCorrupt
	}
	flag := v[len(magic)]
	rest := v[sumAt+4:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > uint64(len(rest)-w) || (flag != rawBody && flag != flatBody) {
		return 0, nil, nil, errCorrupt
	}
	return flag, rest[w : w+int(n)], rest[w+int(n):], nil
}

// decodeMeta reads v's entry without its body.
func decodeMeta(v []byte) (*cache.Entry, error) {
	_, m, _, err := split(v)
	if err != nil {
		return nil, err
	}
	var md meta
	if err := json.Unmarshal(m, &md); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return &cache.Entry{Status: md.Status, Header: md.Header, Stored: time.Unix(0, md.Stored), TTL: time.Duration(md.TTL),
		Pool: md.Pool, Scope: md.Scope, Key: md.Key, Backend: md.Backend, Usage: md.Usage}, nil
}

// Decode reads the entry Encode stored in v, or fails with a value that
// is not one (corrupt, truncated, a body past 64 MiB inflated).
func Decode(v []byte) (*cache.Entry, error) {
	e, err := decodeMeta(v)
	if err != nil {
		return nil, err
	}
	if e.Status < 200 || e.Status > 299 {
		return nil, errCorrupt
	}
	flag, _, body, _ := split(v)
	if flag == rawBody {
		e.Body = body
		return e, nil
	}
	br := bytes.NewReader(body)
	r, _ := readers.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(br)
	} else if err := r.(flate.Resetter).Reset(br, nil); err != nil {
		return nil, errCorrupt
	}
	defer readers.Put(r)
	e.Body, err = io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil || len(e.Body) > maxBody {
		return nil, errCorrupt
	}
	return e, nil
}
