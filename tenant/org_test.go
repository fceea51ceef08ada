package tenant

import (
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// orgDirectory is a directory with an org acme of two teams, apps and
// data, and a team solo outside it.
func orgDirectory(c *fakeclock.Clock, acme Limits) *Directory {
	d := NewDirectory(c, nil)
	d.SetOrgs([]Org{{Name: "acme", Limits: acme}})
	d.SetConfig(nil, []Team{{Name: "apps", Org: "acme"}, {Name: "data", Org: "acme"}, {Name: "solo"}})
	return d
}

// TestOrgBudgetHoldsAcrossItsTeams: an org's budget is its teams' spend
// together, reserved and refused as a team's is; a team outside it is
// not held to it.
func TestOrgBudgetHoldsAcrossItsTeams(t *testing.T) {
	c := fakeclock.New()
	d := orgDirectory(c, Limits{Budget: 10, BudgetPeriod: "30d"})
	s := NewSpend(c, nil)
	s.SetMembers(d.Members)
	l := NewLimiter(c, s, d.Team)
	l.Orgs = d.Org
	a := &Principal{ID: "a", Team: "apps"}
	b := &Principal{ID: "b", Team: "data"}
	solo := &Principal{ID: "s", Team: "solo"}
	spendOf(t, l, a, 6)
	s.Add("b", "data", 4, c.Now()) // by a key of the other team
	if got := s.Spent("org:acme", c.Now().Add(-time.Hour)); got != 10 {
		t.Fatalf("the org spent %v, want its teams' 10", got)
	}
	for _, p := range []*Principal{a, b} {
		_, r := l.Admit(p, "", "", 0)
		if r == nil || r.Subject != "org" || r.Name != "acme" || r.Code != "budget_exceeded" || !strings.Contains(r.Message, "org acme") {
			t.Fatalf("key %s after the org's $10 of $10: %+v, want the org's budget_exceeded", p.ID, r)
		}
		_, end, _ := BudgetPeriod(Limits{Budget: 10, BudgetPeriod: "30d"}, c.Now())
		if !r.Reset.Equal(end) {
			t.Errorf("Reset %v, want the 30-day block's end %v", r.Reset, end)
		}
	}
	if _, r := l.Admit(solo, "", "", 0); r != nil {
		t.Fatalf("a team outside the org refused: %v", r)
	}
}

// TestOrgRateHoldsAcrossItsTeams: an org's rpm is one bucket for all its
// teams' keys.
func TestOrgRateHoldsAcrossItsTeams(t *testing.T) {
	c := fakeclock.New()
	d := orgDirectory(c, Limits{RPM: 60}) // 10 at once
	l := NewLimiter(c, NewSpend(c, nil), d.Team)
	l.Orgs = d.Org
	keys := []*Principal{{ID: "a", Team: "apps"}, {ID: "b", Team: "data"}}
	admitted := 0
	for i := range 30 {
		tk, r := l.Admit(keys[i%2], "", "", 0)
		if r != nil {
			if r.Subject != "org" || r.Limit != "requests per minute" {
				t.Fatalf("refusal %+v, want the org's rpm", r)
			}
			continue
		}
		tk.Done(0, false, 0)
		admitted++
	}
	if admitted != 10 {
		t.Fatalf("%d admitted at once across the org's teams, want its burst of 10", admitted)
	}
	d.SetOrgs([]Org{{Name: "acme", Limits: Limits{Budget: 5, BudgetPeriod: "12h"}}})
	if ps := d.Periods(); len(ps) != 1 || ps[0] != "12h" {
		t.Errorf("periods %v, want the org's 12h (so that Refresh reads its teams' spend that far)", ps)
	}
}
