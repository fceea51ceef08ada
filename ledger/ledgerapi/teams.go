package ledgerapi

import (
	"fmt"
	"net/http"
	"slices"
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
	SoftBudget   any `json:"soft_budget"`
}

// TeamView is a team as the API lists it: its limits and where it comes
// from (SourceStore or SourceConfig).
type TeamView struct {
	ledger.Team
	Source string `json:"source"`
}

// teams returns every team in force, by name: the configuration's, and
// the store's that no team of the configuration hides.
func (h *Handler) teams(r *http.Request, s ledger.Store) ([]TeamView, error) {
	ts, err := s.Teams(r.Context())
	if err != nil {
		return nil, err
	}
	var static []ledger.Team
	if h.StaticTeams != nil {
		static = h.StaticTeams()
	}
	out := make([]TeamView, 0, len(ts)+len(static))
	for _, t := range static {
		out = append(out, TeamView{Team: t, Source: SourceConfig})
	}
	for _, t := range ts {
		if !slices.ContainsFunc(static, func(c ledger.Team) bool { return c.Name == t.Name }) {
			out = append(out, TeamView{Team: t, Source: SourceStore})
		}
	}
	slices.SortFunc(out, func(a, b TeamView) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// checkTeam refuses a key's team that no team in force has: the key
// would silently get no team limits. "" (no team) is fine.
func (h *Handler) checkTeam(r *http.Request, s ledger.Store, team string) error {
	if team == "" {
		return nil
	}
	ts, err := h.teams(r, s)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Name == team {
			return nil
		}
	}
	return badField("team", "no team is named %q; create it first (PUT /admin/teams/{name}, switchover teams set NAME) or add it under teams in the config file", team)
}

func (h *Handler) listTeams(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	ts, err := h.teams(r, s)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Teams []TeamView `json:"teams"`
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
	if h.StaticTeams != nil && slices.ContainsFunc(h.StaticTeams(), func(c ledger.Team) bool { return c.Name == t.Name }) {
		h.fail(w, r, fmt.Errorf("%w: team %q is defined in the config file; change it there", errReadOnly, t.Name))
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
	if err := soft(b.SoftBudget, &t.SoftBudget, t.Budget); err != nil {
		h.fail(w, r, err)
		return
	}
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
