package gameday

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchover-gw/switchover/load"
)

// failures renders failures by kind: "429:239 timeout:3".
func failures(s load.Summary) string {
	var parts []string
	for _, k := range s.FailureKinds() {
		parts = append(parts, fmt.Sprintf("%s:%d", k, s.Failures[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// row is one table row, the same for text and Markdown; cached adds the
// from-cache column (header's).
func row(r RunResult, cached bool) []string {
	s := r.Summary
	cpr := "-"
	if s.Upstream != nil {
		cpr = fmt.Sprintf("%.2f", s.Upstream.CallsPerRequest)
	}
	cols := []string{
		r.Setup,
		formatPercent(s.SuccessRate),
		formatDuration(s.Latency.P50),
		formatDuration(s.Latency.P95),
		formatDuration(s.Latency.P99),
		fmt.Sprintf("%.2f/s", s.Goodput),
		cpr,
	}
	if cached {
		cols = append(cols, fmt.Sprint(s.FromCache))
	}
	cols = append(cols,
		fmt.Sprint(s.Failovers),
		failures(s),
	)
	if o := r.Outage; o != nil {
		cols = append(cols, outageFailed(o), formatDuration(o.Moved), formatDuration(o.Benched), formatDuration(o.Back), formatDuration(o.Closed))
	}
	return cols
}

// outageFailed is "3/121": failed of the requests in flight during the
// outage.
func outageFailed(o *OutageResult) string {
	return fmt.Sprintf("%d/%d", o.Failed, o.Requests)
}

// noiseLine describes a run's noise load: "5 requests, 0 answered, 429:5,
// 15 model calls".
func noiseLine(s *load.Summary) string {
	line := fmt.Sprintf("%d requests, %d answered", s.Requests, s.Succeeded)
	if f := failures(*s); f != "-" {
		line += ", " + f
	}
	if s.Upstream != nil {
		line += fmt.Sprintf(", %d model calls", s.Upstream.Calls)
	}
	return line
}

// writeNoise lists each run's noise load, for a scenario that has one.
func writeNoise(w io.Writer, sc ScenarioResult) {
	if len(sc.Runs) == 0 || sc.Runs[0].Noise == nil {
		return
	}
	fmt.Fprintln(w, "   noise (key noise; not in the table above):")
	for _, run := range sc.Runs {
		if run.Noise != nil {
			fmt.Fprintf(w, "     %s: %s\n", run.Setup, noiseLine(run.Noise))
		}
	}
}

func header(sc ScenarioResult) []string {
	h := []string{"setup", "success", "p50", "p95", "p99", "goodput", "calls/req"}
	if sc.Cached {
		h = append(h, "from cache")
	}
	h = append(h, "failovers", "failures")
	if len(sc.Runs) > 0 && sc.Runs[0].Outage != nil {
		h = append(h, "failed in outage", "moved after", "benched after", "back after", "closed after")
	}
	return h
}

func scaleNote(sc ScenarioResult) string {
	if sc.Compress == 1 {
		return "real time"
	}
	return fmt.Sprintf("compressed %gx: quotas, rates, trips and fault times scaled; latency and timeouts not", sc.Compress)
}

// WriteText prints each scenario as a table for a terminal.
func WriteText(w io.Writer, r *Report) error {
	for i, sc := range r.Scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s: %s\n", sc.Title, sc.Load)
		fmt.Fprintf(w, "   %s\n", scaleNote(sc))
		if sc.Targets != "" {
			fmt.Fprintf(w, "   targets: %s\n", sc.Targets)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header(sc), "\t"))
		for _, run := range sc.Runs {
			fmt.Fprintln(tw, strings.Join(row(run, sc.Cached), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		writeNoise(w, sc)
		if len(sc.Runs) > 0 && sc.Runs[0].Outage != nil {
			writeWindows(w, sc)
			writeNotes(w, sc)
			writeWaits(w, sc)
		}
	}
	return nil
}

// writeWindows lists, per run, each fault window of the outage region:
// its calls per request and what the clients waited on it.
func writeWindows(w io.Writer, sc ScenarioResult) {
	fmt.Fprintf(w, "   per fault window of %s (calls: every call the regions received; waited: requests over 2x the fault-free p95, wait beyond its p50):\n", sc.Runs[0].Outage.Primary)
	for _, run := range sc.Runs {
		fmt.Fprintf(w, "     %s:\n", run.Setup)
		for i, x := range run.Windows {
			fmt.Fprintf(w, "       %d. %s-%s %s: %s\n", i+1, formatDuration(x.From), formatDuration(x.To), x.Mode, windowLine(x))
		}
	}
}

// windowLine is "181 requests, 1.04 calls/req (188 calls), 3 waited 9.1 s".
func windowLine(x WindowResult) string {
	calls := "calls not measured"
	if x.Calls >= 0 {
		calls = fmt.Sprintf("%.2f calls/req (%d calls)", x.CallsPerRequest, x.Calls)
	}
	return fmt.Sprintf("%d requests, %s, %d waited %s", x.Requests, calls, x.Waited, formatDuration(x.Wait))
}

// writeNotes lists what each run told people, for the outage scenario:
// the notifications a webhook would have received.
func writeNotes(w io.Writer, sc ScenarioResult) {
	fmt.Fprintln(w, "   notifications sent:")
	for _, run := range sc.Runs {
		var parts []string
		for _, n := range run.Notifications {
			parts = append(parts, fmt.Sprintf("%s at %s (%s -> %s)", n.Kind, formatDuration(n.At), setText(n.From), setText(n.To)))
		}
		if len(parts) == 0 {
			parts = []string{"none"}
		}
		if len(parts) > 4 {
			parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
		}
		fmt.Fprintf(w, "     %s: %s\n", run.Setup, strings.Join(parts, ", "))
	}
}

// writeWaits says, for the outage scenario, how long the requests in
// flight during the outage waited at most, and what the refusals among
// them told the client: how many said when to come back, and the longest
// wait they asked for.
func writeWaits(w io.Writer, sc ScenarioResult) {
	fmt.Fprintln(w, "   waits and refusals in the outage:")
	for _, run := range sc.Runs {
		o := run.Outage
		if o == nil {
			continue
		}
		line := fmt.Sprintf("longest wait %s; %d refused with 503/429", formatDuration(o.LongestWait), o.Refused)
		if o.Refused > 0 {
			line += fmt.Sprintf(", %d with Retry-After (longest %s)", o.WithRetryAfter, formatDuration(o.LongestRetryAfter))
		}
		fmt.Fprintf(w, "     %s: %s\n", run.Setup, line)
	}
}

func setText(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

// WriteMarkdown prints the report as Markdown tables.
func WriteMarkdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "# switchover game day\n\n%s, %s. `%s`\n", r.Started.Format(time.RFC3339), r.Machine, r.Command)
	for _, sc := range r.Scenarios {
		fmt.Fprintf(w, "\n## %s\n\n%s\n\nLoad: %s (%s).\n\n", sc.Title, sc.Description, sc.Load, scaleNote(sc))
		if sc.Targets != "" {
			fmt.Fprintf(w, "Targets: %s\n\n", sc.Targets)
		}
		h := header(sc)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(h, " | "), strings.Repeat(" --- |", len(h)))
		for _, run := range sc.Runs {
			cols := row(run, sc.Cached)
			for i := range cols {
				cols[i] = strings.ReplaceAll(cols[i], "|", `\|`)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cols, " | "))
		}
		if len(sc.Runs) > 0 && sc.Runs[0].Noise != nil {
			fmt.Fprintln(w)
			writeNoise(w, sc)
		}
		if len(sc.Runs) > 0 && sc.Runs[0].Outage != nil {
			fmt.Fprintln(w)
			writeWindows(w, sc)
			writeNotes(w, sc)
			writeWaits(w, sc)
		}
	}
	return nil
}

// WriteJSON writes the report (without per-request samples) as JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
