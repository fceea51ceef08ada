package gameday

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/switchover-gw/switchover/load"
)

// WriteHTML writes r as one self-contained HTML page: inline CSS and
// inline SVG plots, nothing fetched from the network, and a few lines of
// optional script (expand/collapse all) that the page does not need. Per
// scenario it has the regions, a results table with a row per setup and,
// per run, plots of requests per second by region, latency over time and
// breaker states, on one time axis. Runs' Samples are plotted, so render a
// Report before dropping them. The page is built in memory and written in
// one call, so on error nothing has been written. The same Report always
// gives the same bytes. WriteHTML only reads r, so concurrent calls on one
// Report are safe as long as nothing modifies it.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("gameday: WriteHTML of a nil report")
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, buildPage(r)); err != nil {
		return fmt.Errorf("gameday: rendering HTML: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// The page as the template sees it: every value is already formatted.
type (
	htmlPage struct {
		Started, Machine, Command string
		Realtime                  bool
		Scenarios                 []htmlScenario
	}
	htmlScenario struct {
		ID, Name, Title, Description, Load, Compress, Targets string
		Regions                                               []htmlRegion
		FailureKinds                                          []string
		HasOutage                                             bool
		// Cached adds the from-cache column (ScenarioResult.Cached).
		Cached bool
		Runs   []htmlRun
	}
	htmlRegion struct {
		Name, Median, RPM, TPM string
		Swatch                 template.CSS
	}
	htmlRun struct {
		ID, Setup, Mode, Description, Open string
		// Noise describes the noise load's requests, if any.
		Noise string
		// Table cells.
		Requests, Success, P50, P95, Goodput, Calls, FromCache, Failovers, Failed string
		Failures                                                                  []string
		Outage                                                                    *htmlOutage
		// Notes are the notifications the run sent, one line each.
		Notes []string
		// Plots.
		RPS, Latency, Breakers   template.HTML
		BucketWidth, ShownPoints string
		// SummaryLine is the <summary> of the run's <details>.
		SummaryLine string
	}
	htmlOutage struct {
		Primary, Failed, Moved, Benched, Back, Closed string
	}
)

// buildPage formats r for the template.
func buildPage(r *Report) htmlPage {
	col := pageColours(r)
	p := htmlPage{
		Machine:  r.Machine,
		Command:  r.Command,
		Realtime: r.Realtime,
		Started:  "unknown",
	}
	if !r.Started.IsZero() {
		p.Started = r.Started.Format("2006-01-02 15:04:05 MST")
	}
	for si := range r.Scenarios {
		p.Scenarios = append(p.Scenarios, buildScenario(&r.Scenarios[si], si, col))
	}
	return p
}

func buildScenario(sc *ScenarioResult, si int, col colours) htmlScenario {
	h := htmlScenario{
		ID:          fmt.Sprintf("s%d", si+1),
		Name:        sc.Name,
		Title:       sc.Title,
		Description: sc.Description,
		Load:        sc.Load,
		Targets:     sc.Targets,
	}
	if h.Title == "" {
		h.Title = sc.Name
	}
	if sc.Compress > 0 && sc.Compress != 1 {
		h.Compress = trimFloat(math.Round(sc.Compress*100)/100) + "×"
	}
	for _, reg := range sc.Regions {
		h.Regions = append(h.Regions, htmlRegion{
			Name:   reg.Name,
			Median: formatDuration(reg.MedianLatency),
			RPM:    formatLimit(reg.RPM),
			TPM:    formatLimit(reg.TPM),
			Swatch: template.CSS("background:" + col.of(reg.Name)),
		})
	}
	all := load.Summary{Failures: map[string]int{}}
	for _, run := range sc.Runs {
		for k, n := range run.Summary.Failures {
			all.Failures[k] += n
		}
		if run.Outage != nil {
			h.HasOutage = true
		}
	}
	h.FailureKinds = all.FailureKinds()
	h.Cached = sc.Cached
	for ri := range sc.Runs {
		h.Runs = append(h.Runs, buildRun(sc, &sc.Runs[ri], fmt.Sprintf("%s-r%d", h.ID, ri+1), ri == 0, h.FailureKinds, col))
	}
	return h
}

func buildRun(sc *ScenarioResult, run *RunResult, id string, first bool, kinds []string, col colours) htmlRun {
	sum := run.Summary
	h := htmlRun{
		ID:          id,
		Setup:       run.Setup,
		Mode:        run.Mode,
		Description: run.Description,
		Requests:    formatCount(sum.Requests),
		Success:     "–",
		P50:         "–",
		P95:         "–",
		Goodput:     strconv.FormatFloat(sum.Goodput, 'f', 1, 64),
		Calls:       "–",
		FromCache:   formatCount(sum.FromCache),
		Failovers:   formatCount(sum.Failovers),
		Failed:      formatCount(sum.Failed),
	}
	if first || run.Mode == "gateway" {
		h.Open = "open"
	}
	if sum.Requests > 0 {
		h.Success = formatPercent(sum.SuccessRate)
	}
	if sum.Latency.N > 0 {
		h.P50, h.P95 = formatDuration(sum.Latency.P50), formatDuration(sum.Latency.P95)
	}
	if sum.Upstream != nil {
		h.Calls = strconv.FormatFloat(sum.Upstream.CallsPerRequest, 'f', 2, 64)
	}
	if sum.Dropped > 0 {
		h.Requests += fmt.Sprintf(" (+%s dropped)", formatCount(sum.Dropped))
	}
	h.Failures = failureCells(sum.Failures, kinds)
	h.Outage = outageCells(run.Outage)
	if run.Noise != nil {
		h.Noise = noiseLine(run.Noise)
	}
	for _, n := range run.Notifications {
		h.Notes = append(h.Notes, fmt.Sprintf("%s at %s: %s", n.Kind, formatDuration(n.At), n.Text))
	}
	h.SummaryLine = fmt.Sprintf("%s · %s — %s success, p95 %s, %s failovers", run.Setup, run.Mode, h.Success, h.P95, h.Failovers)
	plotRun(&h, sc, run, col)
	return h
}

// failureCells are a run's cells of failures by kind, one per kind.
func failureCells(failures map[string]int, kinds []string) []string {
	var cells []string
	for _, k := range kinds {
		if n := failures[k]; n > 0 {
			cells = append(cells, formatCount(n))
		} else {
			cells = append(cells, "–")
		}
	}
	return cells
}

// outageCells formats o, nil for a run without an outage.
func outageCells(o *OutageResult) *htmlOutage {
	if o == nil {
		return nil
	}
	return &htmlOutage{
		Primary: o.Primary,
		Failed:  outageFailed(o),
		Moved:   formatDuration(o.Moved),
		Benched: formatDuration(o.Benched),
		Back:    formatDuration(o.Back),
		Closed:  formatDuration(o.Closed),
	}
}

// plotRun draws run's plots into h, on one time axis, with what their
// captions say about them.
func plotRun(h *htmlRun, sc *ScenarioResult, run *RunResult, col colours) {
	backends := runBackends(sc, run)
	span := runSpan(run)
	buckets := bucketRequests(run.Samples, backends, span, bucketWidth(span))
	h.BucketWidth = formatDuration(buckets.Width)
	h.RPS = rpsPlot(run, buckets, span, h.ID, col)
	var shown int
	h.Latency, shown = latencyPlot(run, backends, span, col)
	if shown < len(run.Samples) {
		h.ShownPoints = fmt.Sprintf("an even %s of the %s requests", formatCount(shown), formatCount(len(run.Samples)))
	} else {
		h.ShownPoints = fmt.Sprintf("all %s requests", formatCount(len(run.Samples)))
	}
	h.Breakers = breakerPlot(run, backends, span)
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>switchover game day — {{.Started}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:1000px;margin:0 auto;padding:0 16px 48px}
h1{font-size:1.7em;margin:24px 0 4px}
h2{font-size:1.35em;margin:40px 0 6px;padding-bottom:4px;border-bottom:2px solid #ddd}
h3{font-size:1.05em;margin:18px 0 6px}
h4{font-size:.95em;margin:14px 0 2px;font-weight:600}
p{margin:6px 0}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:.92em}
.meta{color:#555}
.meta dt{float:left;clear:left;width:7em;font-weight:600}
.meta dd{margin:0 0 2px 7.5em}
.note{background:#fff8e1;border-left:4px solid #f0a30a;padding:6px 10px;margin:10px 0}
.desc{white-space:pre-line}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 8px;border-bottom:1px solid #e6e6e6;text-align:right;white-space:nowrap}
th{background:#f6f6f6;font-weight:600;vertical-align:bottom}
th.l,td.l{text-align:left}
tr.group th{background:#fff;border-bottom:none;text-align:center;color:#555;font-weight:normal}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
details{border:1px solid #ddd;border-radius:6px;margin:12px 0;padding:0 12px 8px}
summary{cursor:pointer;padding:8px 0;font-weight:600}
figure{margin:6px 0 10px}
figcaption{color:#555;font-size:.9em}
svg{display:block;max-width:100%;height:auto}
footer{margin-top:40px;border-top:1px solid #ddd;color:#444}
.toggles button{font:inherit;margin-right:6px}
</style>
</head>
<body>
<h1>switchover game day</h1>
<dl class="meta">
<dt>When</dt><dd>{{.Started}}</dd>
<dt>Machine</dt><dd>{{if .Machine}}{{.Machine}}{{else}}unknown{{end}}</dd>
<dt>Command</dt><dd>{{if .Command}}<code>{{.Command}}</code>{{else}}unknown{{end}}</dd>
<dt>Time</dt><dd>{{if .Realtime}}real time{{else}}compressed{{end}}</dd>
</dl>
{{- if not .Realtime}}
<p class="note">Durations were compressed per scenario, by the factor shown with each: quotas, request rates, breaker timings and fault times were scaled to run faster; model latency and network timeouts were not. Times on the plots are the compressed run's own.</p>
{{- end}}
{{- if .Scenarios}}
<p>Scenarios:{{range $i, $s := .Scenarios}}{{if $i}} ·{{end}} <a href="#{{$s.ID}}">{{$s.Title}}</a>{{end}}</p>
{{- end}}
<p class="toggles" id="toggles"></p>
{{range .Scenarios}}
<section id="{{.ID}}">
<h2>{{.Title}}{{if and .Name (ne .Name .Title)}} <code>{{.Name}}</code>{{end}}</h2>
{{- if .Description}}
<p class="desc">{{.Description}}</p>
{{- end}}
{{- if .Compress}}
<p class="meta">Time compressed {{.Compress}}: quotas, rates, breaker timings and fault times scaled; model latency and network timeouts not.</p>
{{- end}}
{{- if .Load}}
<p><strong>Load:</strong> {{.Load}}</p>
{{- end}}
{{- if .Targets}}
<p><strong>Targets:</strong> {{.Targets}}</p>
{{- end}}
{{- if .Regions}}
<h3>Regions</h3>
<div class="scroll"><table class="regions">
<tr><th class="l">region</th><th>median latency</th><th>RPM</th><th>TPM</th></tr>
{{- range .Regions}}
<tr><td class="l"><span class="swatch" style="{{.Swatch}}"></span>{{.Name}}</td><td>{{.Median}}</td><td>{{.RPM}}</td><td>{{.TPM}}</td></tr>
{{- end}}
</table></div>
{{- end}}
<h3>Results</h3>
<div class="scroll"><table class="results">
<tr class="group"><th colspan="{{if .Cached}}11{{else}}10{{end}}"></th>{{if .FailureKinds}}<th colspan="{{len .FailureKinds}}">failures by kind</th>{{end}}{{if .HasOutage}}<th colspan="5">primary outage</th>{{end}}</tr>
<tr><th class="l">setup</th><th class="l">mode</th><th>requests</th><th>success</th><th title="latency of all requests">p50</th><th title="latency of all requests">p95</th><th title="successful requests per second">goodput req/s</th><th title="model calls per request sent">upstream calls/req</th>{{if .Cached}}<th title="answers the response cache gave with no model call: x-switchover-cache hit or coalesced">from cache</th>{{end}}<th>failovers</th><th>failed</th>
{{- range .FailureKinds}}<th>{{.}}</th>{{end}}
{{- if .HasOutage}}<th title="of the requests in flight at some moment of the outage (those in flight when it began included), how many failed">failed in outage</th><th title="from the outage's start to the first answer from another region">moved after</th><th title="from the outage's start to the primary's breaker opening">benched after</th><th title="from the outage's end to the primary answering again">back after</th><th title="from the outage's end to the primary's breaker closing">closed after</th>{{end}}</tr>
{{- $outage := .HasOutage}}{{$cached := .Cached}}
{{- range .Runs}}
<tr class="run" id="row-{{.ID}}"><td class="l"><a href="#{{.ID}}">{{.Setup}}</a></td><td class="l">{{.Mode}}</td><td>{{.Requests}}</td><td class="success">{{.Success}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.Goodput}}</td><td>{{.Calls}}</td>{{if $cached}}<td>{{.FromCache}}</td>{{end}}<td>{{.Failovers}}</td><td>{{.Failed}}</td>
{{- range .Failures}}<td>{{.}}</td>{{end}}
{{- if $outage}}{{with .Outage}}<td>{{.Failed}}</td><td>{{.Moved}}</td><td>{{.Benched}}</td><td>{{.Back}}</td><td>{{.Closed}}</td>{{else}}<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>{{end}}{{end}}</tr>
{{- end}}
</table></div>
{{- range .Runs}}
<details id="{{.ID}}" class="run"{{if .Open}} open{{end}}>
<summary>{{.SummaryLine}}</summary>
{{- if .Description}}
<p class="desc">{{.Description}}</p>
{{- end}}
{{- if .Noise}}
<p class="desc">Noise load (key noise, not in the table): {{.Noise}}</p>
{{- end}}
{{- with .Outage}}
<p class="outage">Outage of <strong>{{.Primary}}</strong>: {{.Failed}} requests in flight during it failed · moved to another region after: {{.Moved}} · breaker opened after: {{.Benched}} · answered again after the outage ended: {{.Back}} · breaker closed after the outage ended: {{.Closed}}</p>
{{- end}}
{{- if .Notes}}
<p class="desc">Notifications sent (times from the start of the run):</p>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
<figure>
<h4>Requests per second by backend</h4>
{{.RPS}}
<figcaption>Completed requests per {{.BucketWidth}}, counted when they ended, stacked: successes by the backend that answered, failures on top.</figcaption>
</figure>
<figure>
<h4>Latency of each request</h4>
{{.Latency}}
<figcaption>Each dot is a request, at the time it was sent, at the height of its latency (log scale); showing {{.ShownPoints}}.</figcaption>
</figure>
<figure>
<h4>Breaker state per backend</h4>
{{.Breakers}}
</figure>
</details>
{{- end}}
</section>
{{end}}
<footer>
<h3>Reading the plots</h3>
<p>All plots of a run share one time axis, in seconds from the start of the run{{if not .Realtime}} (compressed time){{end}}.</p>
<p><strong>Requests per second</strong> stacks the requests that ended in each time bucket: one coloured band per backend that answered, failed requests in red on top. A failover shows as colour moving from one band to another, a failback as it moving back. Hatched grey areas are fault windows (the fault and the region are written on them). Dashed vertical lines mark a breaker opening (red) or closing (green), named at the top; hover for the cause.</p>
<p><strong>Latency</strong> shows every request (or an even sample of them) at the time it was sent: successes as dots in the colour of the backend that answered, failures as red crosses. The dashed lines are the run's p50 and p95 over all requests. Fast red crosses are refusals; slow ones timeouts.</p>
<p><strong>Breaker state</strong> shows each backend's circuit breaker: green while closed (taking traffic), red while open (benched), amber while half open (letting a probe through). Hover a band for when and why it changed.</p>
<p class="meta">Generated by switchover. The page is self-contained: it loads nothing from the network.</p>
</footer>
<script>
(function(){var t=document.getElementById("toggles");if(!t)return;function all(o){document.querySelectorAll("details.run").forEach(function(d){d.open=o})}[["Expand all runs",true],["Collapse all runs",false]].forEach(function(a){var b=document.createElement("button");b.type="button";b.textContent=a[0];b.onclick=function(){all(a[1])};t.appendChild(b)});function reveal(){var d=location.hash&&document.getElementById(location.hash.slice(1));if(d&&d.tagName==="DETAILS")d.open=true}window.addEventListener("hashchange",reveal);reveal()})();
</script>
</body>
</html>
`))
