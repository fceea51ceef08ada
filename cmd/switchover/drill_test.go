package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDrillCommandRefusesBadArguments(t *testing.T) {
	for name, args := range map[string][]string{
		"no subcommand":    {"drill"},
		"other subcommand": {"drill", "budget"},
		"unknown scenario": {"drill", "spend", "-only", "burst,nope"},
		"an argument":      {"drill", "spend", "extra"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(t.Context(), args, &out, &errOut); code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %s", code, exitUsage, errOut.String())
			}
		})
	}
}

func TestDrillCommandHelpNamesTheScenarios(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"drill", "spend", "-h"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"burst", "even", "replicas", "rollout", "-postgres", "-window"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("help lacks %q:\n%s", s, errOut.String())
		}
	}
}
