package gateway

import (
	"errors"
	"net/http"
	"os"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/console"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/ledger"
)

// LatencyBucket is one bucket of a cumulative histogram: Count
// observations of at most UpperBound seconds.
type LatencyBucket struct {
	UpperBound float64
	Count      uint64
}

// newConsole is the web console of this gateway, sampling its status
// until the gateway closes.
func (g *Gateway) newConsole() *console.Console {
	return console.New(g.life.bg, consoleGateway{g}, console.Options{Logger: g.Logger, Now: g.now})
}

// consoleGateway is the gateway as the console sees it.
type consoleGateway struct{ g *Gateway }

var (
	_ console.Gateway    = consoleGateway{}
	_ console.Ledgered   = consoleGateway{}
	_ console.Recorder   = consoleGateway{}
	_ console.KeyManager = consoleGateway{}
)

// KeysAPI is the admin API's key and team routes, as /admin serves them
// (same validation, log lines, events and key refresh), recording who
// (the console's user) as the author of each change.
func (c consoleGateway) KeysAPI(who string) http.Handler {
	h := c.g.keysAPI()
	h.Actor = func(*http.Request) string { return who }
	mux := http.NewServeMux()
	h.Register(mux)
	return mux
}

// Record puts a console security event (a sign-in, a refused one, a
// refused request) in the timeline and the audit trail, by nobody known
// (the user, when there is one, is in the detail).
func (c consoleGateway) Record(kind, detail string) {
	c.g.addEvent(Event{At: c.g.now(), Kind: kind, Detail: detail}, true)
	c.g.audit("", kind, "", detail)
}

// Ledger is the store of keys, teams and usage, or nil without one.
func (c consoleGateway) Ledger() ledger.Store { return c.g.Ledger() }

func (c consoleGateway) Config() *config.Config { return c.g.Config() }

func (c consoleGateway) Status() console.Status {
	s := c.g.Status()
	out := console.Status{At: s.At}
	for _, p := range s.Pools {
		cp := console.Pool{Name: p.Name, Aliases: p.Aliases, Active: p.Active, ActiveSince: p.ActiveSince, ActiveSinceStart: p.ActiveSinceStart}
		for _, m := range p.Members {
			cm := console.Member{Backend: m.Backend, Type: m.Type, Region: m.Region, Model: m.Model,
				Priority: m.Priority, Weight: m.Weight, Overridden: m.Overridden, Drained: m.Drained, Usable: m.Usable,
				Breaker: m.Breaker.State, Until: m.Breaker.Until, Failures: m.Breaker.Failures, Probing: m.Breaker.Probing,
				InFlight: m.InFlight, Attempts: m.Attempts, Errors: m.Errors}
			cm.Left = time.Duration(m.Breaker.LeftMS) * time.Millisecond
			for _, b := range m.FirstByte {
				cm.FirstByte = append(cm.FirstByte, console.Bucket{Le: b.UpperBound, Count: b.Count})
			}
			if m.Headroom != nil {
				cm.Headroom, cm.HeadroomKnown = *m.Headroom, true
			}
			if pr := m.Probe; pr != nil {
				cm.Probe = &console.Probe{Kind: pr.Kind, At: pr.At, Up: pr.Up, Result: pr.Result, Error: pr.Error, Latency: pr.Latency, Failures: pr.Failures}
			}
			cp.Members = append(cp.Members, cm)
		}
		out.Pools = append(out.Pools, cp)
	}
	for _, e := range s.Events {
		out.Events = append(out.Events, console.Event{At: e.At, Kind: e.Kind, Pool: e.Pool, Backend: e.Backend, Detail: e.Detail, Opened: e.Opened, Replica: e.Replica})
	}
	if f := s.Fleet; f != nil {
		out.Fleet = &console.Fleet{Replica: f.Replica, StoreUp: f.StoreUp, Joined: f.Joined, Notifier: f.Notifier, PendingActions: f.PendingActions}
		for _, r := range f.Replicas {
			out.Fleet.Replicas = append(out.Fleet.Replicas, console.Replica{ID: r.ID, Version: r.Version, Started: r.Started, Seen: r.Seen, InFlight: r.InFlight})
		}
	}
	return out
}

