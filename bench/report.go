package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Report is a finished run: one row per measure, one value per target.
// It is not safe for concurrent use; the run fills it from one goroutine.
type Report struct {
	Date     time.Time `json:"date"`
	Command  string    `json:"command"`
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	Targets  []string  `json:"targets"`
	// Base is the target the ratio columns divide by: nginx when it ran,
	// else direct, else none (no ratio columns).
	Base string `json:"ratio_base,omitempty"`
	Rows []*Row `json:"rows"`
	// Syscalls are strace's counts per request, by target (with
	// -syscalls-detail).
	Syscalls map[string][]SyscallRate `json:"syscalls,omitempty"`
	Notes    []string                 `json:"notes,omitempty"`

	failed map[string]int
}

// Settings are the options a report was made with.
type Settings struct {
	Rounds      int     `json:"rounds"`
	DurationS   float64 `json:"duration_s"`
	Rate        float64 `json:"rate"`
	SyscallRate float64 `json:"syscall_rate"`
	Streams     int     `json:"streams"`
	Chunks      int     `json:"chunks"`
	IntervalMS  float64 `json:"chunk_interval_ms"`
	OpenStreams int     `json:"open_streams"`
	Generator   string  `json:"generator"`
	// Only are the measures run, when not all were.
	Only []string `json:"only,omitempty"`
	// GatewayEnv is what -gateway-env added to the gateway's environment.
	GatewayEnv []string `json:"gateway_env,omitempty"`
}

// SyscallRate is one syscall's calls per request.
type SyscallRate struct {
	Name       string  `json:"name"`
	PerRequest float64 `json:"per_request"`
}

// Row is one measure. Values holds the median over rounds, Rounds each
// round's figure.
type Row struct {
	ID     string               `json:"id"`
	Label  string               `json:"label"`
	Unit   string               `json:"unit"`
	Values map[string]float64   `json:"values"`
	Rounds map[string][]float64 `json:"rounds,omitempty"`

	digits int
	// added rows hold, for direct, its absolute figure and, for the
	// others, what they add to it: no ratio against direct.
	added bool
}

func newReport(o Options) *Report {
	rep := &Report{
		Date:    time.Now().UTC(),
		Command: o.Command,
		Machine: machine(o.Nginx, o.Wrk, o.Strace),
		Settings: Settings{
			Rounds: o.Rounds, DurationS: o.Duration.Seconds(), Rate: o.Rate, SyscallRate: o.SyscallRate,
			Streams: o.Streams, Chunks: o.Chunks, IntervalMS: float64(o.Interval) / float64(time.Millisecond),
			OpenStreams: o.OpenStreams, Generator: "wrk", GatewayEnv: o.GatewayEnv,
		},
		Targets: o.Targets,
		failed:  map[string]int{},
	}
	rep.Settings.Only = o.Only
	if slices.Contains(o.Targets, Direct) {
		rep.Base = Direct
	}
	if o.Wrk == "" {
		rep.Settings.Generator = "built-in closed loop"
	}
	if slices.Contains(o.Targets, Nginx) {
		rep.Base = Nginx
	}
	return rep
}

// row returns the row id, made with label, unit and digits if new.
func (rep *Report) row(id, label, unit string, digits int) *Row {
	for _, r := range rep.Rows {
		if r.ID == id {
			return r
		}
	}
	r := &Row{ID: id, Label: label, Unit: unit, Values: map[string]float64{}, Rounds: map[string][]float64{}, digits: digits}
	rep.Rows = append(rep.Rows, r)
	return r
}

// add records one round's figure of target.
func (r *Row) add(target string, v float64) {
	r.Rounds[target] = append(r.Rounds[target], v)
	r.Values[target] = median(r.Rounds[target])
}

func (rep *Report) fail(target string, n int) { rep.failed[target] += n }

func (rep *Report) note(format string, args ...any) {
	rep.Notes = append(rep.Notes, fmt.Sprintf(format, args...))
}

// rowOrder is the order rows are printed in, as the table has
// them; the measures run in another order (memory first, on fresh
// processes).
var rowOrder = []string{"rps_t2c64", "rps_t1c32", "cpu", "syscalls", "allocs", "p50", "p99",
	"first_token", "flushed", "rss", "rss_anon", "rss_before", "rss_per_stream", "rss_h2", "rss_h2_per_stream",
	"scale_base", "scale_members", "scale_pools", "scale_aliases", "scale_keys", "reload", "reload_failed", "failed"}

// finish adds the row of failed requests, drops rows no target has a
// figure for, and puts the rows in order.
func (rep *Report) finish() {
	r := rep.row("failed", "failed requests (all measures)", "requests", 0)
	for _, t := range rep.Targets {
		r.Values[t] = float64(rep.failed[t])
	}
	rep.Rows = slices.DeleteFunc(rep.Rows, func(r *Row) bool { return len(r.Values) == 0 })
	rank := func(id string) int {
		if i := slices.Index(rowOrder, id); i >= 0 {
			return i
		}
		return len(rowOrder)
	}
	slices.SortStableFunc(rep.Rows, func(a, b *Row) int { return rank(a.ID) - rank(b.ID) })
	for _, row := range rep.Rows {
		if len(row.Rounds) > 0 && allSingle(row.Rounds) {
			row.Rounds = nil
		}
	}
}

