// Package redisstore is a fleet.Store on Redis (or Valkey), through
// go-redis.
//
// # Layout
//
// Every key carries Options.Prefix, then a namespace per feature, so one
// server can serve several fleets and the features cannot collide:
//
//	PREFIX kv:KEY      Put, List and leases (a string; a lease's value is its holder)
//	PREFIX count:KEY   Count (a sorted set of event ids scored by time in ms)
//	PREFIX log:KEY     Append and Tail (a list, oldest first)
//	Options.Channel    Publish and Subscribe
//
// Leases share the kv namespace with Put, as they do in fleet.Memory: List
// shows them, with the holder as value.
//
// # Failures
//
// A call is bounded by its context and, whatever the context, by short
// go-redis timeouts (Options.DialTimeout, Options.IOTimeout) with no
// retries, so a dead or slow server makes calls fail fast; the replica
// carries on alone and reconciles later. A subscription whose connection
// is lost is closed, never silently resubscribed (messages sent meanwhile
// would be lost unnoticed): the caller subscribes again and reconciles with
// List.
//
// # Cluster
//
// New connects to one server (standalone Redis or Valkey, or a proxy in
// front of several). Count, Acquire and Release are Lua scripts that each
// touch exactly one key, and Append is a MULTI on one key, so they would
// run unchanged on Redis Cluster with plain keys and no hash tags. List is
// the exception: SCAN walks one node's keys only and MGET spans slots, so
// List, and therefore this Store, does not support Cluster.
//
// # Logging
//
// go-redis logs failed dials and reconnections through its process-wide
// logger (redis.SetLogger), once per failing call while the server is
// down; the Store does not change it, since that would change every
// go-redis client of the process. The gateway may route or silence it.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchover-gw/switchover/fleet"
)

// Options configure a Store. The zero value connects to a local server
// with the defaults below.
type Options struct {
	// URL is the server, redis://[user:password@]host:port[/db] or
	// rediss:// for TLS, as go-redis's ParseURL reads it. Empty means
	// redis://localhost:6379. Timeouts and retries given in the URL are
	// overridden by the fields below.
	URL string
	// Prefix starts every key the store writes, so that one server can
	// serve several fleets; fleets that share a prefix share everything.
	// Empty means "switchover:".
	Prefix string
	// Channel is the Pub/Sub channel of Publish and Subscribe. Empty
	// means Prefix + "events".
	Channel string
	// DialTimeout bounds opening a connection. Zero means 200 ms. Longer
	// makes calls to an unreachable server wait that long before failing.
	DialTimeout time.Duration
	// IOTimeout bounds each read and write on a connection and the wait
	// for a free connection of the pool. Zero means 100 ms. It must exceed
	// the server's slowest answer (a List over many keys), or such calls
	// fail; a context with an earlier deadline bounds a call further.
	IOTimeout time.Duration
}

// Store is a fleet.Store on a Redis server. It is safe for concurrent use.
type Store struct {
	rdb       *redis.Client
	prefix    string
	channel   string
	ioTimeout time.Duration

	mu     sync.Mutex
	closed bool
	subs   map[*redis.PubSub]struct{}
}

var _ fleet.Store = (*Store)(nil)

// New returns a Store for opts. It does not contact the server: a server
// that is down when the replica starts is a failing call later, as it is
// when the server goes away.
func New(opts Options) (*Store, error) {
	url := opts.URL
	if url == "" {
		url = "redis://localhost:6379"
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	dial := opts.DialTimeout
	if dial <= 0 {
		dial = 200 * time.Millisecond
	}
	io := opts.IOTimeout
	if io <= 0 {
		io = 100 * time.Millisecond
	}
	ro.DialTimeout = dial
	ro.ReadTimeout = io
	ro.WriteTimeout = io
	ro.PoolTimeout = io
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1 // none: the caller retries, or carries on alone
	ro.DialerRetries = 1
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "switchover:"
	}
	channel := opts.Channel
	if channel == "" {
		channel = prefix + "events"
	}
	return &Store{
		rdb:       redis.NewClient(ro),
		prefix:    prefix,
		channel:   channel,
		ioTimeout: io,
		subs:      map[*redis.PubSub]struct{}{},
	}, nil
}

