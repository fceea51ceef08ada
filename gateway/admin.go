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

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// ErrNotFound is returned by admin actions naming an unknown pool, backend
// or member.
var ErrNotFound = errors.New("not found")

// Status is what the admin API's GET /admin/status answers: every pool
// with its members' state, and the recent events.
type Status struct {
	At     time.Time    `json:"at"`
	Path   string       `json:"config_file,omitempty"`
	Pools  []PoolStatus `json:"pools"`
	Events []Event      `json:"events"`
	// Fleet is the replicas sharing state with this one, when they do;
	// Events are then the fleet's (this replica's own while the store
	// does not answer).
	Fleet *FleetStatus `json:"fleet,omitempty"`
	// Store is the store of keys and usage, when one is configured.
	Store *StoreStatus `json:"store,omitempty"`
}

// PoolStatus is one pool.
type PoolStatus struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	// Active is the active set: the usable members of the best tier with
	// any usable member, and since when.
	Active      []string       `json:"active"`
	ActiveSince time.Time      `json:"active_since,omitzero"`
	Members     []MemberStatus `json:"members"`
}

// MemberStatus is one member of a pool and its backend.
type MemberStatus struct {
	Backend string `json:"backend"`
	Type    string `json:"type"`
	Region  string `json:"region,omitempty"`
	Model   string `json:"model,omitempty"`
	// Priority and Weight are in force; Overridden is true when an
	// operator changed them.
	Priority     int    `json:"priority"`
	Weight       int    `json:"weight"`
	Overridden   bool   `json:"overridden,omitempty"`
	Drained      bool   `json:"drained"`
	Usable       bool   `json:"usable"`
	ModelVersion string `json:"model_version,omitempty"`
	Breaker      struct {
		State    string    `json:"state"`
		Until    time.Time `json:"until,omitzero"`
		LeftMS   int64     `json:"left_ms,omitempty"`
		Failures int       `json:"failures"`
		Probing  bool      `json:"probing,omitempty"`
	} `json:"breaker"`
	Probe *ProbeStatus `json:"probe,omitempty"`
	// InFlight is the backend's attempts in flight on this replica.
	// Attempts and Errors count this member's attempts since the start
	// (errors: 429, 5xx, timeouts and connection failures), from which
	// the console computes rates by sampling.
	InFlight int64  `json:"in_flight"`
	Attempts uint64 `json:"attempts"`
	Errors   uint64 `json:"errors"`
	// Headroom is the share of its quota the backend last said it has
	// left (0 to 1), when it has said.
	Headroom *float64 `json:"headroom,omitempty"`
	// FirstByte is the cumulative histogram of the backend's attempts'
	// times to first byte, for the console's p95 over a window.
	FirstByte []LatencyBucket `json:"-"`
}

// Status returns the state of every pool and the recent events.
func (g *Gateway) Status() Status {
	st := g.state.Load()
	now := g.now()
	s := Status{At: now, Path: g.opts.Path, Events: g.events.list()}
	var fleetEvents []Event
	if s.Fleet, fleetEvents = g.fleetStatus(); fleetEvents != nil {
		s.Events = mergeEvents(fleetEvents, s.Events, s.Fleet.Replica)
	}
	s.Store = g.storeStatus()
	g.mu.Lock()
	probes := map[string]ProbeStatus{}
	for name, p := range g.probes {
		probes[name] = p.snapshot()
	}
	overrides := map[memberKey]bool{}
	for k := range g.overrides {
		overrides[k] = true
	}
	g.mu.Unlock()
	counts, firstByte := g.attemptCounts()
	for _, pc := range st.cfg.Pools {
		ps := PoolStatus{Name: pc.Name, Aliases: pc.Aliases, Active: []string{}}
		if g.tracker != nil {
			if set, since := g.tracker.Active(pc.Name); set != nil {
				ps.Active, ps.ActiveSince = set, since
			}
		}
		for _, m := range st.pools[pc.Name].Members {
			b := m.Backend
			bc := st.bcfg[b.Name]
			ms := MemberStatus{Backend: b.Name, Type: bc.Type, Region: b.Region, Model: m.Deployment,
				Priority: max(m.Priority, 1), Weight: max(m.Weight, 1), Overridden: overrides[memberKey{pc.Name, b.Name}],
				Drained: b.Drained(), Usable: b.Usable(now), ModelVersion: b.Model()}
			ms.Breaker.State = "disabled"
			if br := b.Breaker; br != nil {
				snap := br.Snapshot()
				ms.Breaker.State, ms.Breaker.Failures, ms.Breaker.Probing = snap.State.String(), snap.Failures, snap.Probing
				if snap.State == breaker.Open {
					ms.Breaker.Until = snap.Until
					ms.Breaker.LeftMS = max(snap.Until.Sub(now).Milliseconds(), 0)
				}
			}
			if p, ok := probes[b.Name]; ok && !p.At.IsZero() {
				ms.Probe = &p // a prober that has not probed yet has nothing to say
			}
			c := counts[memberKey{pc.Name, b.Name}]
			ms.InFlight, ms.Attempts, ms.Errors, ms.FirstByte = b.InFlight(), c[0], c[1], firstByte[b.Name]
			if q, ok := b.Quota.(interface {
				Headroom(time.Time) (float64, bool)
			}); ok {
				if h, known := q.Headroom(now); known {
					ms.Headroom = &h
				}
			}
			ps.Members = append(ps.Members, ms)
		}
		s.Pools = append(s.Pools, ps)
	}
	return s
}

