package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
)

// overview is the live page: pools, members, charts.
func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	st, v := c.samples.current()
	c.render(w, http.StatusOK, "overview", s, map[string]any{"View": v, "Fleet": st.Fleet})
}

// eventFilter is the events page's filter: kind (a prefix: "admin"
// matches "admin:drain"), pool, backend and text.
type eventFilter struct{ Kind, Pool, Backend, Text string }

func (f eventFilter) match(e Event) bool {
	return (f.Kind == "" || e.Kind == f.Kind || strings.HasPrefix(e.Kind, f.Kind+":")) &&
		(f.Pool == "" || e.Pool == f.Pool) && (f.Backend == "" || e.Backend == f.Backend) &&
		(f.Text == "" || strings.Contains(strings.ToLower(e.Detail), strings.ToLower(f.Text)))
}

// eventsPage is the timeline, newest first, filtered.
func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	f := eventFilter{Kind: q.Get("kind"), Pool: q.Get("pool"), Backend: q.Get("backend"), Text: q.Get("q")}
	st := c.gw.Status()
	// A restart empties the timeline: before its first event, show the
	// store's audit trail.
	before := c.now().Add(time.Second)
	if len(st.Events) > 0 {
		before = st.Events[0].At
	}
	older := c.storedAudit(r, before)
	stored := len(older) > 0
	st.Events = append(older, st.Events...)
	kinds, pools, backends := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var shown []Event
	sent := notificationsOf(st.Events)
	var sentShown [][]string
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := st.Events[i]
		kinds[e.Kind] = true
		if k, _, ok := strings.Cut(e.Kind, ":"); ok {
			kinds[k] = true
		}
		if e.Pool != "" {
			pools[e.Pool] = true
		}
		if e.Backend != "" {
			backends[e.Backend] = true
		}
		if f.match(e) {
			shown = append(shown, e)
			sentShown = append(sentShown, sent[i])
		}
	}
	for _, p := range st.Pools {
		pools[p.Name] = true
		for _, m := range p.Members {
			backends[m.Backend] = true
		}
	}
	c.render(w, http.StatusOK, "events", s, map[string]any{
		"Filter": f, "Events": shown, "Sent": sentShown, "Total": len(st.Events), "Stored": stored,
		"Kinds": sortedKeys(kinds), "Pools": sortedKeys(pools), "Backends": sortedKeys(backends),
	})
}

// storedAudit is the newest 200 entries of the store's audit trail of the
// 30 days before before, oldest first as the timeline is, or none
// without a store.
func (c *Console) storedAudit(r *http.Request, before time.Time) []Event {
	l, ok := c.gw.(Ledgered)
	if !ok {
		return nil
	}
	rd, ok := l.Ledger().(ledger.AuditReader)
	if !ok {
		return nil
	}
	es, err := rd.Audit(r.Context(), ledger.AuditQuery{From: before.Add(-30 * 24 * time.Hour), To: before, Limit: 200})
	if err != nil {
		c.log.Warn("console: reading the audit trail failed", "error", err)
		return nil
	}
	out := make([]Event, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		var d struct{ Text string }
		_ = json.Unmarshal(e.Detail, &d)
		if e.Actor != "" {
			d.Text += " (by " + e.Actor + ")"
		}
		out = append(out, Event{At: e.At, Kind: e.Action, Detail: d.Text, Replica: "(audit trail)"})
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// configPage is the running configuration, the last reload and what a
// reload would change.
func (c *Console) configPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := c.gw.ReloadPreview()
	var last *Event
	for _, e := range c.gw.Status().Events {
		if e.Kind == "reload" {
			e := e
			last = &e
		}
	}
	applied := p.Applied
	if applied == "" {
		applied = p.Next
	}
	// What a reload would apply, and what of the file waits for a
	// restart (the running value, then the file's).
	d, waiting := diffLines(p.Running, applied), diffLines(applied, p.Next)
	changed := 0
	for _, l := range d {
		if l.Op != ' ' {
			changed++
		}
	}
	if p.Err != "" || p.File == "" {
		d, waiting = nil, nil
	}
	c.render(w, http.StatusOK, "config", s, map[string]any{"Preview": p, "Last": last, "Diff": compact(d, 3), "Changed": changed, "Waiting": compact(waiting, 2)})
}

// fleetPage is the replicas sharing state.
func (c *Console) fleetPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, http.StatusOK, "fleet", s, map[string]any{"Fleet": c.gw.Status().Fleet, "Now": c.now()})
}

