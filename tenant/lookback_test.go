package tenant

import (
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// TestRequestLookback: how far back budgets read per-request records,
// which store.retention must not delete: end users' budgets over their
// whole period (a month is 31 days), budgets of hours over their period
// and the day before its start, budgets of whole days not at all (they
// read the daily sums).
func TestRequestLookback(t *testing.T) {
	const day = 24 * time.Hour
	key := func(l Limits, pools ...PoolBudget) []ConfigKey {
		return []ConfigKey{{Secret: "app-secret-0123456789", Principal: Principal{ID: "app", Name: "app", Limits: l, PoolBudgets: pools}}}
	}
	for _, tc := range []struct {
		name  string
		keys  []ConfigKey
		teams []Team
		orgs  []Org
		want  time.Duration
	}{
		{"no budgets", key(Limits{RPM: 10}), nil, nil, 0},
		{"whole days read the daily sums", key(Limits{Budget: 5, BudgetPeriod: "90d"}), []Team{{Name: "t", Limits: Limits{Budget: 1, BudgetPeriod: "month"}}}, nil, 0},
		{"a key's hours", key(Limits{Budget: 5, BudgetPeriod: "1000h"}), nil, nil, 1000*time.Hour + day},
		{"a pool budget's hours", key(Limits{}, PoolBudget{Pool: "chat", Budget: 1, Period: "12h"}), nil, nil, 12*time.Hour + day},
		{"an end user's month", key(Limits{EndUser: EndUserLimits{Budget: 1, BudgetPeriod: "month"}}), nil, nil, 31 * day},
		{"a team's end users' 60 days", key(Limits{Budget: 5, BudgetPeriod: "1000h"}),
			[]Team{{Name: "t", Limits: Limits{EndUser: EndUserLimits{Budget: 1, BudgetPeriod: "60d"}}}}, nil, 60 * day},
		{"an end user without a budget", key(Limits{EndUser: EndUserLimits{RPM: 5, BudgetPeriod: "60d"}}), nil, nil, 0},
		{"an organisation's hours", nil, []Team{{Name: "t", Org: "o"}}, []Org{{Name: "o", Limits: Limits{Budget: 9, BudgetPeriod: "36h"}}}, 36*time.Hour + day},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDirectory(fakeclock.New(), nil)
			d.SetConfig(tc.keys, tc.teams)
			d.SetOrgs(tc.orgs)
			if got := d.RequestLookback(); got != tc.want {
				t.Fatalf("RequestLookback = %v, want %v", got, tc.want)
			}
		})
	}
}
