package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/config"
)

// Roles of a session, weakest first. Each may do what the weaker ones
// may.
const (
	// RoleViewer sees every page (no end users) and takes no action: an
	// admin.viewers key, or a single sign-on's viewer.
	RoleViewer = config.RoleViewer
	// RoleOperator also acts on the pools (drain, restore, breakers,
	// priorities and weights): an admin.viewers key with role operator,
	// or a single sign-on's operator.
	RoleOperator = config.RoleOperator
	// RoleAdmin also reloads, manages keys and teams and sees end users:
	// admin.key, or a single sign-on's admin.
	RoleAdmin = config.RoleAdmin
)

// rank orders the roles; an unknown role ranks below every known one.
func rank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// allows reports whether a session of role may do what needs need.
func allows(role, need string) bool { return rank(role) >= rank(need) && rank(role) > 0 }

// cookieName is the session cookie's.
const cookieName = "switchover_console"

// Session lifetimes: a session ends after sessionIdle without a request,
// and sessionMax after it began in any case.
const (
	sessionIdle = time.Hour
	sessionMax  = 12 * time.Hour
	// maxSessions bounds the sessions held; past it the oldest is
	// dropped.
	maxSessions = 1000
)

// session is one signed-in browser.
type session struct {
	// User is "admin", the viewer's name or the single sign-on's
	// identity; Role is RoleViewer, RoleOperator or RoleAdmin.
	User, Role string
	// CSRF is the token every state-changing request of the session
	// must carry.
	CSRF     string
	flashMsg string // shown once on the next page
	// secret is a key's secret just made, shown once by the page after
	// the form that made it; never copied out by get.
	secret  *newSecret
	grant   grant
	created time.Time
	seen    time.Time
}

// grant is what a session was granted by, checked again against the
// configuration in force at each request (regrant): a key no longer
// configured, a single sign-on removed or changed to another provider,
// or a person's groups no longer mapped ends the session; a role changed
// in the configuration applies at once. The zero grant grants nothing.
type grant struct {
	// key is the SHA-256 of the key signed in with.
	key [sha256.Size]byte
	// open: signed in without a key (admin.allow_no_key).
	open bool
	// issuer and client are the provider's, values the roles claim's
	// values, for a single sign-on.
	issuer, client string
	values         []string
}

// keyGrant is the grant of a sign-in with key.
func keyGrant(key string) grant { return grant{key: sha256.Sum256([]byte(key))} }

// sessions is the server-side session table, keyed by the SHA-256 of the
// cookie's token (a leaked table names no cookie). It is safe for
// concurrent use.
type sessions struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

// newToken is 32 random bytes, base64url.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// start makes a session for user with no grant (for tests of the
// table; a console ends it at its first request) and returns its cookie
// token.
func (s *sessions) start(user, role string, now time.Time) (string, *session) {
	return s.startGranted(user, role, grant{}, now)
}

// startGranted makes a session for user granted by g and returns its
// cookie token.
func (s *sessions) startGranted(user, role string, g grant, now time.Time) (string, *session) {
	tok := newToken()
	ss := &session{User: user, Role: role, CSRF: newToken(), grant: g, created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[sha256.Size]byte]*session{}
	}
	s.expire(now)
	if len(s.m) >= maxSessions {
		var oldest [sha256.Size]byte
		var at time.Time
		for k, v := range s.m {
			if at.IsZero() || v.seen.Before(at) {
				oldest, at = k, v.seen
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(tok))] = ss
	return tok, ss
}

// expire drops the sessions that ended. Requires external locking.
func (s *sessions) expire(now time.Time) {
	for k, v := range s.m {
		if !v.alive(now) {
			delete(s.m, k)
		}
	}
}

func (ss *session) alive(now time.Time) bool {
	return now.Sub(ss.seen) < sessionIdle && now.Sub(ss.created) < sessionMax
}

// get returns the live session of tok, marking it seen, or nil.
func (s *sessions) get(tok string, now time.Time) *session {
	if tok == "" {
		return nil
	}
	k := sha256.Sum256([]byte(tok))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	if ss == nil {
		return nil
	}
	if !ss.alive(now) {
		delete(s.m, k)
		return nil
	}
	ss.seen = now
	cp := *ss
	cp.secret = nil
	return &cp
}

// valid reports whether tok's session is alive, without marking it seen.
func (s *sessions) valid(tok string, now time.Time) bool {
	k := sha256.Sum256([]byte(tok))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	return ss != nil && ss.alive(now)
}

// keep reports whether tok's session is alive and marks it seen: an open
// overview, whose event stream calls it at every update, keeps its
// session alive (up to sessionMax), as requests do.
func (s *sessions) keep(tok string, now time.Time) bool {
	k := sha256.Sum256([]byte(tok))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	if ss == nil || !ss.alive(now) {
		return false
	}
	ss.seen = now
	return true
}

