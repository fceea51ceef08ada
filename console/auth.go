package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/config"
)

// loginPage shows the login form; a signed-in visitor goes to the
// overview.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if s, _ := c.session(r); s != nil {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.renderLogin(w, http.StatusOK, "")
}

func (c *Console) renderLogin(w http.ResponseWriter, status int, msg string) {
	a := c.gw.Config().Admin
	noKey := a == nil || a.Key == ""
	sso := ""
	if a != nil && a.SSO != nil {
		sso = ssoName(a.SSO)
	}
	c.render(w, status, "login", nil, map[string]any{"Error": msg, "NoAdminKey": noKey && !openAdmin(a), "Open": openAdmin(a), "SSO": sso})
}

// openAdmin reports whether the admin API takes requests without a key
// (admin.allow_no_key, loopback only, no admin.key): the console then
// signs in as admin without one too, since any local client may act
// through the API anyway. The Host, same-origin and CSRF checks still
// hold, so a web page cannot.
func openAdmin(a *config.Admin) bool { return a != nil && a.Key == "" && a.AllowNoKey }

// login checks the key entered and starts a session. Every key is
// checked; failures are limited per address and per key prefix (see
// loginBurst): a correct key is refused (429) only while its own
// prefix is locked, and for at most maxKeyLock. Sign-ins and refused
// ones go to the timeline as well as the log.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	if !sameOrigin(r) {
		c.refused("console:cross_site_refused", "a cross-site sign-in from "+remoteIP(r)+" was refused", "remote", remoteIP(r))
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	ip, now := remoteIP(r), c.now()
	key := strings.TrimSpace(r.PostFormValue("key"))
	user, role, ok := c.credential(key)
	g := keyGrant(key)
	if !ok && key == "" && openAdmin(c.gw.Config().Admin) {
		user, role, ok = "admin (no key: admin.allow_no_key)", RoleAdmin, true
		g = grant{open: true}
	}
	addrLocked, _ := c.limit.locked(addrID(ip), now)
	keyLocked, since := c.limit.locked(prefixID(key), now)
	switch {
	case ok && keyLocked && now.Sub(since) < maxKeyLock:
		c.refused("console:sign_in_locked", "a correct key was refused from "+ip+" for a few seconds: keys that begin as it does failed to sign in too often", "remote", ip, "user", user)
		c.tooMany(w)
		return
	case !ok:
		emptied := c.limit.fail(addrID(ip), now)
		emptied = c.limit.fail(prefixID(key), now) || emptied
		detail := "a sign-in with a wrong key from " + ip + " was refused"
		if emptied {
			detail += "; further wrong keys from there, or that begin as this one, are answered 429 for a while"
		}
		c.refused("console:sign_in_refused", detail, "remote", ip)
		if addrLocked || keyLocked {
			c.tooMany(w)
			return
		}
		c.renderLogin(w, http.StatusUnauthorized, "That key is not the admin key or a viewer's key.")
		return
	}
	if role == RoleAdmin {
		if name := actorName(r.PostFormValue("name")); name != "" {
			user += " (as " + name + ")"
		}
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		c.sessions.end(ck.Value) // a sign-in replaces the browser's session, never adopts it
	}
	tok, _ := c.sessions.startGranted(user, role, g, now)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/console", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed in", "user", user, "role", role, "remote", ip)
	c.recordBy("console:sign_in", user, user+" signed in to the console as "+role+" from "+ip)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// tooMany answers a sign-in refused by the limit.
func (c *Console) tooMany(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "10")
	c.renderLogin(w, http.StatusTooManyRequests, "Too many failed sign-ins; wait a few seconds and try again.")
}

// Recorder is implemented by a Gateway that keeps the console's security
// events in its timeline: sign-ins, refused sign-ins, refused cross-site
// and CSRF-less requests, actions refused to viewers. A Gateway that does
// not implement it has them only in the log.
type Recorder interface {
	Record(kind, detail string)
}

// record puts an event in the gateway's timeline, if it keeps one.
func (c *Console) record(kind, detail string) {
	if rec, ok := c.gw.(Recorder); ok {
		rec.Record(kind, detail)
	}
}