// admin records an operator action: log, metric, history, and a
// notification, so that no change goes unnoticed. from is the replica the
// action was taken on, "" for this one: only there is it notified and
// added to the fleet's history. who, if not "", is the operator who took
// it (the console's signed-in user).
func (g *Gateway) admin(action, pool, backend, detail, from, who string) {
	if who != "" {
		detail += " (by " + who + ")"
	}
	if from != "" {
		detail += " (on replica " + from + ")"
	}
	g.Logger.Warn("admin action", "action", action, "pool", pool, "backend", backend, "detail", detail)
	g.Metrics.Admin(action)
	g.addEvent(Event{At: g.now(), Kind: "admin:" + action, Pool: pool, Backend: backend, Detail: detail}, from == "")
	if g.tracker != nil && from == "" {
		g.tracker.Send(notify.Notification{Kind: "admin", Pool: pool, Reason: "manual: " + detail, At: g.now(),
			Text: fmt.Sprintf("switchover: an operator %s (%s).", detail, g.now().UTC().Format(time.RFC3339))})
	}
}

// Drain stops new traffic to a backend in every pool; requests in flight
// finish. It lasts until Restore, across reloads (and, with shared state,
// on every replica and across restarts).
func (g *Gateway) Drain(backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionDrain, Backend: backend})
}

// Restore undoes Drain.
func (g *Gateway) Restore(backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionRestore, Backend: backend})
}

// ForceBreaker opens a backend's breaker for d (0: its trip) or closes it.
func (g *Gateway) ForceBreaker(backend string, open bool, d time.Duration) error {
	return g.act(g.forceAction(backend, open, d))
}

// forceAction is the action of ForceBreaker.
func (g *Gateway) forceAction(backend string, open bool, d time.Duration) fleet.Action {
	a := fleet.Action{Kind: fleet.ActionForceClosed, Backend: backend}
	if open {
		a.Kind = fleet.ActionForceOpen
		if d > 0 {
			a.Until = g.now().Add(d)
		} else if b := g.Backend(backend); b != nil && b.Breaker != nil {
			if br, ok := b.Breaker.(*breaker.Breaker); ok {
				a.Until = g.now().Add(br.Settings().Trip)
			}
		}
	}
	return a
}

// SetMember changes a member's priority and weight (0 keeps the value in
// force) while an incident lasts; the change survives reloads until
// ResetMember.
func (g *Gateway) SetMember(pool, backend string, priority, weight int) error {
	if priority < 0 || weight < 0 {
		return errors.New("priority and weight must be positive")
	}
	return g.act(fleet.Action{Kind: fleet.ActionSetMember, Pool: pool, Backend: backend, Priority: priority, Weight: weight})
}

// ResetMember drops an operator's change to a member: the configured
// priority and weight apply again.
func (g *Gateway) ResetMember(pool, backend string) error {
	return g.act(fleet.Action{Kind: fleet.ActionResetMember, Pool: pool, Backend: backend})
}

// act performs an operator action taken on this replica and, with shared
// state, hands it to the fleet.
func (g *Gateway) act(a fleet.Action) error { return g.actAs(a, "") }

// actAs is act, recording who took the action.
func (g *Gateway) actAs(a fleet.Action, who string) error {
	if err := g.applyAs(a, "", who); err != nil {
		return err
	}
	a.By = who
	if g.fleet != nil {
		g.fleet.Act(a)
	}
	return nil
}

