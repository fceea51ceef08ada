package ledgerapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
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
	e.json("GET", "/admin/teams", "", http.StatusOK, &list)
	want := []ledger.Team{
		{Name: "infra", Budget: 2.5, BudgetPeriod: "day"},
		{Name: "research", TPM: 20000},
	}
	if !reflect.DeepEqual(list.Teams, want) {
		t.Fatalf("teams = %+v, want %+v", list.Teams, want)
	}
	if n := e.changes.Load(); n != 3 {
		t.Errorf("OnChange called %d times, want 3", n)
	}
	for body, field := range map[string]string{
		`{"rpm":"x"}`:                      "rpm:",
		`{"tpm":-2}`:                       "tpm:",
		`{"budget":"5"}`:                   "budget:",
		`{"budget_usd":5}`:                 "budget_period:",
		`{"max_concurrent":3}`:             `"max_concurrent"`,
		`{"budget":5,"budget_period":"x"}`: "budget_period:",
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
