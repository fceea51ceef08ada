package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/proxy"
)

// AdminHandler serves the admin API, and the web console under
// /console/ (see package console).
func (g *Gateway) AdminHandler() http.Handler {
	h, _ := g.adminHandler()
	return h
}

// adminHandler is AdminHandler and a function that ends the console's
// live streams, for the server's shutdown.
func (g *Gateway) adminHandler() (http.Handler, func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, g.Status()) })
	mux.HandleFunc("GET /admin/events", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, g.notes.events.list()) })
	mux.HandleFunc("GET /admin/audit", g.adminAudit)
	mux.HandleFunc("POST /admin/backends/{name}/drain", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.actAs(fleet.Action{Kind: fleet.ActionDrain, Backend: r.PathValue("name")}, g.actor(r)))
	})
	mux.HandleFunc("POST /admin/backends/{name}/restore", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.actAs(fleet.Action{Kind: fleet.ActionRestore, Backend: r.PathValue("name")}, g.actor(r)))
	})
	mux.HandleFunc("POST /admin/backends/{name}/breaker", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			State string `json:"state"`
			For   string `json:"for"`
		}
		if err := decode(r, &body); err != nil {
			writeJSON(w, http.StatusBadRequest, apiErr(err))
			return
		}
		var d time.Duration
		if body.For != "" {
			var err error
			if d, err = time.ParseDuration(body.For); err != nil || d < 0 {
				writeJSON(w, http.StatusBadRequest, apiErr(fmt.Errorf("for: %q is not a duration such as 5m", body.For)))
				return
			}
		}
		switch body.State {
		case "open", "closed":
			g.answer(w, g.actAs(g.forceAction(r.PathValue("name"), body.State == "open", d), g.actor(r)))
		default:
			writeJSON(w, http.StatusBadRequest, apiErr(fmt.Errorf("state must be open or closed, not %q", body.State)))
		}
	})
	mux.HandleFunc("POST /admin/pools/{pool}/members/{backend}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Priority int `json:"priority"`
			Weight   int `json:"weight"`
		}
		if err := decode(r, &body); err != nil {
			writeJSON(w, http.StatusBadRequest, apiErr(err))
			return
		}
		if body.Priority == 0 && body.Weight == 0 {
			writeJSON(w, http.StatusBadRequest, apiErr(errors.New("give a priority or a weight (1 or more)")))
			return
		}
		if body.Priority < 0 || body.Weight < 0 {
			writeJSON(w, http.StatusBadRequest, apiErr(errors.New("priority and weight must be positive")))
			return
		}
		g.answer(w, g.actAs(fleet.Action{Kind: fleet.ActionSetMember, Pool: r.PathValue("pool"), Backend: r.PathValue("backend"), Priority: body.Priority, Weight: body.Weight}, g.actor(r)))
	})
	mux.HandleFunc("POST /admin/pools/{pool}/members/{backend}/reset", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.actAs(fleet.Action{Kind: fleet.ActionResetMember, Pool: r.PathValue("pool"), Backend: r.PathValue("backend")}, g.actor(r)))
	})
	mux.HandleFunc("POST /admin/reload", func(w http.ResponseWriter, r *http.Request) {
		g.admin("reload", "", "", "asked for a configuration reload", "", g.actor(r))
		if err := g.ReloadFile(); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, apiErr(err))
			return
		}
		writeJSON(w, http.StatusOK, g.Status())
	})
	mux.HandleFunc("POST /admin/cache/purge", g.purgeCache) // cache.go
	mux.Handle("GET /metrics", g.Metrics.Handler())         // behind the admin API's Host check and key
	g.keysAPI().Register(mux)                               // /admin/keys, /admin/teams, /admin/usage
	con := g.newConsole()
	return g.guardAdmin(mux, con), con.Close
}

// adminServer is the admin API's http.Server, with the API's header, read
// and idle timeouts: a slow client holds no admin connection either.
func (g *Gateway) adminServer() *http.Server {
	s := g.Config().Server
	h, stop := g.adminHandler()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(),
		ReadTimeout:       s.ReadTimeout.D(),
		IdleTimeout:       s.IdleTimeout.D(),
		MaxHeaderBytes:    1 << 20,
	}
	srv.RegisterOnShutdown(stop) // the console's event streams end, so the shutdown need not wait for them
	return srv
}

