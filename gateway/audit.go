package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// auditBuffer is how many audit entries wait for the store at most; past
// it, entries are dropped (and logged): the timeline still has them.
const auditBuffer = 256

// auditQueue writes the audit trail to the store off the request path:
// operator actions, key and team changes, console sign-ins and refusals.
// It is safe for concurrent use.
type auditQueue struct {
	w    ledger.AuditWriter
	mu   sync.Mutex
	ch   chan ledger.AuditEntry // nil once closed
	done chan struct{}
}

// startAudit starts the queue's writer, if the store keeps an audit trail.
func (g *Gateway) startAudit(store ledger.Store) *auditQueue {
	w, ok := store.(ledger.AuditWriter)
	if !ok {
		return nil
	}
	q := &auditQueue{w: w, ch: make(chan ledger.AuditEntry, auditBuffer), done: make(chan struct{})}
	go func(ch chan ledger.AuditEntry) {
		defer close(q.done)
		for e := range ch {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := q.w.RecordAudit(ctx, e)
			cancel()
			if err != nil {
				g.Metrics.StoreError("audit")
				g.Logger.Warn("audit trail: write failed; the entry is only in the timeline and the log", "action", e.Action, "error", err)
			}
		}
	}(q.ch)
	return q
}

// add queues e; false when the queue is full or closed.
func (q *auditQueue) add(e ledger.AuditEntry) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ch == nil {
		return false
	}
	select {
	case q.ch <- e:
		return true
	default:
		return false
	}
}

// close writes out the queued entries, within ctx.
func (q *auditQueue) close(ctx context.Context) {
	q.mu.Lock()
	if q.ch != nil {
		close(q.ch)
		q.ch = nil
	}
	q.mu.Unlock()
	select {
	case <-q.done:
	case <-ctx.Done():
	}
}

// audit records an entry of the audit trail in the store, if there is
// one: actor is who (never a secret), action the event's kind, target
// what it was on, text what the timeline says.
func (g *Gateway) audit(actor, action, target, text string) {
	if g.ten == nil || g.ten.audit == nil {
		return
	}
	detail, _ := json.Marshal(map[string]string{"text": text})
	if !g.ten.audit.add(ledger.AuditEntry{At: g.now(), Actor: actor, Action: action, Target: target, Detail: detail}) {
		g.Metrics.StoreError("audit")
		g.Logger.Warn("audit trail: queue full or closed; the entry is only in the timeline and the log", "action", action)
	}
}

// RecordBy puts a console security event in the timeline and, by its
// actor, in the audit trail.
func (c consoleGateway) RecordBy(kind, actor, detail string) {
	c.g.addEvent(Event{At: c.g.now(), Kind: kind, Detail: detail}, true)
	c.g.audit(actor, kind, "", detail)
}

// adminAudit serves GET /admin/audit: the stored audit trail, newest
// first, filtered by from and to (RFC 3339; default the last 24 hours),
// actor and action (exact), at most limit (default 100, at most
// ledger.MaxAuditLimit) entries.
func (g *Gateway) adminAudit(w http.ResponseWriter, r *http.Request) {
	store := g.Ledger()
	rd, ok := store.(ledger.AuditReader)
	if !ok {
		writeJSON(w, http.StatusNotFound, apiErr(errors.New("no audit trail: it needs a store (the store block)")))
		return
	}
	v := r.URL.Query()
	q := ledger.AuditQuery{To: g.now().Add(time.Second), Actor: v.Get("actor"), Action: v.Get("action"), Limit: 100}
	q.From = q.To.Add(-24 * time.Hour)
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := v.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, apiErr(errors.New(f.name+": want an RFC 3339 time, like 2026-12-03T09:00:00Z")))
				return
			}
			*f.t = t
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > ledger.MaxAuditLimit {
			writeJSON(w, http.StatusBadRequest, apiErr(errors.New("limit: want 1 to "+strconv.Itoa(ledger.MaxAuditLimit))))
			return
		}
		q.Limit = n
	}
	if !q.To.After(q.From) {
		writeJSON(w, http.StatusBadRequest, apiErr(errors.New("to must be after from")))
		return
	}
	entries, err := rd.Audit(r.Context(), q)
	if err != nil {
		g.Logger.Warn("audit trail: read failed", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, apiErr(errors.New("the store did not answer: "+strings.TrimPrefix(err.Error(), "ledger: "))))
		return
	}
	if entries == nil {
		entries = []ledger.AuditEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}
