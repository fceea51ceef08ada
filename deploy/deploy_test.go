package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchover-gw/switchover/metrics"
)

const (
	rulesFile     = "prometheus/alerts.yml"
	dashboardFile = "grafana/switchover.json"
	readmeFile    = "README.md"
	// dataSource is the data source every panel uses: the __inputs entry
	// an import fills in, also defined as a variable for provisioning.
	dataSource = "${DS_PROMETHEUS}"
)

// requiredAlerts must be in the rule file.
var requiredAlerts = []string{
	"SwitchoverFailoverStorm", "SwitchoverFailoverActive", "SwitchoverBackendBenched",
	"SwitchoverPoolDown", "SwitchoverAllBackendsOpen", "SwitchoverProbeFailing",
	"SwitchoverHighErrorRate", "SwitchoverStreamErrors", "SwitchoverModelVersionDrift",
	"SwitchoverConfigReloadFailed", "SwitchoverNotificationsFailing",
}

// severities: page wakes the platform on-call; ticket never pages.
var severities = []string{"page", "ticket"}

type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval"`
	Limit    int    `yaml:"limit"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Record        string            `yaml:"record"`
	Alert         string            `yaml:"alert"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt key (annotation:, lables:) is an error
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(rf.Groups) == 0 {
		t.Fatalf("%s has no groups", rulesFile)
	}
	return rf
}

var (
	reDurationOnly = regexp.MustCompile(`^([0-9]+(ms|[smhdwy]))+$`)
	reAlertName    = regexp.MustCompile(`^Switchover[A-Z][A-Za-z0-9]*$`)
	reRecordName   = regexp.MustCompile(`^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$`)
	reLabelRef     = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	reLegendRef    = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	reReadmeAlert  = regexp.MustCompile(`(?m)^### (Switchover[A-Za-z0-9]+)\s*$`)
)

// promTemplate parses an annotation as Prometheus does: with $labels,
// $value and friends defined, and its template functions (stubbed).
func promTemplate(text string) error {
	stub := func(...any) any { return nil }
	funcs := template.FuncMap{}
	for _, f := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage",
		"humanizeTimestamp", "toTime", "title", "toUpper", "toLower", "query", "first", "label", "value",
		"strvalue", "args", "reReplaceAll", "match", "safeHtml", "sortByLabel", "stripPort", "stripDomain",
		"externalURL", "pathPrefix", "parseDuration", "tableLink", "graphLink"} {
		funcs[f] = stub
	}
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	_, err := template.New("annotation").Funcs(funcs).Parse(defs + text)
	return err
}

