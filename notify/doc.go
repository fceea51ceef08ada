// Package notify tells people when a pool's traffic moved: it follows which
// backends of each pool take the traffic, turns changes of that "active
// set" into notifications (one per change, never one per request), and
// delivers them to webhooks, Slack, Microsoft Teams and local commands
// without ever blocking the request path.
//
// The package has three parts:
//
//   - [Tracker] receives the pool's member states ([Tracker.Update]) and
//     the failovers of single requests ([Tracker.Failover]) and decides what
//     to say.
//   - [Notification] is what it says, with a human text composed here.
//   - [Dispatcher] queues notifications and delivers them to [Sink]s
//     ([Webhook], [Slack], [Teams], [Exec]) with timeouts and retries.
//
// A gateway wires them as
//
//	d := notify.NewDispatcher(notify.DispatcherSettings{Logger: log}, sinks...)
//	t := notify.NewTracker(notify.TrackerSettings{Notify: d.Enqueue})
//	go t.Run(ctx, time.Second) // lets flapping pools settle without traffic
//	...
//	d.Close(shutdownCtx)
//
// # Active set
//
// A pool's members are grouped in priority tiers (lower number = preferred).
// The primary set is the members of the best tier, usable or not. The active
// set is the usable members of the best tier that has any usable member; it
// is empty when no member is usable. Sets are compared as sets: member order
// does not matter.
//
// # What is sent when
//
// For each pool, with W = FlapWindow (default 2m):
//
//  1. The first Update establishes the baseline and sends nothing.
//  2. An Update whose active set equals the current one sends nothing,
//     however often it is repeated.
//  3. A change of the active set is classified by where the traffic went:
//     to the primary set: "failback"; else from the primary set:
//     "failover"; else (one fallback to another, or to or from an empty
//     set): "change". It is sent at once, with From, To, the reason given
//     to Update and its time, unless rule 4 or 5 applies.
//  4. Flapping starts when a change returns to the set that was active
//     before the current one, less than W after the current one became
//     active, and it is at least the third change within the last W
//     (A→B→A→B). Instead of the plain notification, one "flapping"
//     notification is sent: it names the sets that alternate and counts
//     the changes within the last W. One round trip, an outage and its
//     recovery (A→B→A), is a "failover" and a "failback", however short;
//     A→B→A→B within W is "failover", "failback", "flapping".
//  5. While flapping, changes are absorbed: a further "flapping"
//     notification (with the changes counted within the last W) is sent
//     only for a change at least W after the previous flapping
//     notification, so at most one per W.
//  6. Flapping ends once the active set has not changed for W. Then one
//     settled notification is sent, classified as in rule 3 from the set
//     active before the last change to the current one ("failback" when
//     it settled on the primary set, "failover" when it settled away from
//     it, "change" between fallbacks), with Details["settled"] = "true". Its
//     At is the instant the set had been stable for W. It is sent by the
//     first Update or Tick at or after that instant, so call [Tracker.Run]
//     or [Tracker.Tick] periodically.
//  7. A change after a stable period of W or more is a plain change again
//     (rule 3): a slow A→B, wait, →A gives "failover" then "failback".
//
// Failover storm (the Azure OpenAI game day behind API Management: more than 50 failovers in 5 minutes pages the
// on-call): when the number of [Tracker.Failover] calls for a pool within
// StormWindow (default 5m) exceeds StormThreshold (default 50), one "storm"
// notification is sent. No further storm notification is sent for that
// pool until its count has fallen below the threshold and exceeded it
// again. The count uses one-second buckets (coarser for windows above
// 10 minutes).
//
// "admin" notifications are composed by the gateway for operator actions and
// sent with [Tracker.Send], which keeps them in order with the tracker's own.
//
// # Secrets
//
// Webhook secrets and URLs (Slack and Teams URLs embed their token) are
// never logged nor put in errors: errors name a sink and the URL's scheme
// and host only, and the sinks' String methods print no secret.
package notify
