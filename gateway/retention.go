package gateway

import (
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// runRetention starts store.retention's deletion of old per-request usage
// records and store.audit_retention's of old audit entries, when a store
// and either retention are configured (never those a
// budget still reads: see Directory.RequestLookback): a round at start
// and every hour, on the gateway's clock, until the gateway stops. Every
// replica of a fleet runs it; their deletes of the same rows are
// harmless.
func (g *Gateway) runRetention(t *tenancy) {
	if t.store == nil || (t.retention <= 0 && t.auditRetention <= 0) {
		return
	}
	r := ledger.NewRetention(t.store, ledger.RetentionOptions{Keep: t.retention, Clock: g.opts.Clock,
		// The audit trail ages on its own setting (400 days by default).
		AuditKeep: t.auditRetention,
		OnAuditRound: func(n int, before time.Time, err error) {
			if n > 0 {
				g.Logger.Info("audit retention: deleted audit entries older than store.audit_retention", "deleted", n,
					"before", before.UTC().Format(time.RFC3339), "retention", t.auditRetention.String())
			}
			if err != nil {
				g.Metrics.StoreError("retention")
				g.Logger.Warn("audit retention: delete failed; the next round tries again", "error", err)
			}
		},
		// Budgets that sum per-request records (end users', and periods
		// of hours) keep theirs whatever store.retention says.
		Hold: t.dir.RequestLookback,
		OnRound: func(n int, before time.Time, err error) {
			if n > 0 {
				g.Metrics.UsagePruned(n)
				g.Logger.Info("usage retention: deleted request records older than store.retention", "deleted", n,
					"before", before.UTC().Format(time.RFC3339), "retention", t.retention.String())
			}
			if err != nil {
				g.Metrics.StoreError("retention")
				g.Logger.Warn("usage retention: delete failed; the next round tries again", "error", err)
			}
		}})
	t.retained = make(chan struct{})
	go func() {
		defer close(t.retained)
		r.Run(g.life.bg)
	}()
}