func allSingle(m map[string][]float64) bool {
	for _, v := range m {
		if len(v) > 1 {
			return false
		}
	}
	return true
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratioTargets are the targets given a ratio column: all but direct and
// the base.
func (rep *Report) ratioTargets() []string {
	if rep.Base == "" {
		return nil
	}
	var out []string
	for _, t := range rep.Targets {
		if t != Direct && t != rep.Base {
			out = append(out, t)
		}
	}
	return out
}

// ratio is row's value of t divided by the base's, and whether there is
// one.
func (rep *Report) ratio(r *Row, t string) (float64, bool) {
	if r.ID == "failed" || r.ID == "flushed" || r.ID == "reload_failed" || (r.added && rep.Base == Direct) {
		return 0, false
	}
	v, ok1 := r.Values[t]
	b, ok2 := r.Values[rep.Base]
	if !ok1 || !ok2 || b == 0 {
		return 0, false
	}
	return v / b, true
}

// WriteText prints the report as a table, with the machine, date and
// command above it.
func (rep *Report) WriteText(w io.Writer) error {
	m := rep.Machine
	fmt.Fprintf(w, "switchover bench, %s\n", rep.Date.Format("2006-01-02 15:04 MST"))
	if rep.Command != "" {
		fmt.Fprintf(w, "command: %s\n", rep.Command)
	}
	cpu := ""
	if m.CPU != "" {
		cpu = " (" + m.CPU + ")"
	}
	fmt.Fprintf(w, "machine: %d cores%s, %.1f GiB, %s, %s, load average %s at start\n",
		m.Cores, cpu, float64(m.MemoryMi)/1024, m.Kernel, m.Go, m.LoadAvg)
	var tools []string
	for _, t := range []string{m.Nginx, m.Wrk, m.Strace} {
		if t != "" {
			tools = append(tools, t)
		}
	}
	if len(tools) > 0 {
		fmt.Fprintf(w, "tools: %s\n", strings.Join(tools, "; "))
	}
	if len(m.Env) > 0 {
		fmt.Fprintf(w, "env: %s\n", strings.Join(m.Env, " "))
	}
	if len(rep.Settings.GatewayEnv) > 0 {
		fmt.Fprintf(w, "gateway env: %s\n", strings.Join(rep.Settings.GatewayEnv, " "))
	}
	s := rep.Settings
	fmt.Fprintf(w, "settings: %d round(s) of %gs, targets interleaved; load from %s; fixed rate %g req/s; strace at %g req/s; %d streams of %d chunks %gms apart per round; %d open streams\n",
		s.Rounds, s.DurationS, s.Generator, s.Rate, s.SyscallRate, s.Streams, s.Chunks, s.IntervalMS, s.OpenStreams)
	if len(s.Only) > 0 {
		fmt.Fprintf(w, "only: %s\n", strings.Join(s.Only, ", "))
	}
	fmt.Fprintln(w)

	ratios := rep.ratioTargets()
	head := []string{"measure"}
	head = append(head, rep.Targets...)
	for _, t := range ratios {
		head = append(head, t+"/"+rep.Base)
	}
	table := [][]string{head}
	for _, r := range rep.Rows {
		cells := []string{r.Label}
		for _, t := range rep.Targets {
			if v, ok := r.Values[t]; ok {
				cells = append(cells, strconv.FormatFloat(v, 'f', r.digits, 64))
			} else {
				cells = append(cells, "-")
			}
		}
		for _, t := range ratios {
			if q, ok := rep.ratio(r, t); ok {
				cells = append(cells, fmt.Sprintf("%.2fx", q))
			} else {
				cells = append(cells, "")
			}
		}
		table = append(table, cells)
	}
	if err := writeColumns(w, table); err != nil {
		return err
	}
	if len(rep.Syscalls) > 0 {
		fmt.Fprintln(w, "\nsyscalls per request (strace -f -c):")
		for _, t := range rep.Targets {
			rows, ok := rep.Syscalls[t]
			if !ok {
				continue
			}
			var parts []string
			for _, c := range rows {
				parts = append(parts, fmt.Sprintf("%s %.2f", c.Name, c.PerRequest))
			}
			fmt.Fprintf(w, "  %-10s %s\n", t, strings.Join(parts, ", "))
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	return nil
}

// WriteJSON prints the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// writeColumns prints rows as columns two spaces apart: the first
// left-aligned, the others right-aligned.
func writeColumns(w io.Writer, rows [][]string) error {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}
