package console

import (
	"net/http"
	"strings"

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
	c.render(w, status, "login", nil, map[string]any{"Error": msg, "NoAdminKey": noKey && !openAdmin(a), "Open": openAdmin(a)})
}

// openAdmin reports whether the admin API takes requests without a key
// (admin.allow_no_key, loopback only, no admin.key): the console then
// signs in as admin without one too, since any local client may act
// through the API anyway. The Host, same-origin and CSRF checks still
// hold, so a web page cannot.
func openAdmin(a *config.Admin) bool { return a != nil && a.Key == "" && a.AllowNoKey }

// login checks the key entered, rate-limited per address, and starts a
// session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	if !sameOrigin(r) {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return
	}
	ip := remoteIP(r)
	if !c.limit.allow(ip, c.now()) {
		c.log.Warn("console: too many sign-in attempts", "remote", ip)
		w.Header().Set("Retry-After", "10")
		c.renderLogin(w, http.StatusTooManyRequests, "Too many attempts from your address; wait a few seconds and try again.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	user, role, ok := c.credential(key)
	if !ok && key == "" && openAdmin(c.gw.Config().Admin) {
		user, role, ok = "admin (no key: admin.allow_no_key)", RoleAdmin, true
	}
	if !ok {
		c.log.Warn("console: sign-in refused", "remote", ip)
		c.renderLogin(w, http.StatusUnauthorized, "That key is not the admin key or a viewer's key.")
		return
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		c.sessions.end(ck.Value) // a sign-in replaces the browser's session, never adopts it
	}
	tok, _ := c.sessions.start(user, role, c.now())
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/console", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed in", "user", user, "role", role, "remote", ip)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

// credential is who key signs in as: "admin" with admin.key, a viewer's
// name with its key. Every configured key is compared, in constant time.
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