func (s *Store) kvKey(key string) string    { return s.prefix + "kv:" + key }
func (s *Store) countKey(key string) string { return s.prefix + "count:" + key }
func (s *Store) logKey(key string) string   { return s.prefix + "log:" + key }

// check returns ErrClosed after Close, else ctx's error.
func (s *Store) check(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fleet.ErrClosed
	}
	return ctx.Err()
}

// fail turns a go-redis error into the Store's: ctx's error when ctx ended
// meanwhile, ErrClosed when the store was closed meanwhile.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := s.check(ctx); cerr != nil {
		return fmt.Errorf("redisstore: %s: %w", op, cerr)
	}
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w", op, fleet.ErrClosed)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// Publish implements fleet.Store.
func (s *Store) Publish(ctx context.Context, msg []byte) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.fail(ctx, "publish", s.rdb.Publish(ctx, s.channel, msg).Err())
}

// pubsubHealthInterval is how long a subscription may be silent before it
// is pinged; a ping unanswered for as long again means the connection is
// lost (a server that went away without closing it).
const pubsubHealthInterval = time.Second

// subBuffer is how many messages a subscription holds for a slow reader;
// one that falls further behind loses its subscription (it is closed),
// as with fleet.Memory and as Redis itself does past a client's output
// buffer limit.
const subBuffer = 1024

// Subscribe implements fleet.Store. The subscription is active on the
// server when it returns. Its channel is closed when ctx ends, the store
// is closed, the connection is lost (go-redis would reconnect and
// resubscribe; the Store closes instead, so the caller knows to
// reconcile) or the reader falls subBuffer messages behind.
func (s *Store) Subscribe(ctx context.Context) (<-chan []byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ps := s.rdb.Subscribe(ctx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ps.Close()
		return nil, fleet.ErrClosed
	}
	s.subs[ps] = struct{}{}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	end := func() {
		stop()
		_ = ps.Close()
		s.mu.Lock()
		delete(s.subs, ps)
		s.mu.Unlock()
	}
	if err := ps.Subscribe(ctx, s.channel); err != nil {
		end()
		return nil, s.fail(ctx, "subscribe", err)
	}
	// Wait for the server's confirmation, so that messages published
	// after Subscribe returns are delivered.
	if err := confirm(ctx, ps, s.channel, s.ioTimeout); err != nil {
		end()
		return nil, s.fail(ctx, "subscribe", err)
	}
	out := make(chan []byte, subBuffer)
	go func() {
		defer close(out)
		defer end()
		forward(ctx, ps, out)
	}()
	return out, nil
}

func confirm(ctx context.Context, ps *redis.PubSub, channel string, timeout time.Duration) error {
	for {
		m, err := ps.ReceiveTimeout(ctx, timeout)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == channel {
				return nil
			}
		case *redis.Message:
			// Not possible before the confirmation; ignore.
		}
	}
}

// forward copies ps's messages to out until the connection fails, ctx
// ends (which closes ps), or out is full.
func forward(ctx context.Context, ps *redis.PubSub, out chan<- []byte) {
	pinged := false
	for {
		m, err := ps.ReceiveTimeout(ctx, pubsubHealthInterval)
		if err != nil {
			var ne net.Error
			if ctx.Err() == nil && !pinged && errors.As(err, &ne) && ne.Timeout() {
				if ps.Ping(ctx) != nil {
					return
				}
				pinged = true
				continue
			}
			return
		}
		pinged = false
		if m, ok := m.(*redis.Message); ok {
			select {
			case out <- []byte(m.Payload):
			default:
				return // too far behind: lose the subscription
			}
		}
	}
}

// Put implements fleet.Store. A ttl under a millisecond counts as one.
func (s *Store) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if ttl > 0 {
		ttl = atLeastMs(ttl)
	} else {
		ttl = 0
	}
	return s.fail(ctx, "put", s.rdb.Set(ctx, s.kvKey(key), value, ttl).Err())
}

// Delete implements fleet.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.fail(ctx, "delete", s.rdb.Del(ctx, s.kvKey(key)).Err())
}

// listBatch is how many keys one SCAN step asks for, and so the most one
// MGET fetches.
const listBatch = 256

