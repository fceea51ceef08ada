package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func sampleReport(targets ...string) *Report {
	o := Defaults()
	o.Targets = targets
	o.Command = "switchover bench -quick"
	rep := newReport(o)
	rps := rep.row("rps_t2c64", "max req/s, wrk -t2 -c64", "req/s", 0)
	for _, v := range []float64{20000, 19000, 21000} {
		rps.add(Nginx, v)
	}
	for _, v := range []float64{7000, 7400, 7300} {
		rps.add(Switchover, v)
	}
	rps.add(Direct, 50000)
	p50 := rep.row("p50", "p50 added", "ms", 3)
	p50.added = true
	addAdded(p50, map[string]float64{Direct: 0.1, Nginx: 0.2, Switchover: 0.4})
	rep.row("rss", "RSS", "MiB", 1).add(Switchover, 40)
	rep.row("unused", "nobody measured this", "", 0)
	rep.fail(Switchover, 2)
	rep.finish()
	return rep
}

func TestReportTable(t *testing.T) {
	rep := sampleReport(Direct, Nginx, Switchover)
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"command: switchover bench -quick\n", "machine: "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	rows := []struct{ label, cells string }{
		// The median of 7000, 7400, 7300 and its share of nginx's 20000.
		{"max req/s, wrk -t2 -c64", "50000 20000 7300 0.36x"},
		// Added rows: direct's own figure, the others' less direct's.
		{"p50 added", "0.100 0.100 0.300 3.00x"},
		{"RSS", "- - 40.0"},
		// No ratio for failures.
		{"failed requests (all measures)", "0 0 2"},
	}
	for _, r := range rows {
		line := lineWith(out, r.label+"  ")
		if got := strings.Join(strings.Fields(strings.TrimPrefix(line, r.label)), " "); got != r.cells {
			t.Errorf("row %q: %q, want %q\n%s", r.label, got, r.cells, out)
		}
	}
	if strings.Contains(out, "nobody measured") {
		t.Errorf("a row without values was printed:\n%s", out)
	}
	header := lineWith(out, "measure")
	if f := strings.Fields(header); strings.Join(f, " ") != "measure direct nginx switchover switchover/nginx" {
		t.Errorf("header %q", header)
	}
}

func TestReportWithoutNginxDividesByDirect(t *testing.T) {
	rep := sampleReport(Direct, Switchover)
	var b bytes.Buffer
	rep.WriteText(&b)
	out := b.String()
	if h := strings.Fields(lineWith(out, "measure")); h[len(h)-1] != "switchover/direct" {
		t.Errorf("header %q, want a switchover/direct column", h)
	}
	// Added rows hold direct's own figure: no ratio against it.
	if f := strings.Fields(lineWith(out, "p50 added")); f[len(f)-1] != "0.300" {
		t.Errorf("p50 row %q has a ratio", f)
	}
	if f := strings.Fields(lineWith(out, "max req/s")); f[len(f)-1] != "0.15x" {
		t.Errorf("max req/s row %q, want 7300/50000 = 0.15x", f)
	}
}

func TestReportJSON(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport(Direct, Nginx, Switchover).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Command string
		Base    string `json:"ratio_base"`
		Rows    []struct {
			ID     string
			Values map[string]float64
			Rounds map[string][]float64
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Base != Nginx || got.Command != "switchover bench -quick" || got.Rows[0].ID != "rps_t2c64" {
		t.Fatalf("report %+v", got)
	}
	if r := got.Rows[0]; r.Values[Switchover] != 7300 || len(r.Rounds[Switchover]) != 3 {
		t.Errorf("rps row %+v", r)
	}
}

func lineWith(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
