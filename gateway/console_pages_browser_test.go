package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// TestConsolePagesInBrowser drives every console page and every action
// in Chromium (console/e2e/pages.mjs), at a desktop's and a phone's
// width, as a visitor, the admin and a viewer, on one gateway and one
// browser: each page shows its key content without scrolling sideways
// or an error in the page; the admin's drain, restore, forced breaker,
// reprioritisation, weight change, reset, reload, key creation, edit,
// rotation and revocation and team creation and edit each go through a
// confirmation to a result; the filters narrow; a viewer sees no action
// and its forged posts get 403. With SWITCHOVER_UPDATE_SCREENSHOTS=1 it
// writes docs/img/console-keys-phone.png.
func TestConsolePagesInBrowser(t *testing.T) {
	t.Parallel() // a browser mostly waits: the five run two at a time, after the package's other tests
	browserTools(t)
	e := startConsoleEnv(t)
	k, _, err := ledger.NewKey(t.Context(), e.g.Ledger(), ledger.Key{Name: "research-bot", Team: "research", RPM: 600, Budget: 50, BudgetPeriod: "month"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.g.Ledger().PutTeam(t.Context(), ledger.Team{Name: "research", Budget: 50, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		t.Fatal(err)
	}
	e.runBrowser(t, browserScript{name: "pages.mjs", env: []string{"STORE_KEY_ID=" + k.ID, "FILE_KEY=app"},
		shots: []string{"console-keys-phone.png"}})
	// What the pages did is what the gateway recorded, by the admin; each
	// of the viewer's nine forged posts was refused and recorded so.
	var set, reset, byViewer, refused int
	for _, ev := range e.g.Status().Events {
		switch {
		case ev.Kind == "admin:set_member" && strings.HasSuffix(ev.Detail, "(by admin)"):
			set++
		case ev.Kind == "admin:reset_member" && strings.HasSuffix(ev.Detail, "(by admin)"):
			reset++
		case strings.HasPrefix(ev.Kind, "admin:") && strings.Contains(ev.Detail, "oncall-viewer"):
			byViewer++
		case ev.Kind == "console:viewer_refused":
			refused++
		}
	}
	if set != 4 || reset != 4 || byViewer != 0 || refused != 9 {
		t.Errorf("events: %d member changes and %d resets by admin (want 4 and 4), %d actions by the viewer (want 0), %d refusals (want 9): %+v",
			set, reset, byViewer, refused, e.g.Status().Events)
	}
	if b := e.g.Backend("westeurope"); b == nil || b.Drained() {
		t.Error("westeurope is drained after the page restored it")
	}
}