func (c consoleGateway) Act(who string, a console.Action) error {
	g := c.g
	switch a.Kind {
	case console.ActDrain:
		return g.actAs(fleet.Action{Kind: fleet.ActionDrain, Backend: a.Backend}, who)
	case console.ActRestore:
		return g.actAs(fleet.Action{Kind: fleet.ActionRestore, Backend: a.Backend}, who)
	case console.ActOpen, console.ActClose:
		return g.actAs(g.forceAction(a.Backend, a.Kind == console.ActOpen, a.For), who)
	case console.ActSetMember:
		if a.Priority < 0 || a.Weight < 0 || (a.Priority == 0 && a.Weight == 0) {
			return errors.New("give a priority or a weight (1 or more)")
		}
		return g.actAs(fleet.Action{Kind: fleet.ActionSetMember, Pool: a.Pool, Backend: a.Backend, Priority: a.Priority, Weight: a.Weight}, who)
	case console.ActResetMember:
		return g.actAs(fleet.Action{Kind: fleet.ActionResetMember, Pool: a.Pool, Backend: a.Backend}, who)
	}
	return errors.New("unknown action " + a.Kind)
}

func (c consoleGateway) Reload(who string) error {
	c.g.admin("reload", "", "", "asked for a configuration reload", "", who)
	return c.g.ReloadFile()
}

// ReloadPreview reads the configuration file as ReloadFile would, and
// compares it with the configuration in force as `switchover check
// -against` does (engine.RestartOnly): what a reload would apply
// (engine.InForce) and what of the file waits for a restart.
func (c consoleGateway) ReloadPreview() console.Preview {
	g := c.g
	running := g.Config()
	p := console.Preview{File: g.opts.Path, Running: console.RedactedYAML(running)}
	if p.File == "" {
		return p
	}
	data, err := os.ReadFile(p.File)
	var next *config.Config
	if err == nil {
		next, err = config.Parse(p.File, data, os.LookupEnv)
	}
	if err != nil {
		p.Err = err.Error()
		return p
	}
	p.Restart = engine.RestartOnly(running, next)
	p.Next = console.RedactedYAML(next)
	p.Applied = console.RedactedYAML(engine.InForce(running, next))
	return p
}

// attemptCounts reads the metrics: each member's attempts and failed
// attempts (429, 5xx, timeouts, connection errors; not 2xx, 4xx or a
// client's cancel), and each backend's histogram of times to first byte.
func (g *Gateway) attemptCounts() (map[memberKey][2]uint64, map[string][]LatencyBucket) {
	counts := map[memberKey][2]uint64{}
	hists := map[string][]LatencyBucket{}
	families, _ := g.Metrics.Registry.Gather()
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, f := range families {
		switch f.GetName() {
		case "switchover_upstream_attempts_total":
			for _, m := range f.GetMetric() {
				k := memberKey{label(m, "pool"), label(m, "backend")}
				n := uint64(m.GetCounter().GetValue())
				c := counts[k]
				c[0] += n
				switch label(m, "result") {
				case "2xx", "4xx", "client_canceled":
				default:
					c[1] += n
				}
				counts[k] = c
			}
		case "switchover_upstream_duration_seconds":
			for _, m := range f.GetMetric() {
				var bs []LatencyBucket
				for _, b := range m.GetHistogram().GetBucket() {
					bs = append(bs, LatencyBucket{UpperBound: b.GetUpperBound(), Count: b.GetCumulativeCount()})
				}
				hists[label(m, "backend")] = bs
			}
		}
	}
	return counts, hists
}