// ActorRecorder is a Recorder that also keeps who an event is by, for
// the gateway's audit trail.
type ActorRecorder interface {
	RecordBy(kind, actor, detail string)
}

// recordBy is record with the event's actor.
func (c *Console) recordBy(kind, actor, detail string) {
	if rec, ok := c.gw.(ActorRecorder); ok {
		rec.RecordBy(kind, actor, detail)
		return
	}
	c.record(kind, detail)
}

// Refusals of each kind reach the timeline at most refusalBurst at once,
// then one per refusalRefill, so that a loop of wrong keys cannot push
// the incident's events (or the other kinds of refusal) out of it; those
// left out are counted in the next one of their kind.
const (
	refusalBurst  = 20
	refusalRefill = 10 * time.Second
)

// refusals is the timeline's budget of refusals, per kind. It is safe for
// concurrent use.
type refusals struct {
	mu sync.Mutex
	m  map[string]*refusalBudget
}

type refusalBudget struct {
	tokens  float64
	at      time.Time
	skipped int
}

// take reports whether a refusal of kind may go to the timeline, and how
// many of its kind were left out before it.
func (f *refusals) take(kind string, now time.Time) (bool, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*refusalBudget{}
	}
	b := f.m[kind]
	if b == nil {
		b = &refusalBudget{tokens: refusalBurst, at: now}
		f.m[kind] = b
	}
	b.tokens = min(refusalBurst, b.tokens+float64(now.Sub(b.at))/float64(refusalRefill))
	b.at = now
	if b.tokens < 1 {
		b.skipped++
		return false, 0
	}
	b.tokens--
	n := b.skipped
	b.skipped = 0
	return true, n
}

// refused logs a refusal and records it in the timeline within its
// budget.
func (c *Console) refused(kind, detail string, attrs ...any) {
	c.log.Warn("console: "+detail, attrs...)
	ok, skipped := c.refusals.take(kind, c.now())
	if !ok {
		return
	}
	if skipped > 0 {
		detail += fmt.Sprintf(" (%d more refusals not listed)", skipped)
	}
	c.record(kind, detail)
}

// actorName is the name an operator gives, made safe to show: letters,
// digits, space and .-_@ only, at most 64 characters.
func actorName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" .-_@", r):
			return r
		}
		return -1
	}, strings.TrimSpace(s))
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.TrimSpace(s)
}

// credential is who key signs in as: "admin" with admin.key, a viewer's
// name (role viewer, or operator if its entry says so) with its key. Every configured key is compared, in constant time.
func (c *Console) credential(key string) (user, role string, ok bool) {
	a := c.gw.Config().Admin
	if a == nil || key == "" {
		return "", "", false
	}
	if a.Key != "" && sameToken(key, a.Key.Value()) {
		user, role, ok = "admin", RoleAdmin, true
	}
	for _, v := range a.Viewers {
		if sameToken(key, v.Key.Value()) && !ok {
			user, role, ok = v.Name, RoleViewer, true
			if v.Role == RoleOperator {
				role = RoleOperator
			}
		}
	}
	return user, role, ok
}

// logout ends the session.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	c.sessions.end(tok)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed out", "user", s.User)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// regrant is the role g gives under the configuration in force, or ""
// when it gives none (the session must end).
func (c *Console) regrant(g grant) string {
	a := c.gw.Config().Admin
	switch {
	case a == nil:
		return ""
	case g.open:
		if openAdmin(a) {
			return RoleAdmin
		}
		return ""
	case g.issuer != "":
		if a.SSO == nil || a.SSO.Issuer != g.issuer || a.SSO.ClientID != g.client {
			return ""
		}
		return mapRole(a.SSO, g.values)
	case g.key == [sha256.Size]byte{}:
		return ""
	}
	if a.Key != "" {
		if h := sha256.Sum256([]byte(a.Key.Value())); subtle.ConstantTimeCompare(h[:], g.key[:]) == 1 {
			return RoleAdmin
		}
	}
	for _, v := range a.Viewers {
		if h := sha256.Sum256([]byte(v.Key.Value())); subtle.ConstantTimeCompare(h[:], g.key[:]) == 1 {
			if v.Role == RoleOperator {
				return RoleOperator
			}
			return RoleViewer
		}
	}
	return ""
}