// applyAs performs operator action a, taken on replica from ("" for this
// one) by who ("" when unknown).
func (g *Gateway) applyAs(a fleet.Action, from, who string) error {
	backend := a.Backend
	switch a.Kind {
	case fleet.ActionDrain, fleet.ActionRestore:
		drain := a.Kind == fleet.ActionDrain
		g.mu.Lock()
		b := g.state.Load().backends[backend]
		if b == nil {
			g.mu.Unlock()
			return fmt.Errorf("backend %q: %w", backend, ErrNotFound)
		}
		if drain == b.Drained() && from != "" {
			g.mu.Unlock()
			return nil // already so: a kept action applied again
		}
		if drain {
			b.Drain()
		} else {
			b.Restore()
		}
		g.Metrics.Drained(backend, drain)
		g.mu.Unlock()
		if drain {
			g.admin("drain", "", backend, "drained backend "+backend, from, who)
			g.updateActive(backend, "manual: "+backend+" drained by an operator")
		} else {
			g.admin("restore", "", backend, "restored backend "+backend, from, who)
			g.updateActive(backend, "manual: "+backend+" restored by an operator")
		}
		return nil
	case fleet.ActionForceOpen, fleet.ActionForceClosed:
		b := g.Backend(backend)
		if b == nil {
			return fmt.Errorf("backend %q: %w", backend, ErrNotFound)
		}
		if b.Breaker == nil {
			return fmt.Errorf("backend %q has its breaker disabled", backend)
		}
		if a.Kind == fleet.ActionForceOpen {
			if !a.Until.IsZero() && !g.now().Before(a.Until) {
				return nil // a kept action that has ended
			}
			if s := b.Breaker.Snapshot(); from != "" && s.State == breaker.Open && s.Until.Equal(a.Until) {
				return nil
			}
			g.admin("breaker_open", "", backend, "forced the breaker of "+backend+" open", from, who)
			g.operatorHold.Store(backend, true)
			b.Breaker.Force(breaker.Open, a.Until, breaker.KindManual, "manual: forced open by an operator")
			return nil
		}
		g.operatorHold.Delete(backend)
		g.admin("breaker_close", "", backend, "forced the breaker of "+backend+" closed", from, who)
		b.Breaker.Force(breaker.Closed, time.Time{}, breaker.KindManual, "manual: forced closed by an operator")
		return nil
	case fleet.ActionSetMember:
		if err := g.changeMember(a.Pool, backend, func(o *override, ok bool) bool {
			if a.Priority > 0 {
				o.priority = a.Priority
			}
			if a.Weight > 0 {
				o.weight = a.Weight
			}
			return true
		}); err != nil {
			return err
		}
		g.admin("set_member", a.Pool, backend, fmt.Sprintf("set %s in pool %s to priority %d, weight %d", backend, a.Pool, a.Priority, a.Weight), from, who)
		return nil
	case fleet.ActionResetMember:
		if err := g.changeMember(a.Pool, backend, func(*override, bool) bool { return false }); err != nil {
			return err
		}
		g.admin("reset_member", a.Pool, backend, fmt.Sprintf("reset %s in pool %s to its configured priority and weight", backend, a.Pool), from, who)
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// changeMember applies f to a member's override (keep reports whether it
// stays) and publishes the rebuilt pool.
func (g *Gateway) changeMember(pool, backend string, f func(o *override, existed bool) (keep bool)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.state.Load()
	var pc *config.Pool
	for i := range old.cfg.Pools {
		if old.cfg.Pools[i].Name == pool {
			pc = &old.cfg.Pools[i]
		}
	}
	if pc == nil {
		return fmt.Errorf("pool %q: %w", pool, ErrNotFound)
	}
	found := false
	for _, m := range pc.Members {
		found = found || m.Backend == backend
	}
	if !found {
		return fmt.Errorf("pool %q has no member %q: %w", pool, backend, ErrNotFound)
	}
	k := memberKey{pool, backend}
	o, existed := g.overrides[k]
	if f(&o, existed) {
		g.overrides[k] = o
	} else {
		delete(g.overrides, k)
	}
	st := &state{cfg: old.cfg, backends: old.backends, bcfg: old.bcfg, pools: map[string]*route.Pool{}}
	for name, p := range old.pools {
		st.pools[name] = p
	}
	st.pools[pool] = g.newPool(*pc, old.backends)
	g.publish(st, "manual: "+backend+" in "+pool+" changed by an operator")
	return nil
}

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
	mux.HandleFunc("GET /admin/events", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, g.events.list()) })
	mux.HandleFunc("POST /admin/backends/{name}/drain", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.Drain(r.PathValue("name")))
	})
	mux.HandleFunc("POST /admin/backends/{name}/restore", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.Restore(r.PathValue("name")))
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
			g.answer(w, g.ForceBreaker(r.PathValue("name"), body.State == "open", d))
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
		g.answer(w, g.SetMember(r.PathValue("pool"), r.PathValue("backend"), body.Priority, body.Weight))
	})
	mux.HandleFunc("POST /admin/pools/{pool}/members/{backend}/reset", func(w http.ResponseWriter, r *http.Request) {
		g.answer(w, g.ResetMember(r.PathValue("pool"), r.PathValue("backend")))
	})
	mux.HandleFunc("POST /admin/reload", func(w http.ResponseWriter, r *http.Request) {
		g.admin("reload", "", "", "asked for a configuration reload", "", "")
		if err := g.ReloadFile(); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, apiErr(err))
			return
		}
		writeJSON(w, http.StatusOK, g.Status())
	})
	g.keysAPI().Register(mux) // /admin/keys, /admin/teams, /admin/usage
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
// The console (/console/ and /) passes the Host check, then console takes
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
		if console != nil && (r.URL.Path == "/" || r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/")) {
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

// adminHostAllowed reports whether r's Host names the admin API: its
// listen host, localhost, 127.0.0.1, [::1], an entry of allowed_hosts
// (with or without its port), or the IP address the connection arrived
// at (an IP literal cannot be rebound).
func adminHostAllowed(a *config.Admin, r *http.Request) bool {
	host := hostOnly(r.Host)
	if host == "" {
		return false
	}
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if h, _, err := net.SplitHostPort(a.Listen); err == nil && h != "" && strings.EqualFold(h, host) {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			return true
		}
	}
	for _, allowed := range a.AllowedHosts {
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
