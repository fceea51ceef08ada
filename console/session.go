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
)

// Roles of a session.
const (
	RoleAdmin  = "admin"  // signed in with admin.key: sees and acts
	RoleViewer = "viewer" // signed in with an admin.viewers key: sees only
)

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
	// User is "admin" or the viewer's name; Role is RoleAdmin or
	// RoleViewer.
	User, Role string
	// CSRF is the token every state-changing request of the session
	// must carry.
	CSRF     string
	flashMsg string // shown once on the next page
	created  time.Time
	seen     time.Time
}

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

// start makes a session for user and returns its cookie token.
func (s *sessions) start(user, role string, now time.Time) (string, *session) {
	tok := newToken()
	ss := &session{User: user, Role: role, CSRF: newToken(), created: now, seen: now}
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
	return &cp
}

// valid reports whether tok's session is alive, without marking it seen
// (an open event stream does not keep a session alive).
func (s *sessions) valid(tok string, now time.Time) bool {
	k := sha256.Sum256([]byte(tok))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	return ss != nil && ss.alive(now)
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

// Login rate limit: a token bucket per remote IP of loginBurst attempts,
// refilled at one per loginRefill.
const (
	loginBurst  = 10
	loginRefill = 6 * time.Second
	// maxLimited bounds the addresses tracked; full buckets are dropped
	// first.
	maxLimited = 10000
)

// limiter rate-limits login attempts per remote IP. It is safe for
// concurrent use.
type limiter struct {
	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// allow takes a token from ip's bucket, and reports whether there was one.
func (l *limiter) allow(ip string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*bucket{}
	}
	b := l.m[ip]
	if b == nil {
		if len(l.m) >= maxLimited {
			for k, v := range l.m {
				if v.level(now) >= loginBurst {
					delete(l.m, k)
				}
			}
			if len(l.m) >= maxLimited {
				return false // under attack from many addresses: nobody new logs in until buckets refill
			}
		}
		b = &bucket{tokens: loginBurst, at: now}
		l.m[ip] = b
	}
	b.tokens, b.at = b.level(now), now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
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
