package tenant

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// TestSoftBudgetAlertsOncePerPeriodAndRefusesNothing: a soft budget of
// $4 on $10 an hour sends one Soft alert when spend reaches $4 (and none
// at 80%), admits on past it, sends the 100% alert at $10, and alerts
// again in the next hour; a team's soft budget alerts for the team.
func TestSoftBudgetAlertsOncePerPeriodAndRefusesNothing(t *testing.T) {
	c := fakeclock.New()
	l := NewLimiter(c, NewSpend(c, nil), func(string) (Limits, bool) {
		return Limits{Budget: 100, BudgetPeriod: "day", SoftBudget: 2.5}, true
	})
	var alerts []BudgetAlert
	l.OnBudget = func(a BudgetAlert) { alerts = append(alerts, a) }
	p := &Principal{ID: "k", Team: "t", Limits: Limits{Budget: 10, BudgetPeriod: "1h", SoftBudget: 4}}
	spendTo := func(n int) {
		t.Helper()
		for range n {
			tk, r := l.Admit(p, "", "", 0)
			if r != nil {
				t.Fatalf("refused at a soft budget: %v", r)
			}
			tk.Done(0, false, 1)
		}
	}
	spendTo(2)
	if len(alerts) != 0 {
		t.Fatalf("alerts at $2: %+v", alerts)
	}
	spendTo(1) // $3: the team's soft budget of $2.50
	if len(alerts) != 1 || alerts[0].Subject != "team" || !alerts[0].Soft || alerts[0].SoftBudget != 2.5 || alerts[0].Threshold != 0.025 {
		t.Fatalf("alerts at $3: %+v, want the team's soft alert", alerts)
	}
	spendTo(1) // $4: the key's
	if len(alerts) != 2 || alerts[1].Subject != "key" || !alerts[1].Soft || alerts[1].SoftBudget != 4 || alerts[1].Threshold != 0.4 {
		t.Fatalf("alerts at $4: %+v, want the key's soft alert", alerts)
	}
	spendTo(5) // $9: past 80%, no alert in place of the soft one
	if len(alerts) != 2 {
		t.Fatalf("alerts at $9: %+v, want none at 80%% with a soft budget", alerts[2:])
	}
	spendTo(1)
	if len(alerts) != 3 || alerts[2].Soft || alerts[2].Threshold != 1 {
		t.Fatalf("alerts at $10: %+v, want the 100%% alert", alerts[2:])
	}
	c.Advance(time.Hour) // the next hour: the key's budget starts again
	spendTo(4)
	if len(alerts) != 4 || !alerts[3].Soft || alerts[3].Subject != "key" || !alerts[3].PeriodStart.Equal(c.Now().Truncate(time.Hour)) {
		t.Fatalf("alerts in the next hour: %+v, want the key's soft alert again", alerts[3:])
	}
}