// keysData is the keys page: keys, teams and the month's spend.
type keysData struct {
	// FileKeys and FileTeams are the configuration file's (in force):
	// listed, not editable here. Their secrets are never rendered.
	FileKeys  []config.Key
	FileTeams []config.Team
	Store     bool
	// Manage: the session may create, change, rotate and revoke keys
	// and set teams here (an admin, with a store and its admin API).
	Manage bool
	// Metadata: the session sees the keys' metadata, free-form text that
	// may name people (admins only, as end users are).
	Metadata bool
	Err      string
	Keys     []ledger.Key
	Teams    []ledger.Team
	From     time.Time
	// Spend by team, pool, backend and model.
	Spend []spendTable
}

type spendTable struct {
	By   string
	Rows []ledger.SpendRow
}

// byDayAndBackend is the table of spend by day and backend: where a
// failover to a pricier backend shows the day it starts.
const byDayAndBackend = "day and backend"

// Label is the row's value of the grouping.
func (t spendTable) Label(r ledger.SpendRow) string {
	if t.By == byDayAndBackend {
		b := r.Backend
		if b == "" {
			b = "(none)"
		}
		return r.Day.UTC().Format(time.DateOnly) + " · " + b
	}
	v := map[string]string{ledger.ByTeam: r.Team, ledger.ByPool: r.Pool, ledger.ByBackend: r.Backend, ledger.ByModel: r.Model}[t.By]
	if v == "" {
		return "(none)"
	}
	return v
}

// keysPage lists keys and spend, when a store is configured.
func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, s *session) {
	var d keysData
	if cfg := c.gw.Config(); cfg != nil {
		d.FileKeys, d.FileTeams = cfg.Keys, cfg.Teams
	}
	var st ledger.Store
	if l, ok := c.gw.(Ledgered); ok {
		st = l.Ledger()
	}
	if st != nil {
		d.Store = true
		d.Manage = s.Role == RoleAdmin && c.keyManager() != nil
		d.Metadata = s.Role == RoleAdmin
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		d.From, _ = ledger.PeriodStart(ledger.PeriodMonth, c.now())
		var errs []error
		var err error
		d.Keys, err = st.Keys(ctx)
		errs = append(errs, err)
		d.Teams, err = st.Teams(ctx)
		errs = append(errs, err)
		for _, by := range []string{ledger.ByTeam, ledger.ByPool, ledger.ByBackend, ledger.ByModel} {
			rows, err := st.Spend(ctx, ledger.SpendQuery{From: d.From, To: d.From.AddDate(0, 1, 0), By: []string{by}})
			errs = append(errs, err)
			d.Spend = append(d.Spend, spendTable{By: by, Rows: rows})
		}
		rows, err := st.Spend(ctx, ledger.SpendQuery{From: d.From, To: d.From.AddDate(0, 1, 0), By: []string{ledger.ByDay, ledger.ByBackend}})
		errs = append(errs, err)
		d.Spend = append(d.Spend, spendTable{By: byDayAndBackend, Rows: rows})
		if err := errors.Join(errs...); err != nil {
			d.Err = err.Error()
		}
	}
	c.render(w, http.StatusOK, "keys", s, d)
}

// viewJSON answers the overview's state.
func (c *Console) viewJSON(w http.ResponseWriter, r *http.Request, s *session, _ string) {
	c.samples.current()
	w.Header().Set("Content-Type", "application/json")
	w.Write(scrub(c.samples.viewJSON(), c.gw.Config()))
}

// stream sends the overview's state as a "view" event at every sample,
// until the client goes, the session ends or the console closes.
func (c *Console) stream(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	tick, stop := c.samples.subscribe()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func() bool {
		b := c.samples.viewJSON()
		if b == nil {
			return true
		}
		if _, err := fmt.Fprintf(w, "event: view\ndata: %s\n\n", scrub(b, c.gw.Config())); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	fmt.Fprint(w, "retry: 2000\n\n")
	if !send() {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.samples.done():
			return
		case <-tick:
			if !c.keepSession(tok) {
				fmt.Fprint(w, "event: signedout\ndata: {}\n\n")
				fl.Flush()
				return
			}
			if !send() {
				return
			}
		}
	}
}

