package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

type fakeEndUsers struct {
	n       int
	evicted int64
}

func (f *fakeEndUsers) Len() int       { return f.n }
func (f *fakeEndUsers) Evicted() int64 { return f.evicted }

// TestEndUserMetrics: switchover_end_users and
// switchover_end_users_evicted_total read the end-user table at each
// scrape, 0 without one, and are in Names.
func TestEndUserMetrics(t *testing.T) {
	m := New()
	for _, name := range []string{"switchover_end_users", "switchover_end_users_evicted_total"} {
		if n, err := testutil.GatherAndCount(m.Registry, name); err != nil || n != 1 {
			t.Fatalf("%s: %d series, %v; want 1 before any end user", name, n, err)
		}
	}
	if got := testutil.ToFloat64(m.tenancy().endUsers); got != 0 {
		t.Fatalf("switchover_end_users = %v without a table, want 0", got)
	}
	src := &fakeEndUsers{n: 3}
	m.EndUsers(src)
	src.n, src.evicted = 7, 2
	if got := testutil.ToFloat64(m.tenancy().endUsers); got != 7 {
		t.Fatalf("switchover_end_users = %v, want 7", got)
	}
	if got := testutil.ToFloat64(m.tenancy().evicted); got != 2 {
		t.Fatalf("switchover_end_users_evicted_total = %v, want 2", got)
	}
	m.EndUsers(nil)
	if got := testutil.ToFloat64(m.tenancy().endUsers); got != 0 {
		t.Fatalf("switchover_end_users = %v after EndUsers(nil), want 0", got)
	}
	names := map[string]bool{}
	for _, n := range m.Names() {
		names[n] = true
	}
	if !names["switchover_end_users"] || !names["switchover_end_users_evicted_total"] {
		t.Fatalf("Names lacks the end-user metrics: %v", m.Names())
	}
}
