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
// retries (on a cluster, a few: see Cluster), so a dead or slow server
// makes calls fail fast; the replica
// carries on alone and reconciles later. A subscription whose connection
// is lost is closed, never silently resubscribed (messages sent meanwhile
// would be lost unnoticed): the caller subscribes again and reconciles with
// List.
//
// # Cluster
//
// Without Options.Cluster, New connects to one server (standalone Redis
// or Valkey, one with replicas behind a failover address, or a proxy in
// front of several). With it set, the Store is a client of Redis Cluster
// (or Valkey in cluster mode): it learns the nodes and slots from the
// seeds in Options.URL at its first call, and uses plain keys without
// hash tags, so a fleet's keys spread over the masters. That works
// because every call but List touches exactly one key: Put, Delete and
// Tail are single-key commands, Count, Acquire and Release are Lua
// scripts each given one key in KEYS and touching no other, and Append
// is a MULTI of RPUSH and LTRIM on one key. Keep it so: a script or
// transaction over two keys fails on a cluster (CROSSSLOT) unless they
// share a hash tag. List walks every master with SCAN (a
// SCAN sees one node's keys) and reads the keys it found with GETs
// pipelined by node, never one MGET across slots. With a master
// unreachable, calls on its keys fail, and so does every List; calls on
// the other masters' keys go on.
//
// Publish and Subscribe use ordinary Pub/Sub, which a cluster broadcasts
// to every node. Every Publish goes to one node, the master of the
// channel's slot, so that a fleet's messages arrive in the order they
// were sent (go-redis would spread them over the nodes, and the cluster
// bus does not order messages of different nodes). A subscription lives
// on that node too and closes, as on a single server, when that node's
// connection is lost or stops answering; the caller subscribes again,
// which reaches the cluster as it is then.
//
// MOVED and ASK redirects (slots migrating, a replica promoted) are
// followed at most Options.MaxRedirects times; go-redis spends the same
// budget on retrying network errors on a cluster, so a call to a dead
// node is tried that many times more before it fails.
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
	neturl "net/url"
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
	//
	// With Cluster set it is read by go-redis's ParseClusterURL instead:
	// redis://[user:password@]host:port?addr=host2:port&addr=host3:port,
	// every address a seed node from which the client learns the whole
	// cluster (one reachable seed is enough; give several so that the
	// Store starts with one of them down). A cluster has no databases:
	// a /db other than /0 is an error.
	URL string
	// Cluster makes the Store a Redis Cluster client. Default false: one
	// server, and addr parameters in URL are an error.
	Cluster bool
	// MaxRedirects is how many MOVED or ASK redirects a call on a cluster
	// follows, and so how many times it retries a network error (go-redis
	// spends one budget on both). Zero means 2; without Cluster it is
	// ignored. More rides out longer slot migrations, at the cost of a
	// call to a dead node failing that many times slower.
	MaxRedirects int
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

// Store is a fleet.Store on a Redis server or cluster. It is safe for
// concurrent use.
type Store struct {
	rdb       redis.UniversalClient
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
	dial := opts.DialTimeout
	if dial <= 0 {
		dial = 200 * time.Millisecond
	}
	io := opts.IOTimeout
	if io <= 0 {
		io = 100 * time.Millisecond
	}
	var rdb redis.UniversalClient
	if opts.Cluster {
		co, err := parseClusterURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		co.DialTimeout = dial
		co.ReadTimeout = io
		co.WriteTimeout = io
		co.PoolTimeout = io
		co.ContextTimeoutEnabled = true
		co.MaxRetries = -1 // none on a node's client; the cluster's are MaxRedirects
		co.DialerRetries = 1
		co.MaxRedirects = opts.MaxRedirects
		if co.MaxRedirects <= 0 {
			co.MaxRedirects = 2 // zero would mean go-redis's default, 3
		}
		rdb = redis.NewClusterClient(co)
	} else {
		ro, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("redisstore: %w", err)
		}
		ro.DialTimeout = dial
		ro.ReadTimeout = io
		ro.WriteTimeout = io
		ro.PoolTimeout = io
		ro.ContextTimeoutEnabled = true
		ro.MaxRetries = -1 // none: the caller retries, or carries on alone
		ro.DialerRetries = 1
		rdb = redis.NewClient(ro)
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "switchover:"
	}
	channel := opts.Channel
	if channel == "" {
		channel = prefix + "events"
	}
	return &Store{
		rdb:       rdb,
		prefix:    prefix,
		channel:   channel,
		ioTimeout: io,
		subs:      map[*redis.PubSub]struct{}{},
	}, nil
}