// act performs the action of a form (or a script's POST) and goes back
// to the page it came from, with what happened as a message.
func (c *Console) act(w http.ResponseWriter, r *http.Request, s *session, tok string) {
	a := Action{Kind: r.PostFormValue("action"), Pool: r.PostFormValue("pool"), Backend: r.PostFormValue("backend")}
	if a.Kind == ActReload && !allows(s.Role, RoleAdmin) {
		c.roleRefused(w, r, s, RoleAdmin)
		return
	}
	var err error
	atoi := func(name string) int {
		v := strings.TrimSpace(r.PostFormValue(name))
		if v == "" || err != nil {
			return 0
		}
		n, e := strconv.Atoi(v)
		if e != nil || n < 0 {
			err = fmt.Errorf("%s: %q is not a number (1 or more)", name, v)
		}
		return n
	}
	a.Priority, a.Weight = atoi("priority"), atoi("weight")
	if f := strings.TrimSpace(r.PostFormValue("for")); f != "" && err == nil {
		if a.For, err = time.ParseDuration(f); err == nil && a.For < 0 {
			err = errors.New("for must not be negative")
		}
	}
	what := describe(a)
	if err == nil {
		switch a.Kind {
		case ActReload:
			err = c.gw.Reload(s.User)
		case ActDrain, ActRestore, ActOpen, ActClose, ActSetMember, ActResetMember:
			err = c.gw.Act(s.User, a)
		default:
			err = fmt.Errorf("unknown action %q", a.Kind)
		}
	}
	msg := "Done: " + what + "."
	status := http.StatusOK
	if err != nil {
		msg = "Failed: " + what + ": " + err.Error()
		status = http.StatusUnprocessableEntity
		c.log.Warn("console: action failed", "user", s.User, "action", a.Kind, "pool", a.Pool, "backend", a.Backend, "error", err)
	} else {
		c.log.Info("console: action", "user", s.User, "action", a.Kind, "pool", a.Pool, "backend", a.Backend)
	}
	// The page it goes back to renders the state the action left.
	c.samples.refresh()
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(scrub(fmt.Appendf(nil, "{%q:%q,%q:%t}\n", "message", msg, "ok", err == nil), c.gw.Config()))
		return
	}
	c.sessions.flash(tok, msg)
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, "/console/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = "/console/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// describe says what action a does, as its confirmation and its message
// do.
func describe(a Action) string {
	switch a.Kind {
	case ActDrain:
		return "drain " + a.Backend + ": no new requests go to it in any pool (requests in flight finish) until it is restored"
	case ActRestore:
		return "restore " + a.Backend + ": it takes new requests again"
	case ActOpen:
		d := "for its breaker's trip time"
		if a.For > 0 {
			d = "for " + a.For.String()
		}
		return "force the breaker of " + a.Backend + " open " + d + ": its pools fail over from it"
	case ActClose:
		return "force the breaker of " + a.Backend + " closed: it takes requests again at once"
	case ActSetMember:
		var parts []string
		if a.Priority > 0 {
			parts = append(parts, fmt.Sprintf("priority %d", a.Priority))
		}
		if a.Weight > 0 {
			parts = append(parts, fmt.Sprintf("weight %d", a.Weight))
		}
		return fmt.Sprintf("set %s in pool %s to %s until reset", a.Backend, a.Pool, strings.Join(parts, ", "))
	case ActResetMember:
		return fmt.Sprintf("reset %s in pool %s to its configured priority and weight", a.Backend, a.Pool)
	case ActReload:
		return "reload the configuration file"
	}
	return a.Kind
}

// causeWindow is how long after an event a notification may be its.
const causeWindow = 5 * time.Second

// notificationsOf finds, for each event of the timeline (oldest first),
// the texts of the notifications it caused: a notification belongs to the
// latest event before it, within causeWindow, that it tells of. An
// operator's action, a budget or a misconfigured backend sends its own
// notification; a change of a pool's active set (failover, failback,
// flapping, storm) is told of the breaker transition, operator action or
// unresponsive backend it names.
func notificationsOf(events []Event) map[int][]string {
	out := map[int][]string{}
	for i, n := range events {
		kind, ok := strings.CutPrefix(n.Kind, "notification:")
		if !ok {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			e := events[j]
			if n.At.Sub(e.At) > causeWindow {
				break
			}
			if strings.HasPrefix(e.Kind, "notification:") || !causes(kind, n, e) {
				continue
			}
			out[j] = append(out[j], n.Detail)
			break
		}
	}
	return out
}

// causes reports whether event e is what notification n (of kind kind)
// tells of.
func causes(kind string, n, e Event) bool {
	switch kind {
	case "admin":
		return strings.HasPrefix(e.Kind, "admin:") && e.Detail != "" && strings.Contains(n.Detail, e.Detail)
	case "budget":
		return e.Kind == "budget" && e.Detail != "" && strings.Contains(n.Detail, e.Detail)
	case "misconfigured":
		return e.Kind == "misconfigured" && e.Backend == n.Backend
	}
	switch {
	case e.Kind == "breaker", e.Kind == "unresponsive", strings.HasPrefix(e.Kind, "admin:"):
		return e.Backend != "" && strings.Contains(n.Detail, e.Backend)
	}
	return false
}
