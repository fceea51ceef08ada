// Package console is switchover's web console for the incident, served by
// the admin listener under /console/: the pools and their backends live
// (breaker states, traffic, a chart of traffic by backend), the timeline
// of events, the operator actions, the running configuration with its
// secrets redacted and what a reload would change, the fleet, and keys
// and spend when a store is configured.
//
// Pages are rendered on the server with html/template; a little vanilla
// JavaScript (embedded, like the CSS) asks for confirmations and keeps the
// overview current over Server-Sent Events. Nothing is built at run time.
//
// Security: a login page takes admin.key (role admin), an admin.viewers
// key (role viewer, read-only, or operator: acts on pools) or a single
// sign-on (sso.go); the session is a random
// token in an HttpOnly, SameSite=Strict cookie (Secure over TLS) with a
// server-side expiry; every state-changing request carries the session's
// CSRF token and a same-origin Origin; pages are served with a strict
// Content-Security-Policy; logins are rate-limited per address; and no
// configured secret is ever written (every response is scrubbed of them).
package console

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Options adjust a Console. The zero value is valid.
type Options struct {
	// Logger receives sign-ins, refused sign-ins and refused requests.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of sessions and the login rate limit. Nil means
	// time.Now.
	Now func() time.Time
	// Interval is how often the gateway's status is sampled and the
	// overview's streams are updated. Default 1s.
	Interval time.Duration
	// Samples is how many samples the traffic charts keep. Default 600
	// (ten minutes at the default interval).
	Samples int
}

// Console is the web console's http.Handler. Sampling starts with the
// first signed-in request and runs until the context given to New ends or
// Close. It is safe for concurrent use.
type Console struct {
	gw       Gateway
	log      *slog.Logger
	now      func() time.Time
	sessions sessions
	limit    limiter
	refusals refusals
	sso      ssoState
	samples  *sampler
	mux      *http.ServeMux
}

var _ http.Handler = (*Console)(nil)

// New returns the console of gw.
func New(ctx context.Context, gw Gateway, opts Options) *Console {
	c := &Console{gw: gw, log: opts.Logger, now: opts.Now, sso: ssoState{client: &http.Client{Timeout: ssoTimeout}}}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	size := opts.Samples
	if size <= 0 {
		size = 600
	}
	c.samples = newSampler(ctx, gw, interval, size, c.now)
	c.mux = c.routes()
	return c
}

// Close stops sampling and ends the event streams.
func (c *Console) Close() { c.samples.close() }

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.mux.ServeHTTP(w, r)
}

func (c *Console) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", redirect("/console/"))
	m.HandleFunc("GET /console", redirect("/console/"))
	m.Handle("GET /console/static/", staticHandler())
	m.HandleFunc("GET /favicon.ico", serveFavicon)
	m.HandleFunc("GET /console/login", c.loginPage)
	m.HandleFunc("POST /console/login", c.login)
	m.HandleFunc("POST /console/logout", c.post(RoleViewer, c.logout))
	// Single sign-on (sso.go).
	m.HandleFunc("GET /console/sso/start", c.ssoStart)
	m.HandleFunc("GET /console/sso/callback", c.ssoCallback)
	m.HandleFunc("GET /console/{$}", c.page(c.overview))
	m.HandleFunc("GET /console/events", c.page(c.eventsPage))
	m.HandleFunc("GET /console/config", c.page(c.configPage))
	m.HandleFunc("GET /console/fleet", c.page(c.fleetPage))
	m.HandleFunc("GET /console/keys", c.page(c.keysPage))
	m.HandleFunc("GET /console/requests", c.page(c.requestsPage))
	m.HandleFunc("GET /console/requests/{id}", c.page(c.requestPage))
	m.HandleFunc("GET /console/spend", c.page(c.spendPage))
	m.HandleFunc("GET /console/stream", c.api(c.stream))
	m.HandleFunc("GET /console/api/view", c.api(c.viewJSON))
	// Actions on pools by operators; a reload (an action too) by admins
	// only (act checks it).
	m.HandleFunc("POST /console/actions", c.post(RoleOperator, c.act))
	// Keys and teams managed in the page, by admins (keyadmin.go).
	m.HandleFunc("POST /console/keys/create", c.post(RoleAdmin, c.keyCreate))
	m.HandleFunc("POST /console/keys/edit", c.post(RoleAdmin, c.keyEdit))
	m.HandleFunc("POST /console/keys/rotate", c.post(RoleAdmin, c.keyRotate))
	m.HandleFunc("POST /console/keys/revoke", c.post(RoleAdmin, c.keyRevoke))
	m.HandleFunc("POST /console/teams/put", c.post(RoleAdmin, c.teamPut))
	m.HandleFunc("GET /console/keys/secret", c.page(c.keySecretPage))
	// Anything else: the login for a visitor, not found for a session.
	m.HandleFunc("/console/", c.page(func(w http.ResponseWriter, r *http.Request, s *session) {
		http.NotFound(w, r)
	}))
	return m
}