// guardAdmin refuses what a web page in an operator's browser could send,
// then checks the key:
//   - a Host the admin API is not known by: 403 (DNS rebinding, where a
//     page's own name resolves to 127.0.0.1 and it reads /admin/status);
//   - an Origin other than the admin API's own: 403 (cross-site requests);
//   - a POST, PUT or PATCH whose Content-Type is not application/json:
//     415 (a form or
//     a text/plain fetch, which a browser sends cross-site without asking);
//   - a missing or wrong key: 401, unless admin.allow_no_key is set.
//
// The console (/console/, / and /favicon.ico) passes the Host check, then console takes
// it: it has its own login, session, Origin and CSRF checks (its pages'
// forms send "Origin: null" under their no-referrer policy).
func (g *Gateway) guardAdmin(next, console http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := g.Config().Admin
		if a == nil {
			a = &config.Admin{} // served without configuration: a key is needed and none exists
		}
		if !adminHostAllowed(a, r) {
			writeJSON(w, http.StatusForbidden, apiErr(fmt.Errorf("host %q is not a name of this admin API (add it to admin.allowed_hosts)", truncate(r.Host, 100))))
			return
		}
		if console != nil && (r.URL.Path == "/" || r.URL.Path == "/favicon.ico" || r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/")) {
			console.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			writeJSON(w, http.StatusForbidden, apiErr(fmt.Errorf("cross-origin request from %q refused", truncate(o, 100))))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeJSON(w, http.StatusUnsupportedMediaType, apiErr(errors.New("send POST requests with Content-Type: application/json")))
				return
			}
		}
		switch {
		case a.Key != "":
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !proxy.NewKey("admin", a.Key.Value()).Match(got) {
				writeJSON(w, http.StatusUnauthorized, apiErr(errors.New("missing or wrong admin key (Authorization: Bearer KEY)")))
				return
			}
		case !a.AllowNoKey:
			writeJSON(w, http.StatusUnauthorized, apiErr(errors.New("the admin API has no key configured (admin.key)")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// adminHostAllowed reports whether r's Host names the admin API (see
// hostAllowed).
func adminHostAllowed(a *config.Admin, r *http.Request) bool {
	return hostAllowed(a.Listen, a.AllowedHosts, r)
}

// hostAllowed reports whether r's Host names the listener on listen: its
// listen host, localhost, 127.0.0.1, [::1], an entry of allowed (with or
// without its port), or the IP address the connection arrived at (an IP
// literal cannot be rebound). The admin API and, without keys, the API
// refuse other names (DNS rebinding).
func hostAllowed(listen string, allowedHosts []string, r *http.Request) bool {
	host := hostOnly(r.Host)
	if host == "" {
		return false
	}
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if h, _, err := net.SplitHostPort(listen); err == nil && h != "" && strings.EqualFold(h, host) {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			return true
		}
	}
	for _, allowed := range allowedHosts {
		if _, _, err := net.SplitHostPort(allowed); err == nil {
			if strings.EqualFold(allowed, r.Host) { // host:port: exactly
				return true
			}
		} else if strings.EqualFold(strings.Trim(allowed, "[]"), host) {
			return true
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// hostOnly is the host of a host[:port], without brackets, in lower case.
func hostOnly(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		h = hostport
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// sameOrigin reports whether origin (scheme://host[:port]) is the admin
// API itself, as the request's Host names it.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// answer writes the status after a successful action, or its error.
func (g *Gateway) answer(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, g.Status())
	case errors.Is(err, ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiErr(err))
	default:
		writeJSON(w, http.StatusBadRequest, apiErr(err))
	}
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %v", err)
	}
	return nil
}

// apiErr is the admin API's error body, {"error":{"message":"…"}}, the
// same as its keys, teams and usage routes answer.
func apiErr(err error) map[string]map[string]string {
	return map[string]map[string]string{"error": {"message": err.Error()}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
