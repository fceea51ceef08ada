package deploy

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/metrics"
)

// The target labels Prometheus would give the scraped series.
const (
	scrapeJob      = "switchover"
	scrapeInstance = "gw1"
)

// scrape reads m's /metrics text, as Prometheus does, and returns the
// value of every switchover series (Go and process collectors left out)
// by its series text: name{label="value",...}, with the target labels.
func scrape(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	names := m.Names()
	out := map[string]float64{}
	for name, mf := range mfs {
		if !slices.Contains(names, name) {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{"job": scrapeJob, "instance": scrapeInstance}
			for _, lp := range mt.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[seriesText(name, labels)] = mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[seriesText(name, labels)] = mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := mt.GetHistogram()
				out[seriesText(name+"_count", labels)] = float64(h.GetSampleCount())
				out[seriesText(name+"_sum", labels)] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					bl := maps(labels, "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64))
					out[seriesText(name+"_bucket", bl)] = float64(b.GetCumulativeCount())
				}
				out[seriesText(name+"_bucket", maps(labels, "le", "+Inf"))] = float64(h.GetSampleCount())
			default:
				t.Fatalf("%s: unexpected type %v", name, mf.GetType())
			}
		}
	}
	return out
}

func maps(l map[string]string, k, v string) map[string]string {
	c := map[string]string{k: v}
	for a, b := range l {
		c[a] = b
	}
	return c
}

func seriesText(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// TestBenchedAlertFiresOnlyForTheOpenedBackendNotForEveryHealthyOne is the
// regression test for SwitchoverBackendBenched firing for every healthy
// backend at start: the exporter gave switchover_breaker_state{state=
// "closed"} the value 0 until a backend's first transition. The series
// here come from the real exporter, fed as the gateway feeds it: backends
// declared, breakers on a fake clock sending it their transitions; one
// backend keeps failing, two are healthy. Scraped once a minute for 20
// minutes, they must show the healthy backends closed from the first
// scrape, and, evaluated by promtool against alerts.yml, fire the benched
// alert for the failing backend only, and no alert at all before it has
// been benched for 15 minutes.
func TestBenchedAlertFiresOnlyForTheOpenedBackendNotForEveryHealthyOne(t *testing.T) {
	clk := fakeclock.New()
	m := metrics.New()
	names := []string{"weu", "sec", "uks"}
	breakers := map[string]*breaker.Breaker{}
	for _, name := range names {
		// As gateway.publish and gateway.newBackend do.
		m.AddBackend(name, name+"-region", "azure")
		m.Drained(name, false)
		breakers[name] = breaker.New(name, breaker.Settings{Failures: 2, Trip: 5 * time.Minute, Clock: clk, OnTransition: m.Transition})
	}
	callEach := func() {
		for _, name := range names {
			done, ok := breakers[name].Allow()
			if !ok {
				continue // benched
			}
			if name == "weu" {
				done(breaker.Outcome{Result: breaker.Failure, Cause: "503"})
			} else {
				done(breaker.Outcome{Result: breaker.Success})
			}
		}
	}

	const minutes = 20
	var scrapes []map[string]float64
	for minute := 0; minute <= minutes; minute++ {
		if minute > 0 {
			// weu fails twice at 1m (open for 5m), then its probe fails
			// at every trip's end.
			callEach()
			callEach()
		}
		scrapes = append(scrapes, scrape(t, m))
		clk.Advance(time.Minute)
	}
	if s := breakers["weu"].Snapshot(); s.State == breaker.Closed {
		t.Fatalf("weu's breaker closed: %+v", s)
	}

	closed := func(backend string) string {
		return seriesText("switchover_breaker_state", map[string]string{"job": scrapeJob, "instance": scrapeInstance, "backend": backend, "state": "closed"})
	}
	for _, name := range names {
		if v, ok := scrapes[0][closed(name)]; !ok || v != 1 {
			t.Errorf("first scrape: %s = %v (present %v), want 1: a backend is closed from the start", closed(name), v, ok)
		}
	}
	for i, s := range scrapes[1:] {
		if s[closed("weu")] != 0 || s[closed("sec")] != 1 || s[closed("uks")] != 1 {
			t.Errorf("scrape at %dm: closed weu=%v sec=%v uks=%v, want 0 1 1", i+1, s[closed("weu")], s[closed("sec")], s[closed("uks")])
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH; the alert rules were not evaluated against the exported series")
	}
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, s := range scrapes {
		for k := range s {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	sort.Strings(all)
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%q]\nevaluation_interval: 1m\ntests:\n  - name: exported series\n    interval: 1m\n    input_series:\n", rules)
	for _, k := range all {
		vals := make([]string, len(scrapes))
		for i, s := range scrapes {
			vals[i] = "_" // not exported yet (a counter before its first increment)
			if v, ok := s[k]; ok {
				vals[i] = strconv.FormatFloat(v, 'g', -1, 64)
			}
		}
		fmt.Fprintf(&b, "      - series: %q\n        values: %q\n", k, strings.Join(vals, " "))
	}
	b.WriteString("    promql_expr_test:\n")
	// Every alert firing, so that one firing where it should not fails.
	b.WriteString("      - expr: ALERTS{alertstate=\"firing\"}\n        eval_time: 5m\n        exp_samples: []\n")
	fmt.Fprintf(&b, "      - expr: ALERTS{alertstate=\"firing\"}\n        eval_time: %dm\n        exp_samples:\n", minutes)
	fmt.Fprintf(&b, "          - labels: 'ALERTS{alertname=\"SwitchoverBackendBenched\",alertstate=\"firing\",severity=\"ticket\",job=%q,instance=%q,backend=\"weu\"}'\n            value: 1\n", scrapeJob, scrapeInstance)
	file := filepath.Join(t.TempDir(), "exported_test.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules on the exported series: %v\n%s\n--- %s:\n%s", err, out, file, b.String())
	}
}