// parseClusterURL is redis.ParseClusterURL, which ignores the URL's path,
// refusing a database other than 0: a cluster has only that one, and a
// URL that names another was meant for a single server.
func parseClusterURL(url string) (*redis.ClusterOptions, error) {
	co, err := redis.ParseClusterURL(url)
	if err != nil {
		return nil, err
	}
	if u, err := neturl.Parse(url); err == nil {
		if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
			return nil, fmt.Errorf("a cluster has database 0 only, the URL names %q", db)
		}
	}
	return co, nil
}

// Client is the store's go-redis client, for other features of the
// gateway that keep state in the same server (the response cache:
// cache/rediscache), so that one set of connections serves them all. Its
// calls are bounded as the store's are (Options); it is closed by Close.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Prefix is the prefix of every key the store writes (Options.Prefix).
func (s *Store) Prefix() string { return s.prefix }

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
	var c redis.Cmdable = s.rdb
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		// go-redis sends a PUBLISH to any node; messages published on two
		// nodes can reach a subscriber in either order. Through one node,
		// the master of the channel's slot (where the subscriptions are
		// too), they keep the order they were published in.
		node, err := cc.MasterForKey(ctx, s.channel)
		if err != nil {
			return s.fail(ctx, "publish", err)
		}
		c = node
	}
	return s.fail(ctx, "publish", c.Publish(ctx, s.channel, msg).Err())
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
// pipeline of GETs fetches.
const listBatch = 256

// List implements fleet.Store. It walks the keys with SCAN, on every
// master of a cluster, so a key put or deleted while it runs may or may
// not be listed.
func (s *Store) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	base := s.kvKey("")
	match := globEscape(base+prefix) + "*"
	var mu sync.Mutex
	out := map[string][]byte{}
	err := s.forEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, match, listBatch).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				vals, err := s.get(ctx, keys)
				if err != nil {
					return err
				}
				mu.Lock()
				for i, v := range vals {
					if v != nil { // nil: expired or deleted since SCAN
						out[strings.TrimPrefix(keys[i], base)] = v
					}
				}
				mu.Unlock()
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
	if err != nil {
		return nil, s.fail(ctx, "list", err)
	}
	return out, nil
}

// forEachNode calls fn with the client of every node that holds keys:
// each master of a cluster, concurrently, or the one server.
func (s *Store) forEachNode(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	default:
		return fmt.Errorf("client %T not supported", s.rdb)
	}
}

// get returns the values of keys, nil for a missing one. It pipelines
// one GET per key rather than an MGET, which a cluster refuses for keys
// of different slots; the cluster client sends each GET to its slot's
// node and follows redirects.
func (s *Store) get(ctx context.Context, keys []string) ([][]byte, error) {
	cmds := make([]*redis.StringCmd, len(keys))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	vals := make([][]byte, len(keys))
	for i, c := range cmds {
		v, err := c.Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, err
		default:
			if v == nil {
				v = []byte{} // an empty value, not a missing key
			}
			vals[i] = v
		}
	}
	return vals, nil
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

// countScript drops the events at or before ARGV[2] (now - window) from the
// sorted set KEYS[1], records ARGV[3] at ARGV[1] (ms) unless it is there
// already (NX: an id counted again keeps its first time), counts the
// events in (now-window, now] and keeps the key for ARGV[4] ms. One key.
var countScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[3])
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
