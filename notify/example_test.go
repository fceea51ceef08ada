package notify_test

import (
	"context"
	"fmt"
	"time"

	"github.com/switchover-gw/switchover/notify"
)

func ExampleTracker() {
	tr := notify.NewTracker(notify.TrackerSettings{
		Notify: func(n notify.Notification) { fmt.Printf("%s: %s\n", n.Kind, n.Text) },
	})
	pool := func(eastusUp bool) []notify.Member {
		return []notify.Member{
			{Backend: "eastus", Priority: 1, Usable: eastusUp},
			{Backend: "westeurope", Priority: 2, Usable: true},
		}
	}
	at := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	tr.Update("chat-prod", pool(true), "", at) // baseline: silent
	tr.Update("chat-prod", pool(false), "429 quota: 5 failures in 30s, last 429", at.Add(time.Minute))
	tr.Update("chat-prod", pool(false), "still open", at.Add(2*time.Minute)) // no change: silent
	tr.Update("chat-prod", pool(true), "breaker closed: probe succeeded", at.Add(31*time.Minute))
	// Output:
	// failover: Active backend changed on pool chat-prod: eastus → westeurope (failover: traffic left the primary). Reason: 429 quota: 5 failures in 30s, last 429. At 2026-11-30T14:01:00Z. Check the quota and the model version of westeurope.
	// failback: Active backend changed on pool chat-prod: westeurope → eastus (failback: traffic is back on the primary). Reason: breaker closed: probe succeeded. At 2026-11-30T14:31:00Z.
}

func ExampleDispatcher() {
	d := notify.NewDispatcher(notify.DispatcherSettings{},
		&notify.Slack{URL: "https://hooks.slack.com/services/T000/B000/XXXX"},
		&notify.Webhook{URL: "https://ops.example.com/switchover", Secret: "from-a-secret-store"},
	)
	tr := notify.NewTracker(notify.TrackerSettings{Notify: d.Enqueue})
	ctx, stop := context.WithCancel(context.Background())
	go tr.Run(ctx, time.Second)

	// ... the gateway calls tr.Update on breaker transitions and drains,
	// tr.Failover for each request answered by a fallback ...

	stop()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = d.Close(shutdown)
	fmt.Println(d.Stats()[0].Name, d.Stats()[1].Name)
	// Output: slack webhook
}