func TestAlertRules(t *testing.T) {
	s := exportedSchema(t)
	rf := loadRules(t)
	readme, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range reReadmeAlert.FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = true
	}

	alerts := map[string]rule{}
	records := map[string]bool{}
	groups := map[string]bool{}
	for _, g := range rf.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group name %q is empty or repeated", g.Name)
		}
		groups[g.Name] = true
		if len(g.Rules) == 0 {
			t.Errorf("group %s has no rules", g.Name)
		}
		if g.Interval != "" && !reDurationOnly.MatchString(g.Interval) {
			t.Errorf("group %s: interval %q is not a duration", g.Name, g.Interval)
		}
		// A rule may read the recording rules before it in its group: the
		// group evaluates its rules in order, so it reads this round's values.
		e := &env{schema: s, recorded: map[string]labelSet{}}
		for i, r := range g.Rules {
			where := fmt.Sprintf("%s: group %s, rule %d (%s%s)", rulesFile, g.Name, i+1, r.Alert, r.Record)
			if (r.Alert == "") == (r.Record == "") {
				t.Errorf("%s: a rule has exactly one of alert and record", where)
				continue
			}
			c := e.check(r.Expr)
			for _, p := range c.problems {
				t.Errorf("%s: %s\n\texpr: %s", where, p, strings.TrimSpace(r.Expr))
			}
			if len(c.problems) == 0 && c.typ != vVector {
				t.Errorf("%s: the expression is a %s; a rule needs an instant vector", where, c.typ)
			}
			out := c.labels.clone()
			for l := range r.Labels {
				if out != nil {
					out[l] = true
				}
			}
			if r.Record != "" {
				if !reRecordName.MatchString(r.Record) {
					t.Errorf("%s: record name %q is not level:metric:operations", where, r.Record)
				}
				if records[r.Record] {
					t.Errorf("%s: record %s is defined twice", where, r.Record)
				}
				if r.For != "" || len(r.Annotations) > 0 {
					t.Errorf("%s: a recording rule has no for or annotations", where)
				}
				records[r.Record] = true
				e.recorded[r.Record] = out
				continue
			}
			if !reAlertName.MatchString(r.Alert) {
				t.Errorf("%s: alert name %q is not SwitchoverCamelCase", where, r.Alert)
			}
			if _, dup := alerts[r.Alert]; dup {
				t.Errorf("%s: alert %s is defined twice", where, r.Alert)
			}
			alerts[r.Alert] = r
			for _, d := range []string{r.For, r.KeepFiringFor} {
				if d != "" && !reDurationOnly.MatchString(d) {
					t.Errorf("%s: %q is not a duration", where, d)
				}
			}
			if !slices.Contains(severities, r.Labels["severity"]) {
				t.Errorf("%s: labels.severity is %q, want one of %v", where, r.Labels["severity"], severities)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: annotations.%s is missing", where, a)
				}
			}
			if !strings.HasSuffix(r.Annotations["runbook_url"], "#"+strings.ToLower(r.Alert)) {
				t.Errorf("%s: runbook_url %q does not point at the README's section #%s", where, r.Annotations["runbook_url"], strings.ToLower(r.Alert))
			}
			if !documented[r.Alert] {
				t.Errorf("%s: %s has no \"### %s\" section in %s", where, r.Alert, r.Alert, readmeFile)
			}
			for name, text := range r.Annotations {
				if err := promTemplate(text); err != nil {
					t.Errorf("%s: annotations.%s: %v", where, name, err)
				}
				for _, m := range reLabelRef.FindAllStringSubmatch(text, -1) {
					if out != nil && !out[m[1]] {
						t.Errorf("%s: annotations.%s uses $labels.%s, but the alert's labels are %s", where, name, m[1], out)
					}
				}
			}
		}
	}
	for _, name := range requiredAlerts {
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s has no alert %s", rulesFile, name)
		}
	}
	for name := range documented {
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s documents %s, which %s does not define", readmeFile, name, rulesFile)
		}
	}
	// Seed 000: more than 50 failovers in five minutes pages the platform
	// on-call; below that it is a dashboard line.
	if storm := alerts["SwitchoverFailoverStorm"]; storm.Labels["severity"] != "page" || stormThreshold(t, storm.Expr) != 50 {
		t.Errorf("SwitchoverFailoverStorm must page above 50 failovers in 5 minutes: severity %q, expr %q", storm.Labels["severity"], storm.Expr)
	}
	if a := alerts["SwitchoverFailoverActive"]; a.Labels["severity"] == "page" {
		t.Error("SwitchoverFailoverActive must not page: below the storm threshold a failover is a dashboard line")
	}
}

