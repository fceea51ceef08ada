package ledgerapi

import (
	"encoding/csv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/ledger"
)

// groupings are the values "by" takes, in ledger's SpendQuery.By.
var groupings = []string{ledger.ByKey, ledger.ByTeam, ledger.ByPool, ledger.ByBackend, ledger.ByModel, ledger.ByDay, ledger.ByHour, ledger.ByTag, ledger.ByEndUser}

// Groupings returns the values "by" takes, in ledger's SpendQuery.By, in
// the order error messages list them. Each call returns a fresh slice,
// which the caller may change.
func Groupings() []string { return slices.Clone(groupings) }

// Usage is the JSON answer of GET /admin/usage.
type Usage struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// By is the grouping, in the order asked; empty for one total row.
	By    []string          `json:"by"`
	Rows  []ledger.SpendRow `json:"rows"`
	Total ledger.SpendRow   `json:"total"`
}

// usage answers GET /admin/usage?from=&to=&by=&key=&team=&tag=&end_user=&format=;
// by may be repeated.
func (h *Handler) usage(w http.ResponseWriter, r *http.Request, s ledger.Store) {
	q := r.URL.Query()
	now := h.now().UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	var err error
	if v := q.Get("from"); v != "" {
		if from, err = parseTime("from", v); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if v := q.Get("to"); v != "" {
		if to, err = parseTime("to", v); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if !to.After(from) {
		h.fail(w, r, badField("to", "%s is not after from (%s); to is exclusive", to.Format(time.RFC3339), from.Format(time.RFC3339)))
		return
	}
	by, err := parseBy(q["by"])
	if err != nil {
		h.fail(w, r, err)
		return
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "csv" {
		h.fail(w, r, badField("format", "%q is not json or csv", format))
		return
	}
	tag := q.Get("tag")
	if tag != "" {
		if err := labels.CheckTag(tag); err != nil {
			h.fail(w, r, badField("tag", "%v", err))
			return
		}
	}
	endUser := q.Get("end_user")
	if len(endUser) > ledger.MaxEndUser {
		h.fail(w, r, badField("end_user", "is %d bytes, longer than any end user kept (%d)", len(endUser), ledger.MaxEndUser))
		return
	}
	rows, err := s.Spend(r.Context(), ledger.SpendQuery{From: from, To: to, By: by, Key: q.Get("key"), Team: q.Get("team"), Tag: tag, EndUser: endUser})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if format == "csv" {
		writeCSV(w, by, rows)
		return
	}
	if rows == nil {
		rows = []ledger.SpendRow{}
	}
	writeJSON(w, http.StatusOK, Usage{From: from, To: to, By: by, Rows: rows, Total: Total(rows)})
}

// parseTime reads a date (2026-12-01, UTC midnight) or an RFC 3339 time.
func parseTime(field, v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, badField(field, "%q is neither a date such as 2026-12-01 nor an RFC 3339 time", v)
	}
	return t.UTC(), nil
}

// parseBy reads the groupings of every "by" parameter, each a
// comma-separated list (?by=key,team and ?by=key&by=team are the same);
// repeats count once.
func parseBy(vs []string) ([]string, error) {
	by := []string{}
	for b := range strings.SplitSeq(strings.Join(vs, ","), ",") {
		b = strings.ToLower(strings.TrimSpace(b))
		if b == "" || slices.Contains(by, b) {
			continue
		}
		if !slices.Contains(groupings, b) {
			return nil, badField("by", "%q is not one of %s", b, strings.Join(groupings, ", "))
		}
		by = append(by, b)
	}
	return by, nil
}

// Total sums rows; its grouping fields are empty. Costs are summed in
// nano-USD, as the store keeps them, so the total is exact.
func Total(rows []ledger.SpendRow) ledger.SpendRow {
	var t ledger.SpendRow
	var nano int64
	for _, r := range rows {
		t.Requests += r.Requests
		t.Failovers += r.Failovers
		t.PromptTokens += r.PromptTokens
		t.CompletionTokens += r.CompletionTokens
		t.CachedTokens += r.CachedTokens
		t.ReasoningTokens += r.ReasoningTokens
		nano += int64(math.Round(r.Cost * 1e9))
	}
	t.Cost = float64(nano) / 1e9
	return t
}

// CSVHeader is the header line of the CSV answer for grouping by: the
// grouping columns, then the sums.
func CSVHeader(by []string) []string {
	return append(slices.Clone(by), "requests", "failovers", "prompt_tokens", "completion_tokens",
		"cached_tokens", "reasoning_tokens", "cost_usd")
}

// Group returns the value of grouping field b in r ("2026-12-01" for day,
// "2026-12-01T08:00:00Z" for hour).
func Group(r ledger.SpendRow, b string) string {
	switch b {
	case ledger.ByKey:
		return r.Key
	case ledger.ByTeam:
		return r.Team
	case ledger.ByPool:
		return r.Pool
	case ledger.ByBackend:
		return r.Backend
	case ledger.ByModel:
		return r.Model
	case ledger.ByTag:
		return r.Tag
	case ledger.ByEndUser:
		return r.EndUser
	case ledger.ByDay:
		if r.Day.IsZero() {
			return ""
		}
		return r.Day.UTC().Format(time.DateOnly)
	case ledger.ByHour:
		if r.Hour.IsZero() {
			return ""
		}
		return r.Hour.UTC().Format(time.RFC3339)
	}
	return ""
}

func writeCSV(w http.ResponseWriter, by []string, rows []ledger.SpendRow) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write(CSVHeader(by))
	for _, r := range rows {
		rec := make([]string, 0, len(by)+7)
		for _, b := range by {
			rec = append(rec, textCell(Group(r, b)))
		}
		rec = append(rec, itoa(r.Requests), itoa(r.Failovers), itoa(r.PromptTokens), itoa(r.CompletionTokens),
			itoa(r.CachedTokens), itoa(r.ReasoningTokens), strconv.FormatFloat(r.Cost, 'f', -1, 64))
		_ = cw.Write(rec)
	}
	cw.Flush() // an error is the client's going away: nothing to do
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// textCell makes a CSV cell of text that callers chose (a model, an end
// user, a team or key name): one that starts with = + - @, a tab or a
// carriage return is a formula to a spreadsheet, so it gets a leading
// apostrophe, which spreadsheets show as text and do not display
// (OWASP's advice for CSV injection). Tags cannot start so (see
// labels.CheckTag); numbers and times are written as they are.
func textCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
