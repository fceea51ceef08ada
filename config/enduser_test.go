package config

import (
	"strings"
	"testing"
)

const endUserConfig = `listen: 127.0.0.1:8080
teams:
  - {name: apps, end_user_limits: {rpm: 30, budget: 5/month}}
keys:
  - name: app
    key: app-key-0123456789abcdef0123456789
    team: apps
    rpm: 600
    end_user_limits: {rpm: 20, tpm: 50k, budget: 1/day}
backends:
  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}
pools:
  - {name: chat, members: [{backend: a}]}
`

// TestEndUserLimits: end_user_limits of a key and a team are read, and
// their budgets warned of without a store.
func TestEndUserLimits(t *testing.T) {
	cfg, err := Parse("enduser.yaml", []byte(endUserConfig), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Keys[0].EndUserLimits, (EndUserLimits{RPM: 20, TPM: 50000, Budget: Budget{1, "day"}}); got != want {
		t.Errorf("key's end_user_limits = %+v, want %+v", got, want)
	}
	if got, want := cfg.Teams[0].EndUserLimits, (EndUserLimits{RPM: 30, Budget: Budget{5, "month"}}); got != want {
		t.Errorf("team's end_user_limits = %+v, want %+v", got, want)
	}
	var paths []string
	for _, w := range cfg.Warnings() {
		if strings.Contains(w.Path, "end_user_limits") {
			paths = append(paths, w.Path)
		}
	}
	if strings.Join(paths, ",") != "keys[0].end_user_limits.budget,teams[0].end_user_limits.budget" {
		t.Errorf("warnings of end users' budgets without a store: %v", paths)
	}
	withStore := strings.Replace(endUserConfig, "teams:", "store: {sqlite: a.db}\nteams:", 1)
	cfg, err = Parse("enduser.yaml", []byte(withStore), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Warnings() {
		if strings.Contains(w.Path, "end_user_limits") {
			t.Errorf("with a store: %v", w)
		}
	}
	bad := strings.Replace(endUserConfig, "tpm: 50k", "tpm: 50k, max_concurrent: 2", 1)
	if _, err := Parse("enduser.yaml", []byte(bad), func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "max_concurrent") {
		t.Errorf("end_user_limits with max_concurrent: %v, want it refused", err)
	}
}
