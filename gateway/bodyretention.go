package gateway

import (
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// runBodyRetention starts store.body_retention's deletion of the request
// log's kept bodies (7 days by default), apart from the rows' retention:
// a round at start and every hour, on the gateway's clock, until the
// gateway stops. With store.body_retention "0" the bodies go with their
// rows and nothing runs.
func (g *Gateway) runBodyRetention(t *tenancy) {
	if t.store == nil || t.bodyRetention <= 0 {
		return
	}
	r := ledger.NewRetention(t.store, ledger.RetentionOptions{Keep: ledger.MinRetention, Clock: g.opts.Clock})
	keep := t.bodyRetention
	t.bodiesRetained = make(chan struct{})
	go func() {
		defer close(t.bodiesRetained)
		r.RunBodies(g.life.bg, keep, func(n int, before time.Time, err error) {
			if n > 0 {
				g.Logger.Info("request log: deleted kept bodies older than store.body_retention", "deleted", n,
					"before", before.UTC().Format(time.RFC3339), "body_retention", keep.String())
			}
			if err != nil {
				g.Metrics.StoreError("body_retention")
				g.Logger.Warn("request log: deleting old bodies failed; the next round tries again", "error", err)
			}
		})
	}()
}