// stormThreshold is the number the storm alert compares with.
func stormThreshold(t *testing.T, expr string) float64 {
	t.Helper()
	m := regexp.MustCompile(`>\s*([0-9.]+)\s*$`).FindStringSubmatch(strings.TrimSpace(expr))
	if m == nil {
		t.Fatalf("cannot find the threshold in the storm alert %q", expr)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type dashboard struct {
	Inputs        []input `json:"__inputs"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []annotation `json:"list"`
	} `json:"annotations"`
	Panels []panel `json:"panels"`
}

// input is an __inputs entry, which Grafana's import asks the user to fill.
type input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *dsRef          `json:"datasource"`
}

type annotation struct {
	Name        string `json:"name"`
	BuiltIn     int    `json:"builtIn"`
	Datasource  *dsRef `json:"datasource"`
	Expr        string `json:"expr"`
	TitleFormat string `json:"titleFormat"`
	TagKeys     string `json:"tagKeys"`
}

type panel struct {
	ID         int      `json:"id"`
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Repeat     string   `json:"repeat"`
	Datasource *dsRef   `json:"datasource"`
	Targets    []target `json:"targets"`
	Panels     []panel  `json:"panels"` // a collapsed row's
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Thresholds struct {
				Steps []struct {
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Datasource   *dsRef `json:"datasource"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("%s is not valid JSON", dashboardFile)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// flatten returns the panels with the rows' own panels, rows included.
func flatten(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

func checkDataSource(ds *dsRef) error {
	if ds == nil {
		return fmt.Errorf("no datasource")
	}
	if ds.Type != "prometheus" || ds.UID != dataSource {
		return fmt.Errorf("datasource %+v, want {prometheus %s}", *ds, dataSource)
	}
	return nil
}

var reLabelValues = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

func TestDashboard(t *testing.T) {
	s := exportedSchema(t)
	d := loadDashboard(t)
	e := &env{schema: s} // no recording rules: the dashboard works without the rule file

	checkDashboardHeader(t, d)
	q := &dashboardQueries{e: e, vars: dashboardVariables(t, e, d.Templating.List), used: map[string]bool{}}
	q.checkPanels(t, flatten(d.Panels))
	for _, a := range d.Annotations.List {
		q.checkAnnotation(t, a)
	}
	if q.exprs == 0 {
		t.Fatal("the dashboard has no queries")
	}
	checkEveryMetricShown(t, q.used)
	checkStormThresholdDrawn(t, d)
}

// checkDashboardHeader: a uid, a title, a schema that references data
// sources by uid, and the Prometheus input an import asks for.
func checkDashboardHeader(t *testing.T, d dashboard) {
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later (datasource references by uid)", d.SchemaVersion)
	}
	if !slices.Contains(d.Inputs, input{Name: "DS_PROMETHEUS", Type: "datasource", PluginID: "prometheus"}) {
		t.Error("__inputs has no DS_PROMETHEUS Prometheus datasource")
	}
}

// dashboardVariables checks the variables' label_values queries and that
// the variables the panels need exist, and returns what $names may refer
// to.
func dashboardVariables(t *testing.T, e *env, list []variable) map[string]bool {
	vars := map[string]bool{}
	for _, v := range list {
		vars[v.Name] = true
		if v.Type == "query" {
			checkVariableQuery(t, e, v)
		}
	}
	for _, name := range []string{"DS_PROMETHEUS", "pool", "backend"} {
		if !vars[name] {
			t.Errorf("the dashboard has no %s variable", name)
		}
	}
	return vars
}

// checkVariableQuery: a query variable reads the Prometheus data source
// with label_values(selector, label), and label is a label of selector.
func checkVariableQuery(t *testing.T, e *env, v variable) {
	if err := checkDataSource(v.Datasource); err != nil {
		t.Errorf("variable %s: %v", v.Name, err)
	}
	var q string
	if err := json.Unmarshal(v.Query, &q); err != nil {
		var obj struct{ Query string }
		if err := json.Unmarshal(v.Query, &obj); err != nil {
			t.Errorf("variable %s: query is neither a string nor {query}: %s", v.Name, v.Query)
		}
		q = obj.Query
	}
	m := reLabelValues.FindStringSubmatch(q)
	if m == nil {
		t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		return
	}
	if m[1] == "" {
		t.Errorf("variable %s: label_values(%s) without a metric lists every series' label", v.Name, m[2])
		return
	}
	c := e.check(m[1])
	for _, p := range c.problems {
		t.Errorf("variable %s: %s", v.Name, p)
	}
	if c.labels != nil && !c.labels[m[2]] {
		t.Errorf("variable %s: %q is not a label of %s (it has %s)", v.Name, m[2], m[1], c.labels)
	}
}

// dashboardQueries checks the panels' and annotations' queries against
// the exported schema and the dashboard's variables, and gathers the
// metrics they show.
type dashboardQueries struct {
	e     *env
	vars  map[string]bool // what $names may refer to
	used  map[string]bool // metrics the dashboard shows
	exprs int             // queries checked
}

// checkVarRefs: every $name in text is a dashboard variable (or one of
// Grafana's own, __name).
func (q *dashboardQueries) checkVarRefs(t *testing.T, where, text string) {
	for _, m := range reAnyVar.FindAllStringSubmatch(text, -1) {
		name := m[1] + m[3]
		if !q.vars[name] && !strings.HasPrefix(name, "__") {
			t.Errorf("%s: $%s is not a dashboard variable", where, name)
		}
	}
}

// checkPanels: each panel has an id of its own and a place on the grid,
// and each panel that is not a row has targets to draw.
func (q *dashboardQueries) checkPanels(t *testing.T, panels []panel) {
	ids := map[int]bool{}
	for _, p := range panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] {
			t.Errorf("%s: id %d is used twice", where, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil {
			t.Errorf("%s: no gridPos", where)
		}
		q.checkVarRefs(t, where, p.Title)
		if p.Repeat != "" && !q.vars[p.Repeat] {
			t.Errorf("%s: repeats over %q, which is not a variable", where, p.Repeat)
		}
		if p.Type == "row" {
			continue
		}
		if err := checkDataSource(p.Datasource); err != nil {
			t.Errorf("%s: %v", where, err)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			tw := fmt.Sprintf("%s, target %s", where, tg.RefID)
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: refId empty or repeated", tw)
			}
			refs[tg.RefID] = true
			q.checkTarget(t, tw, tg)
		}
	}
}

// checkTarget: a panel's query is a valid instant vector or scalar of
// exported metrics, and its legend uses labels the series have.
func (q *dashboardQueries) checkTarget(t *testing.T, tw string, tg target) {
	if tg.Datasource != nil {
		if err := checkDataSource(tg.Datasource); err != nil {
			t.Errorf("%s: %v", tw, err)
		}
	}
	q.exprs++
	c := q.e.check(tg.Expr)
	for _, pr := range c.problems {
		t.Errorf("%s: %s\n\texpr: %s", tw, pr, tg.Expr)
	}
	if len(c.problems) == 0 && c.typ != vVector && c.typ != vScalar {
		t.Errorf("%s: the expression is a %s; a panel needs an instant vector or a scalar", tw, c.typ)
	}
	for _, m := range c.metrics {
		q.used[m] = true
	}
	q.checkVarRefs(t, tw, tg.Expr+" "+tg.LegendFormat)
	for _, m := range reLegendRef.FindAllStringSubmatch(tg.LegendFormat, -1) {
		if c.labels != nil && !c.labels[m[1]] {
			t.Errorf("%s: legend uses {{%s}}, but the series' labels are %s", tw, m[1], c.labels)
		}
	}
}

// checkAnnotation: a query annotation (not Grafana's built-in one) is a
// valid query of exported metrics, and its title and tags use labels the
// series have.
func (q *dashboardQueries) checkAnnotation(t *testing.T, a annotation) {
	if a.BuiltIn != 0 {
		return
	}
	where := fmt.Sprintf("annotation %q", a.Name)
	if err := checkDataSource(a.Datasource); err != nil {
		t.Errorf("%s: %v", where, err)
	}
	q.exprs++
	c := q.e.check(a.Expr)
	for _, p := range c.problems {
		t.Errorf("%s: %s\n\texpr: %s", where, p, a.Expr)
	}
	for _, m := range c.metrics {
		q.used[m] = true
	}
	q.checkVarRefs(t, where, a.Expr)
	refs := reLegendRef.FindAllStringSubmatch(a.TitleFormat, -1)
	for _, k := range strings.Split(a.TagKeys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			refs = append(refs, []string{k, k})
		}
	}
	for _, m := range refs {
		if c.labels != nil && !c.labels[m[1]] {
			t.Errorf("%s: uses label %s, but the series' labels are %s", where, m[1], c.labels)
		}
	}
}

// checkEveryMetricShown: every metric the gateway exports has a place on
// the dashboard (a histogram by its _bucket, _sum or _count series).
func checkEveryMetricShown(t *testing.T, used map[string]bool) {
	for _, name := range metrics.New().Names() {
		shown := false
		for m := range used {
			if m == name || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count") == name {
				shown = true
			}
		}
		if !shown {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// checkStormThresholdDrawn: the failover panels draw the storm threshold
// the alert pages on.
func checkStormThresholdDrawn(t *testing.T, d dashboard) {
	storm := 0.0
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "SwitchoverFailoverStorm" {
				storm = stormThreshold(t, r.Expr)
			}
		}
	}
	drawn := false
	for _, p := range flatten(d.Panels) {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "increase(switchover_failovers_total") || !strings.Contains(tg.Expr, "[5m])") {
				continue
			}
			for _, st := range p.FieldConfig.Defaults.Thresholds.Steps {
				if st.Value != nil && *st.Value == storm {
					drawn = true
				}
			}
		}
	}
	if !drawn {
		t.Errorf("no panel of 5-minute failover counts has a threshold at the storm alert's %v", storm)
	}
}

// TestPromtool runs Prometheus's own checks when promtool is installed:
// check rules (syntax, templates) and test rules (alerts_test.yml, which
// fires each alert on sample series). Without promtool it is skipped; the
// Go checks above do not need it.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH; skipping promtool check rules and test rules")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		t.Run(strings.Join(args[:2], "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, promtool, args...)
			cmd.Dir = "prometheus"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		})
	}
}
