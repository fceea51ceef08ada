package gateway_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// TestConsoleSpendInBrowser drives the Spend page in Chromium
// (console/e2e/spend.mjs): a viewer opens it from the nav while traffic
// flows, the charts carry axes and hover values, a team's budget is drawn
// against its limit, the selectors work, and neither the desktop nor a
// 390 px phone scrolls sideways.
func TestConsoleSpendInBrowser(t *testing.T) {
	chromium, node, dir := browserTools(t)
	e := startConsoleEnv(t)
	shots := t.TempDir()
	if os.Getenv("SWITCHOVER_UPDATE_SCREENSHOTS") == "1" {
		shots, _ = filepath.Abs(filepath.Join("..", "docs", "img"))
	}
	if err := e.g.Ledger().PutTeam(t.Context(), ledger.Team{Name: "research", Budget: 50, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second) // a guard against a hang, not a timing assertion
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "spend.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CONSOLE_URL="+e.admin, "VIEWER_KEY="+consoleViewerKey, "BUDGET_TEAM=research",
		"SHOT_DIR="+shots, "CHROMIUM="+chromium)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("browser:\n%s", out.String())
	if err != nil {
		t.Fatalf("browser test failed: %v", err)
	}
	for _, f := range []string{"console-spend.png", "console-spend-phone.png"} {
		if st, err := os.Stat(filepath.Join(shots, f)); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s: %v", f, err)
		}
	}
}
