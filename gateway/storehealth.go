package gateway

import (
	"fmt"
	"sync"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/ledger"
)

// storeHealth is whether the store of keys and usage works: down from a
// failed write until a write succeeds, whatever reads do meanwhile (on a
// full disk reads work and every write fails), and down from a failed
// read until a read succeeds. Before any write, reads alone decide. Each
// change is passed to set (the gauge) under the lock, so that the gauge
// never shows an older state than the last one decided. A storeHealth is
// safe for concurrent use.
type storeHealth struct {
	set func(up bool) // nil: none

	mu          sync.Mutex
	writeFailed bool
	readFailed  bool
	up          bool
}

// wrote records the outcome of a write and returns whether the store is up.
func (h *storeHealth) wrote(ok bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writeFailed = !ok
	return h.updateLocked()
}

// read records the outcome of a read and returns whether the store is up.
func (h *storeHealth) read(ok bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readFailed = !ok
	return h.updateLocked()
}

// Up returns whether the store is up.
func (h *storeHealth) Up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// updateLocked decides and publishes the state. Requires h.mu held; set
// is a gauge's Set, not a callback that could take a lock of ours.
func (h *storeHealth) updateLocked() bool {
	h.up = !h.writeFailed && !h.readFailed
	if h.set != nil {
		h.set(h.up)
	}
	return h.up
}

// usageDropped counts and logs usage records that will never be stored.
func (g *Gateway) usageDropped(n int) {
	g.Metrics.UsageDropped(n)
	g.Logger.Warn("usage store: records dropped, never to be stored", "records", n)
}

// openSpool opens the usage spool sc names (see config.Store.Spool) into
// o, with the records a previous process left in it to store first. With
// none, it warns that a crash loses the buffered records.
func (g *Gateway) openSpool(sc *config.Store, o *ledger.WriterOptions) error {
	path := sc.SpoolPath()
	if path == "" {
		g.Logger.Warn("usage store: no spool (store.spool): a crash loses the usage records not yet stored (up to store.buffer)")
		return nil
	}
	sp, recs, err := ledger.OpenSpool(path)
	if err != nil {
		return fmt.Errorf("store.spool: %w", err)
	}
	if len(recs) > 0 {
		g.Logger.Info("usage spool: storing the records a previous run left", "path", path, "records", len(recs))
	}
	o.Spool, o.Replay = sp, recs
	return nil
}
