package sim

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigGood(t *testing.T) {
	files, err := filepath.Glob("testdata/*.good.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no good fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := LoadConfig(f)
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			s := startSim(t, cfg)
			if len(s.Deployments()) != len(cfg.Deployments) {
				t.Errorf("%d endpoints for %d deployments", len(s.Deployments()), len(cfg.Deployments))
			}
		})
	}
}

func TestLoadConfigFields(t *testing.T) {
	cfg, err := LoadConfig("testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Deployments[0]
	want := Deployment{
		Name: "east", Region: "eastus2", Flavour: OpenAI, Deployment: "gpt-4o-mini", Model: "gpt-4o-mini-2024-07-18", Key: "sk-test",
		Latency:       Latency{Median: 250 * time.Millisecond, Spread: 0.4, FirstToken: 120 * time.Millisecond, PerToken: 15 * time.Millisecond},
		Quota:         Quota{RPM: 600, TPM: 100000, DefaultMaxTokens: 64},
		ContentFilter: ContentFilter{Block: "forbidden-words", Truncate: "cut-me-short"},
		Reply:         Reply{Tokens: 30, EmbeddingDimensions: 256},
		Operations:    []string{"chat", "embeddings"}, UnsupportedStatus: 400,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("deployment =\n%+v\nwant\n%+v", d, want)
	}
	if cfg.Seed != 1 || cfg.Slice != time.Second || cfg.Listen != "127.0.0.1:0" || cfg.Control != "127.0.0.1:0" {
		t.Errorf("top level = %+v", cfg)
	}
	if !cfg.Deployments[1].ContentFilter.Disabled || cfg.Deployments[1].Listen != "127.0.0.1:0" {
		t.Errorf("second deployment = %+v", cfg.Deployments[1])
	}
	wantSched := ScheduledFault{Deployment: "east", From: 10 * time.Second, To: 20 * time.Second, Fault: Fault{Mode: FaultErrorRate, Rate: 0.25, Status: 503}}
	if cfg.Schedule[0] != wantSched {
		t.Errorf("schedule[0] = %+v", cfg.Schedule[0])
	}
}

func TestLoadConfigBad(t *testing.T) {
	tests := []struct {
		file string
		want []string // substrings, each must appear
	}{
		{"unknown-field.bad.yaml", []string{"unknown-field.bad.yaml", "line 5", "field jitter not found"}},
		{"negative-rpm.bad.yaml", []string{"negative-rpm.bad.yaml: line 6: deployments[1].quota.rpm: must not be negative"}},
		{"bare-duration.bad.yaml", []string{"line 1", "cannot unmarshal"}},
		{"bad-schedule.bad.yaml", []string{
			"line 6: schedule[0].to: must be after from",
			"line 8: schedule[1].deployment: no deployment named \"ghost\"",
			"line 11: schedule[1].fault.rate: must be in [0, 1]",
		}},
		{"duplicate.bad.yaml", []string{"line 3: deployments[1].name: \"a\" already used by deployments[0]", "line 4: deployments[1].flavour"}},
		{"empty.bad.yaml", []string{"empty config"}},
		{"unknown-operation.bad.yaml", []string{"line 3: deployments[0].operations[1]: unknown operation \"embedings\"", "line 4: deployments[0].unsupported_status: must be 404 or 400"}},
		{"missing.yaml", []string{"no such file"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			_, err := LoadConfig(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatal("LoadConfig succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
	_, err := LoadConfig("testdata/negative-rpm.bad.yaml")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 6 || fe.Path != "deployments[1].quota.rpm" {
		t.Errorf("errors.As FieldError = %+v", fe)
	}
}
