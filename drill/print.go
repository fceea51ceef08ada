package drill

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// table is a report's table: a header and rows of cells.
type table struct {
	title  string
	header []string
	rows   [][]string
}

func (r *Report) tables() []table {
	budget := table{title: "Budgets (target: at most one request over; even traffic under 2% over)",
		header: []string{"scenario", "store", "replicas", "callers", "sent", "admitted", "refused", "errors", "spent $", "budget $", "over"}}
	for _, b := range r.Budget {
		spent := fmt.Sprintf("%.4f", b.Spent)
		if !b.Recorded {
			spent += " (not all recorded)"
		}
		budget.rows = append(budget.rows, []string{b.Scenario, b.Store, strconv.Itoa(b.Replicas), strconv.Itoa(b.Callers), b.Sent,
			strconv.Itoa(b.Admitted), strconv.Itoa(b.Refused), strconv.Itoa(b.Errors), spent, fmt.Sprintf("%.2f", b.Budget),
			fmt.Sprintf("%+.1f%%", b.Over())})
	}
	rollout := table{title: "Shared rpm through Redis (target: admitted within 10% of allowed)",
		header: []string{"phase", "replicas", "window", "offered", "admitted", "allowed", "admitted/allowed", "refused", "max Retry-After", "errors"}}
	for _, p := range r.Rollout {
		rollout.rows = append(rollout.rows, []string{p.Phase, p.Replicas, p.Window.String(), strconv.Itoa(p.Offered),
			strconv.Itoa(p.Admitted), fmt.Sprintf("%.0f", p.Allowed), fmt.Sprintf("%.0f%%", p.Ratio()),
			strconv.Itoa(p.Refused), p.MaxRetryAfter.String(), strconv.Itoa(p.Errors)})
	}
	var out []table
	for _, t := range []table{budget, rollout} {
		if len(t.rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

func (r *Report) footer() []string {
	out := []string{fmt.Sprintf("started %s, took %v", r.Started.Format(time.RFC3339), r.Duration)}
	for _, s := range r.Skipped {
		out = append(out, "skipped: "+s)
	}
	return out
}

// WriteText writes the report's tables as aligned text.
func WriteText(w io.Writer, r *Report) error {
	for _, t := range r.tables() {
		fmt.Fprintf(w, "%s\n\n", t.title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
		for _, row := range t.rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.footer() {
		fmt.Fprintln(w, l)
	}
	return nil
}

// WriteMarkdown writes the report's tables as Markdown.
func WriteMarkdown(w io.Writer, r *Report) error {
	for _, t := range r.tables() {
		fmt.Fprintf(w, "%s\n\n| %s |\n|%s\n", t.title, strings.Join(t.header, " | "), strings.Repeat(" --- |", len(t.header)))
		for _, row := range t.rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		fmt.Fprintln(w)
	}
	for _, l := range r.footer() {
		if _, err := fmt.Fprintf(w, "%s\n", l); err != nil {
			return err
		}
	}
	return nil
}