// end drops tok's session.
func (s *sessions) end(tok string) {
	s.mu.Lock()
	delete(s.m, sha256.Sum256([]byte(tok)))
	s.mu.Unlock()
}

// sameToken compares two tokens in constant time.
func sameToken(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1 && a != ""
}

// Sign-in limits. Only failed sign-ins are counted, in a token bucket of
// loginBurst per remote address and one per key prefix (the first
// characters of the key presented, at most half of it, kept as a hash),
// each refilled at one per loginRefill. A wrong key from an address or
// with a prefix whose bucket is empty is answered 429 instead of 401.
// Every key is checked, so a correct key is never refused because its
// address is locked (behind a reverse proxy every operator shares one):
// it is refused only while its own prefix's bucket is empty, which needs
// a run of failures with keys that begin as it does, and for at most
// maxKeyLock from when that bucket emptied.
const (
	loginBurst  = 10
	loginRefill = 6 * time.Second
	// maxKeyLock bounds how long a correct key can be refused.
	maxKeyLock = 5 * time.Second
	// prefixLen is the longest key prefix the limit counts by.
	prefixLen = 8
	// maxLimited bounds the buckets tracked; full buckets are dropped
	// first, then any.
	maxLimited = 10000
)

// limiter counts failed sign-ins per address and per key prefix. It is
// safe for concurrent use.
type limiter struct {
	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
	// emptied is when the bucket first ran out since it was last full;
	// zero once it is full again.
	emptied time.Time
}

// addrID and prefixID are the buckets of an address and of the prefix of
// a presented key.
func addrID(ip string) string { return "addr " + ip }

func prefixID(key string) string {
	n := min(prefixLen, len(key)/2)
	h := sha256.Sum256([]byte(key[:n]))
	return "key " + base64.RawURLEncoding.EncodeToString(h[:12])
}

// locked reports whether id's bucket is empty, and since when.
func (l *limiter) locked(id string, now time.Time) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[id]
	if b == nil {
		return false, time.Time{}
	}
	lv := b.level(now)
	if lv >= loginBurst {
		b.emptied = time.Time{}
	}
	return lv < 1, b.emptied
}

// fail counts a failed sign-in in id's bucket, and reports whether it
// emptied the bucket.
func (l *limiter) fail(id string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*bucket{}
	}
	b := l.m[id]
	if b == nil {
		if len(l.m) >= maxLimited {
			l.evict(now)
		}
		b = &bucket{tokens: loginBurst, at: now}
		l.m[id] = b
	}
	b.tokens, b.at = b.level(now), now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	if b.tokens >= 1 {
		return false
	}
	if b.emptied.IsZero() {
		b.emptied = now // a lock begins; it lasts until the bucket is full again
	}
	return true
}

// evict drops the full buckets or, if none is, one at random. Requires
// external locking.
func (l *limiter) evict(now time.Time) {
	for k, v := range l.m {
		if v.level(now) >= loginBurst {
			delete(l.m, k)
		}
	}
	for k := range l.m {
		if len(l.m) < maxLimited {
			break
		}
		delete(l.m, k)
	}
}

func (b *bucket) level(now time.Time) float64 {
	return min(loginBurst, b.tokens+float64(now.Sub(b.at))/float64(loginRefill))
}

// remoteIP is the address r came from, without its port.
func remoteIP(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// flash keeps msg to show on tok's next page.
func (s *sessions) flash(tok, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[sha256.Sum256([]byte(tok))]; ss != nil {
		ss.flashMsg = msg
	}
}

// takeFlash returns and forgets tok's message.
func (s *sessions) takeFlash(tok string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[sha256.Sum256([]byte(tok))]
	if ss == nil {
		return ""
	}
	m := ss.flashMsg
	ss.flashMsg = ""
	return m
}

// keepSecret keeps a new secret for tok's next secret page, replacing
// any not shown.
func (s *sessions) keepSecret(tok string, ns *newSecret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[sha256.Sum256([]byte(tok))]; ss != nil {
		ss.secret = ns
	}
}

// takeSecret returns and forgets tok's new secret, or nil.
func (s *sessions) takeSecret(tok string) *newSecret {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[sha256.Sum256([]byte(tok))]
	if ss == nil {
		return nil
	}
	ns := ss.secret
	ss.secret = nil
	return ns
}

// grantOf returns tok's grant, if its session is alive.
func (s *sessions) grantOf(tok string, now time.Time) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[sha256.Sum256([]byte(tok))]
	if ss == nil || !ss.alive(now) {
		return grant{}, false
	}
	return ss.grant, true
}

// setRole changes tok's role.
func (s *sessions) setRole(tok, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.m[sha256.Sum256([]byte(tok))]; ss != nil {
		ss.Role = role
	}
}
