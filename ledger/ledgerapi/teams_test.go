package ledgerapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestTeams: PUT creates and replaces teams (absent fields are none), GET
// lists them by name, bad input is 400 naming the field.
func TestTeams(t *testing.T) {
	e := newEnv(t, openSQLite(t))
	var list struct{ Teams []ledger.Team }
	raw := e.json("GET", "/admin/teams", "", http.StatusOK, &list)
	if strings.TrimSpace(string(raw)) != `{
  "teams": []
}` {
		t.Fatalf("no teams: %s, want an empty list", raw)
	}
	var put struct{ Team ledger.Team }
	e.json("PUT", "/admin/teams/research", `{"rpm":"1k","tpm":50000,"budget":"100/week"}`, http.StatusOK, &put)
	if want := (ledger.Team{Name: "research", RPM: 1000, TPM: 50000, Budget: 100, BudgetPeriod: "week"}); put.Team != want {
		t.Fatalf("PUT answered %+v, want %+v", put.Team, want)
	}
	e.json("PUT", "/admin/teams/infra", `{"budget_usd":2.5,"budget_period":"day"}`, http.StatusOK, nil)
	e.json("PUT", "/admin/teams/research", `{"tpm":"20k"}`, http.StatusOK, nil) // replaces: no rpm, no budget
	e.json("PUT", "/admin/teams/hourly", `{"budget":"5/1h","soft_budget":"$2.5"}`, http.StatusOK, nil)
	e.json("GET", "/admin/teams", "", http.StatusOK, &list)
	want := []ledger.Team{
		{Name: "hourly", Budget: 5, BudgetPeriod: "1h", SoftBudget: 2.5},
		{Name: "infra", Budget: 2.5, BudgetPeriod: "day"},
		{Name: "research", TPM: 20000},
	}
	if !reflect.DeepEqual(list.Teams, want) {
		t.Fatalf("teams = %+v, want %+v", list.Teams, want)
	}
	if n := e.changes.Load(); n != 4 {
		t.Errorf("OnChange called %d times, want 4", n)
	}
	for body, field := range map[string]string{
		`{"rpm":"x"}`:                        "rpm:",
		`{"tpm":-2}`:                         "tpm:",
		`{"budget":"5"}`:                     "budget:",
		`{"budget_usd":5}`:                   "budget_period:",
		`{"max_concurrent":3}`:               `"max_concurrent"`,
		`{"budget":5,"budget_period":"x"}`:   "budget_period:",
		`{"budget":"5/90m"}`:                 "budget:",
		`{"budget":"5/day","soft_budget":5}`: "soft_budget:",
	} {
		var a errorAnswer
		e.json("PUT", "/admin/teams/infra", body, http.StatusBadRequest, &a)
		if !strings.Contains(a.Error.Message, field) {
			t.Errorf("PUT %s: %q does not name %s", body, a.Error.Message, field)
		}
	}
	if !strings.Contains(e.log.String(), `level=WARN msg="admin action" action=team:put team=research`) {
		t.Errorf("no Warn line for the team in the log:\n%s", e.log)
	}
}

// TestKeyWithUnknownTeamIsRefused: a key naming a team that neither the
// store nor the configuration has is refused, 400 naming the team, on
// creation and on change (it would silently get no team limits); a team
// of either source is accepted. Issue 24.
func TestKeyWithUnknownTeamIsRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.StaticTeams = func() []ledger.Team { return []ledger.Team{{Name: "from-file"}} }
		})
		var a errorAnswer
		e.json("POST", "/admin/keys", `{"name":"app","team":"nosuch"}`, http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, `team: no team is named "nosuch"`) {
			t.Errorf("create: %q does not name the team", a.Error.Message)
		}
		if ks, _ := s.Keys(t.Context()); len(ks) != 0 {
			t.Fatalf("the refused key was stored: %+v", ks)
		}
		e.json("PUT", "/admin/teams/stored", `{}`, http.StatusOK, nil)
		var c keyAnswer
		e.json("POST", "/admin/keys", `{"name":"app","team":"stored"}`, http.StatusCreated, &c)
		e.json("PATCH", "/admin/keys/"+c.Key.ID, `{"team":"from-file"}`, http.StatusOK, nil)
		e.json("PATCH", "/admin/keys/"+c.Key.ID, `{"team":"nosuch"}`, http.StatusBadRequest, &a)
		if !strings.HasPrefix(a.Error.Message, `team: no team is named "nosuch"`) {
			t.Errorf("update: %q does not name the team", a.Error.Message)
		}
		e.json("PATCH", "/admin/keys/"+c.Key.ID, `{"team":""}`, http.StatusOK, nil)
		if ks, _ := s.Keys(t.Context()); len(ks) != 1 || ks[0].Team != "" {
			t.Fatalf("stored keys: %+v", ks)
		}
	})
}

// TestTeamsListShowsTheConfigsTeams: GET /admin/teams lists the config
// file's teams with "source":"config" beside the store's, the file's
// winning over a stored team of the same name, and a team of the file
// cannot be set here. Issue 24.
func TestTeamsListShowsTheConfigsTeams(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.StaticTeams = func() []ledger.Team {
				return []ledger.Team{{Name: "research", RPM: 100}, {Name: "apps", Budget: 5, BudgetPeriod: "day"}}
			}
		})
		if err := s.PutTeam(t.Context(), ledger.Team{Name: "research", RPM: 7}); err != nil {
			t.Fatal(err)
		}
		e.json("PUT", "/admin/teams/infra", `{"tpm":"1k"}`, http.StatusOK, nil)
		var a errorAnswer
		e.json("PUT", "/admin/teams/apps", `{"tpm":"1k"}`, http.StatusConflict, &a)
		if !strings.Contains(a.Error.Message, `team "apps" is defined in the config file`) {
			t.Errorf("PUT of a config team: %q", a.Error.Message)
		}
		var list struct{ Teams []ledgerapi.TeamView }
		e.json("GET", "/admin/teams", "", http.StatusOK, &list)
		want := []ledgerapi.TeamView{
			{Team: ledger.Team{Name: "apps", Budget: 5, BudgetPeriod: "day"}, Source: "config"},
			{Team: ledger.Team{Name: "infra", TPM: 1000}, Source: "store"},
			{Team: ledger.Team{Name: "research", RPM: 100}, Source: "config"},
		}
		if !reflect.DeepEqual(list.Teams, want) {
			t.Fatalf("teams = %+v, want %+v", list.Teams, want)
		}
	})
}
