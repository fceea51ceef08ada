package gateway

import (
	"os"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/notify"
)

// startNotifications builds the notification sinks of cfg (and
// Options.Sinks), the dispatcher that delivers to them without blocking
// requests, and the tracker that turns changes of each pool's active set
// into notifications. Sinks are fixed at start; a reload changes storm
// thresholds of pools the tracker has not seen yet only.
func (g *Gateway) startNotifications(cfg *config.Config) {
	n := cfg.Notifications
	var sinks []notify.Sink
	for _, w := range n.Webhooks {
		sinks = append(sinks, &notify.Webhook{URL: w.URL.Value(), Secret: w.Secret.Value(), Headers: w.Headers})
	}
	for _, s := range n.Slack {
		sinks = append(sinks, &notify.Slack{URL: s.URL.Value()})
	}
	for _, s := range n.Teams {
		sinks = append(sinks, &notify.Teams{URL: s.URL.Value()})
	}
	for _, e := range n.Exec {
		// The command gets PATH and HOME, not the gateway's environment,
		// which holds provider keys.
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		sinks = append(sinks, &notify.Exec{Command: e.Command, Timeout: e.Timeout.D(), Env: env})
	}
	sinks = append(sinks, g.opts.Sinks...)
	g.notes.notifier = notify.NewDispatcher(notify.DispatcherSettings{
		AttemptTimeout: n.Timeout.D(),
		Attempts:       n.Attempts,
		Logger:         g.Logger,
		Observer: notify.ObserverFunc(func(d notify.Delivery) {
			g.Metrics.Notification(d.Sink, string(d.Notification.Kind), d.Outcome.String())
		}),
	}, sinks...)
	g.notes.tracker = notify.NewTracker(notify.TrackerSettings{
		Clock:          g.opts.Clock,
		FlapWindow:     n.FlapWindow.D(),
		StormThreshold: n.Storm.Failovers,
		StormWindow:    n.Storm.Window.D(),
		StormFor:       g.stormFor,
		Notify:         g.notified,
	})
	go g.notes.tracker.Run(g.life.bg, time.Second)
}

// notified logs a notification, records it in the history and queues it
// for the sinks.
// With a fleet, only the replica that holds the notification lease sends
// the changes of a pool's active set (every replica tracks them, from the
// breaker states they share); an operator's action is sent by the replica
// it was taken on, and a budget's by the replica that took its lease (see
// budgetAlert).
func (g *Gateway) notified(n notify.Notification) {
	if !g.fleet.sends(n) {
		g.Logger.Debug("notification left to the fleet's notifier", "kind", string(n.Kind), "pool", n.Pool)
		g.notes.events.add(Event{At: n.At, Kind: "notification:" + string(n.Kind), Pool: n.Pool, Detail: n.Text + " (sent by the fleet's notifier)"})
		return
	}
	g.Logger.Warn("notification", "kind", string(n.Kind), "pool", n.Pool,
		"from", strings.Join(n.From, ","), "to", strings.Join(n.To, ","), "reason", n.Reason)
	g.addEvent(Event{At: n.At, Kind: "notification:" + string(n.Kind), Pool: n.Pool, Detail: n.Text}, true)
	g.notes.notifier.Enqueue(n)
}

// poolStorms are the pools' storm thresholds of one configuration, by
// pool name.
type poolStorms struct {
	cfg *config.Config
	by  map[string]config.Storm
}

// stormFor is the storm threshold of the pool named pool in the
// configuration in force (zero when none): the tracker asks it for every
// pool a reload records, so it is a map, made once a configuration.
func (g *Gateway) stormFor(pool string) (int, time.Duration) {
	st := g.state.Load()
	if st == nil {
		return 0, 0
	}
	ps := g.notes.storms.Load()
	if ps == nil || ps.cfg != st.Config {
		ps = &poolStorms{cfg: st.Config, by: make(map[string]config.Storm, len(st.Config.Pools))}
		for _, p := range st.Config.Pools {
			ps.by[p.Name] = p.Storm
		}
		g.notes.storms.Store(ps)
	}
	s := ps.by[pool]
	return s.Failovers, s.Window.D()
}
