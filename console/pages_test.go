package console

import (
	"strings"
	"testing"
	"time"
)

// TestPendingFleetActionsShown: operator actions taken on this replica
// while the shared store was out (the status's pending_actions) are shown
// on the fleet page and the overview, where an operator who just took one
// looks; none, nothing is shown.
func TestPendingFleetActionsShown(t *testing.T) {
	e := newEnv(t, false)
	c, _ := e.login(viewerKey)
	set := func(n int) {
		e.gw.mu.Lock()
		e.gw.status.Fleet = &Fleet{Replica: "gw-1", PendingActions: n, Replicas: []Replica{{ID: "gw-1", Seen: time.Now()}}}
		e.gw.mu.Unlock()
		e.c.samples.take() // the overview shows the latest sample
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "1 operator action taken on this replica waits for the shared store"},
		{2, "2 operator actions taken on this replica wait for the shared store"},
	} {
		set(tc.n)
		for _, p := range []string{"/console/fleet", "/console/"} {
			_, page := e.do(c, "GET", p, nil)
			if got := strings.Contains(page, `id="pending-actions"`); got != (tc.want != "") || !strings.Contains(page, tc.want) {
				t.Errorf("%s with %d pending: shown %v, want %q", p, tc.n, got, tc.want)
			}
		}
	}
}
