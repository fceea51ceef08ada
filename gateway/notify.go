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
		StormFor: func(pool string) (int, time.Duration) {
			if st := g.state.Load(); st != nil {
				for _, p := range st.Config.Pools {
					if p.Name == pool {
						return p.Storm.Failovers, p.Storm.Window.D()
					}
				}
			}
			return 0, 0
		},
		Notify: g.notified,
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