// List implements fleet.Store. It walks the keys with SCAN, so a key put
// or deleted while it runs may or may not be listed.
func (s *Store) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	base := s.kvKey("")
	match := globEscape(base+prefix) + "*"
	out := map[string][]byte{}
	var cursor uint64
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, match, listBatch).Result()
		if err != nil {
			return nil, s.fail(ctx, "list", err)
		}
		if len(keys) > 0 {
			vals, err := s.rdb.MGet(ctx, keys...).Result()
			if err != nil {
				return nil, s.fail(ctx, "list", err)
			}
			for i, v := range vals {
				if v, ok := v.(string); ok { // nil: expired or deleted since SCAN
					out[strings.TrimPrefix(keys[i], base)] = []byte(v)
				}
			}
		}
		if next == 0 {
			return out, nil
		}
		cursor = next
	}
}

// globEscape quotes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// countScript records ARGV[3] at ARGV[1] (ms) in the sorted set KEYS[1],
// drops events at or before ARGV[2] (now - window), counts those in
// (now-window, now] and keeps the key for ARGV[4] ms. One key.
var countScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local n = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return n
`)

// Count implements fleet.Store. Times are kept to the millisecond. The
// window's key expires window after the last Count on the server's clock,
// so a window nobody counts in is forgotten.
func (s *Store) Count(ctx context.Context, key, id string, now time.Time, window time.Duration) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	nowMs := now.UnixMilli()
	winMs := window.Milliseconds()
	n, err := countScript.Run(ctx, s.rdb, []string{s.countKey(key)},
		strconv.FormatInt(nowMs, 10),
		strconv.FormatInt(nowMs-winMs, 10),
		id,
		strconv.FormatInt(max(winMs, 1), 10),
	).Int()
	if err != nil {
		return 0, s.fail(ctx, "count", err)
	}
	return n, nil
}

// acquireScript takes KEYS[1] for holder ARGV[1] for ARGV[2] ms, or
// extends it when ARGV[1] holds it; 1 when ARGV[1] holds it after. One key.
var acquireScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// Acquire implements fleet.Store. A ttl under a millisecond counts as
// one.
func (s *Store) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (bool, error) {
	if err := s.check(ctx); err != nil {
		return false, err
	}
	n, err := acquireScript.Run(ctx, s.rdb, []string{s.kvKey(key)},
		holder, strconv.FormatInt(atLeastMs(ttl).Milliseconds(), 10)).Int()
	if err != nil {
		return false, s.fail(ctx, "acquire", err)
	}
	return n == 1, nil
}

// releaseScript deletes KEYS[1] if ARGV[1] holds it. One key.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Release implements fleet.Store.
func (s *Store) Release(ctx context.Context, key, holder string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.fail(ctx, "release", releaseScript.Run(ctx, s.rdb, []string{s.kvKey(key)}, holder).Err())
}

// Append implements fleet.Store: RPUSH and LTRIM in one MULTI. A max of
// zero or less keeps every entry.
func (s *Store) Append(ctx context.Context, key string, entry []byte, max int) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	k := s.logKey(key)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, k, entry)
		if max > 0 {
			p.LTrim(ctx, k, int64(-max), -1)
		}
		return nil
	})
	return s.fail(ctx, "append", err)
}

// Tail implements fleet.Store. An n of zero or less returns every entry.
func (s *Store) Tail(ctx context.Context, key string, n int) ([][]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	start := int64(0)
	if n > 0 {
		start = int64(-n)
	}
	vals, err := s.rdb.LRange(ctx, s.logKey(key), start, -1).Result()
	if err != nil {
		return nil, s.fail(ctx, "tail", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// Close implements fleet.Store: it ends the store's subscriptions and
// closes its connections. Closing a closed Store does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	subs := make([]*redis.PubSub, 0, len(s.subs))
	for ps := range s.subs {
		subs = append(subs, ps)
	}
	s.mu.Unlock()
	for _, ps := range subs {
		_ = ps.Close()
	}
	return s.rdb.Close()
}

func atLeastMs(d time.Duration) time.Duration { return max(d, time.Millisecond) }

// DiscardClientLog stops the Redis client library's own log lines (one
// per failed dial, for every client in the process): a gateway reports
// the store's outages itself, once each. The gateway's command calls it.
func DiscardClientLog() { redis.SetLogger(discardLog{}) }

type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}
