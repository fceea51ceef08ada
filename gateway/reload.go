package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
)

// Reload makes cfg, already validated, the configuration in force, without
// dropping a request: requests in flight finish on the pools they started
// on, new ones take the new pools. A backend configured exactly as before
// is kept as it is (breaker, connections, model version); one whose
// identity (name, type, URL, credentials) is unchanged keeps its breaker
// state and drain. Operators' member overrides stay until reset. The
// listen addresses, log settings, notification sinks and
// server.max_connections need a restart to change (engine.RestartOnly):
// the configuration in force (Config) keeps their running values
// (engine.InForce), so that what it shows is what runs.
func (g *Gateway) Reload(cfg *config.Config) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.state.Load()
	waiting := engine.RestartOnly(old.Config, cfg)
	cfg = engine.InForce(old.Config, cfg)
	st, err := g.build(cfg, old)
	if err != nil {
		g.Metrics.Reload("invalid")
		g.Logger.Error("configuration reload failed; keeping the configuration in force", "error", err)
		return err
	}
	for _, name := range waiting {
		g.Logger.Warn("a setting changed that a reload does not apply; it takes effect at the next restart", "setting", name)
	}
	for _, name := range st.Reload.RemovedPools {
		if g.notes.tracker != nil {
			g.notes.tracker.Forget(name)
		}
	}
	g.publish(st, "configuration reloaded")
	g.Metrics.Reload("ok")
	detail := "configuration reloaded"
	if len(waiting) > 0 {
		detail += "; waiting for a restart: " + strings.Join(waiting, ", ")
	}
	g.addEvent(Event{At: g.now(), Kind: "reload", Detail: detail}, true)
	g.Logger.Info("configuration reloaded", "backends", len(cfg.Backends), "pools", len(cfg.Pools))
	g.logWarnings(cfg)
	return nil
}

// ReloadFile reads Options.Path again and reloads it, and the listeners'
// certificate files (server.tls, admin.tls, server.metrics_tls). An
// invalid file keeps the configuration in force; the error lists its
// problems.
func (g *Gateway) ReloadFile() error {
	// The listeners' certificate files too, whatever their interval.
	g.tlsCerts.check()
	if g.opts.Path == "" {
		return errors.New("no configuration file to reload (the gateway was not started from one)")
	}
	data, err := os.ReadFile(g.opts.Path)
	var cfg *config.Config
	if err == nil {
		g.fileSum.Store(sum(data))
		cfg, err = config.Parse(g.opts.Path, data, os.LookupEnv)
	}
	if err != nil {
		g.Metrics.Reload("invalid")
		g.Logger.Error("configuration reload failed; keeping the configuration in force", "file", g.opts.Path, "error", err)
		g.addEvent(Event{At: g.now(), Kind: "reload", Detail: "invalid configuration, not loaded: " + err.Error()}, true)
		return err
	}
	return g.Reload(cfg)
}

// sum is the hash that tells a changed configuration file.
func sum(b []byte) *[sha256.Size]byte {
	h := sha256.Sum256(b)
	return &h
}

// Watch checks Options.Path every interval (reload.interval) and reloads
// it when its content differs from the content last loaded, until ctx
// ends. A file replaced by a rename (as Kubernetes updates a ConfigMap)
// is followed too.
func (g *Gateway) Watch(ctx context.Context) {
	if g.opts.Path == "" {
		return
	}
	interval := g.Config().Reload.Interval.D()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(g.opts.Path)
		if err != nil {
			continue
		}
		if last := g.fileSum.Load(); last != nil && *last == *sum(data) {
			continue
		}
		g.Logger.Info("configuration file changed; reloading", "file", g.opts.Path)
		g.ReloadFile()
	}
}
