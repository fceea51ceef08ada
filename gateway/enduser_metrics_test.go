package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/ledger"
)

// TestEndUserMetricsCountTrackedEndUsers: switchover_end_users counts
// the end users the gateway keeps limits for (two here; a request
// without one adds none), and switchover_end_users_evicted_total is
// exported at 0 while the table has room.
func TestEndUserMetricsCountTrackedEndUsers(t *testing.T) {
	extra := stores[0].yaml(t) + "teams:\n  - {name: apps, end_user_limits: {rpm: 100}}\n"
	e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
	_, secret, err := ledger.NewKey(t.Context(), e.gw.Ledger(), ledger.Key{Name: "app", Team: "apps"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i, who := range []string{"alice@example.com", "bob", "alice@example.com", ""} {
		admitted(t, e.url, secret, who, i+1)
	}
	var m string
	poll.Until(t, 10*time.Second, func() bool {
		m = scrape(t, e.gw)
		return strings.Contains(m, "\nswitchover_end_users 2\n")
	}, func() string {
		return fmt.Sprintf("switchover_end_users is not 2:\n%s", grepLines(m, "switchover_end_users"))
	})
	if !strings.Contains(m, "\nswitchover_end_users_evicted_total 0\n") {
		t.Fatalf("switchover_end_users_evicted_total is not 0:\n%s", grepLines(m, "switchover_end_users"))
	}
}
