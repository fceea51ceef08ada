package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
)

// auditBuffer is how many audit entries wait for the store at most (in
// memory, and in the audit spool when there is one); past it, entries are
// dropped (counted in switchover_store_errors_total{op="audit"} and
// logged): the timeline still has them.
const auditBuffer = 4096

// startAudit starts the audit trail's writer, if the store keeps one: a
// ledger.AuditLog whose entries wait in the audit spool (config's
// Store.AuditSpoolPath) while the store fails, and across a restart, as
// usage records do. Without a spool, entries wait in memory only.
func (g *Gateway) startAudit(store ledger.Store, sc *config.Store) (*ledger.AuditLog, error) {
	w, ok := store.(ledger.AuditWriter)
	if !ok {
		return nil, nil
	}
	o := ledger.BatchOptions[ledger.AuditEntry]{
		// Batch 1: each entry is written as soon as it is added (audit
		// entries are few); a backlog after an outage goes one a
		// transaction.
		Buffer: auditBuffer, Batch: 1, Clock: g.opts.Clock,
		OnDrop: func(n int) {
			for range n {
				g.Metrics.StoreError("audit")
			}
			g.Logger.Warn("audit trail: entries dropped, never to be stored; they are only in the timeline and the log", "entries", n)
		},
		OnError: func(err error) {
			g.Metrics.StoreError("audit")
			g.Logger.Warn("audit trail: write failed; the entries wait and are retried", "error", err)
		},
		OnSpoolError: func(err error) {
			g.Metrics.StoreError("spool")
			g.Logger.Warn("audit spool: write failed; the entry waits in memory only", "error", err)
		},
	}
	if path := sc.AuditSpoolPath(); path != "" {
		sp, entries, err := ledger.OpenAuditSpool(path)
		if err != nil {
			return nil, fmt.Errorf("store.spool: audit: %w", err)
		}
		if len(entries) > 0 {
			g.Logger.Info("audit spool: storing the entries a previous run left", "path", path, "entries", len(entries))
		}
		o.Spool, o.Replay = sp, entries
	}
	return ledger.NewAuditLog(w, o), nil
}

// audit records an entry of the audit trail in the store, if there is
// one: actor is who (never a secret), action the event's kind, target
// what it was on, text what the timeline says.
func (g *Gateway) audit(actor, action, target, text string) {
	if g.ten == nil || g.ten.audit == nil {
		return
	}
	detail, _ := json.Marshal(map[string]string{"text": text})
	g.ten.audit.Add(ledger.AuditEntry{At: g.now(), Actor: actor, Action: action, Target: target, Detail: detail})
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
