package ledgerapi

import (
	"net/http"
	"strings"

	"github.com/switchover-gw/switchover/ledger"
)

// teamBody is the body of PUT /admin/teams/{name}, which replaces the
// team: absent fields are none (unlimited). Numbers or strings as for
// keys.
type teamBody struct {
	RPM          any `json:"rpm"`
	TPM          any `json:"tpm"`
	Budget       any `json:"budget"`
	BudgetUSD    any `json:"budget_usd"`
	BudgetPeriod any `json:"budget_period"`
}

func (h *Handler) listTeams(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	ts, err := s.Teams(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if ts == nil {
		ts = []ledger.Team{}
	}
	writeJSON(w, http.StatusOK, struct {
		Teams []ledger.Team `json:"teams"`
	}{ts})
}

func (h *Handler) putTeam(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	t := ledger.Team{Name: strings.TrimSpace(r.PathValue("name"))}
	if t.Name == "" {
		h.fail(w, r, badField("name", "a team needs a name"))
		return
	}
	if err := checkName("name", t.Name); err != nil {
		h.fail(w, r, err)
		return
	}
	var b teamBody
	if err := decode(r, &b); err != nil {
		h.fail(w, r, err)
		return
	}
	var err error
	if b.RPM != nil {
		if t.RPM, err = count("rpm", b.RPM); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if b.TPM != nil {
		if t.TPM, err = count("tpm", b.TPM); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	var bu budget
	if err := bu.apply(b.Budget, b.BudgetUSD, b.BudgetPeriod); err != nil {
		h.fail(w, r, err)
		return
	}
	t.Budget, t.BudgetPeriod = bu.usd, bu.period
	if err := s.PutTeam(r.Context(), t); err != nil {
		h.fail(w, r, err)
		return
	}
	h.record(r, "team:put", "team "+t.Name, "team", t.Name)
	h.changed()
	writeJSON(w, http.StatusOK, struct {
		Team ledger.Team `json:"team"`
	}{t})
}
