package gateway

import (
	"sync"
	"time"

	"github.com/switchover-gw/switchover/config"

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

// secretCache keeps the secrets of the configuration in force, read
// again only when it changes (a reload). Safe for concurrent use.
type secretCache struct {
	mu     sync.Mutex
	cfg    *config.Config
	values []string
}

// secretValues are the secrets of the configuration in force, which the
// usage writer redacts word for word from kept bodies.
func (g *Gateway) secretValues(t *tenancy) []string {
	cfg := g.Config()
	c := &t.secrets
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg != cfg {
		c.cfg, c.values = cfg, cfg.SecretValues()
	}
	return c.values
}
