package gateway_test

import (
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestConsoleSpendInBrowser drives the Spend page in Chromium
// (console/e2e/spend.mjs): a viewer opens it from the nav while traffic
// flows, the charts carry axes and hover values, a team's budget is drawn
// against its limit, the selectors work, and neither the desktop nor a
// 390 px phone scrolls sideways.
func TestConsoleSpendInBrowser(t *testing.T) {
	t.Parallel() // a browser mostly waits: the five run two at a time, after the package's other tests
	browserTools(t)
	e := startConsoleEnv(t)
	if err := e.g.Ledger().PutTeam(t.Context(), ledger.Team{Name: "research", Budget: 50, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		t.Fatal(err)
	}
	e.runBrowser(t, browserScript{name: "spend.mjs", env: []string{"BUDGET_TEAM=research"},
		shots: []string{"console-spend.png", "console-spend-phone.png"}})
}