func redirect(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
}

// session returns the request's live session, or nil. A session whose
// grant the configuration in force no longer gives ends here; one whose
// role it changed takes the new role.
func (c *Console) session(r *http.Request) (*session, string) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil, ""
	}
	ss := c.sessions.get(ck.Value, c.now())
	if ss == nil {
		return nil, ck.Value
	}
	switch role := c.regrant(ss.grant); role {
	case "":
		c.sessions.end(ck.Value)
		c.log.Info("console: session ended: the configuration no longer lets it sign in", "user", ss.User)
		return nil, ck.Value
	case ss.Role:
	default:
		c.sessions.setRole(ck.Value, role)
		c.log.Info("console: role changed by the configuration", "user", ss.User, "from", ss.Role, "to", role)
		ss.Role = role
	}
	return ss, ck.Value
}

// keepSession is the event stream's check at each update: the session
// is alive (and marked seen) and its grant still holds.
func (c *Console) keepSession(tok string) bool {
	now := c.now()
	if !c.sessions.keep(tok, now) {
		return false
	}
	g, ok := c.sessions.grantOf(tok, now)
	if !ok || c.regrant(g) == "" {
		c.sessions.end(tok)
		return false
	}
	return true
}

// page wraps a page's handler: without a session, the visitor is sent to
// the login page.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, tok := c.session(r)
		if s == nil {
			http.Redirect(w, r, "/console/login", http.StatusSeeOther)
			return
		}
		s.flashMsg = c.sessions.takeFlash(tok)
		h(w, r, s)
	}
}

// api wraps a handler of the page's scripts: without a session, 401.
func (c *Console) api(h func(http.ResponseWriter, *http.Request, *session, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, tok := c.session(r)
		if s == nil {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		h(w, r, s, tok)
	}
}

// post wraps a state-changing handler: it needs a session (401), a
// same-origin request (403), the session's CSRF token in the csrf form
// field or the X-CSRF-Token header (403) and a role that allows need
// (403).
func (c *Console) post(need string, h func(http.ResponseWriter, *http.Request, *session, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
		s, tok := c.session(r)
		if s == nil {
			http.Error(w, "not signed in", http.StatusUnauthorized)
			return
		}
		if !sameOrigin(r) {
			c.refused("console:cross_site_refused", "a cross-site request of "+s.User+" to "+r.URL.Path+" was refused", "user", s.User, "path", r.URL.Path)
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		got := r.Header.Get("X-CSRF-Token")
		if got == "" {
			got = r.PostFormValue("csrf")
		}
		if !sameToken(got, s.CSRF) {
			c.refused("console:csrf_refused", "a request of "+s.User+" to "+r.URL.Path+" without its CSRF token was refused", "user", s.User, "path", r.URL.Path)
			http.Error(w, "missing or wrong CSRF token: reload the page", http.StatusForbidden)
			return
		}
		if !allows(s.Role, need) {
			c.roleRefused(w, r, s, need)
			return
		}
		h(w, r, s, tok)
	}
}

// roleRefused answers 403 to a request that needs the role need.
func (c *Console) roleRefused(w http.ResponseWriter, r *http.Request, s *session, need string) {
	c.refused("console:"+s.Role+"_refused", "an action of "+s.Role+" "+s.User+" ("+r.URL.Path+") was refused: it needs the role "+need, "user", s.User, "role", s.Role, "path", r.URL.Path)
	http.Error(w, "the role "+s.Role+" cannot do this: it needs "+need, http.StatusForbidden)
}

// sameOrigin reports whether r is not a cross-site request: Sec-Fetch-Site,
// which browsers set and pages cannot, when sent says same-origin; Origin,
// when sent, is the host r was sent to, or "null" (what a form of the
// console's pages sends under their no-referrer policy) with
// Sec-Fetch-Site: same-origin.
func sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" {
		return false
	}
	switch o := r.Header.Get("Origin"); o {
	case "":
		return true
	case "null":
		return site == "same-origin"
	default:
		return strings.EqualFold(o, "http://"+r.Host) || strings.EqualFold(o, "https://"+r.Host)
	}
}
