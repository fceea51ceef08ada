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

// TestEndUserRatesWithStateWarnPerReplica: with state.redis, end users'
// rpm and tpm are still held by each replica alone; check says so, on
// the line of each, and not of budgets (which Redis shares) nor without
// state.redis.
func TestEndUserRatesWithStateWarnPerReplica(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	withState := "state: {redis: {url: \"redis://127.0.0.1:6379\"}}\nstore: {postgres: \"postgres://db/x\"}\n" + endUserConfig
	cfg, err := Parse("state.yaml", []byte(withState), env)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings() {
		if strings.Contains(w.Msg, "not end users' rpm and tpm") {
			got = append(got, w.String())
		}
	}
	want := []string{"state.yaml:11: keys[0].end_user_limits.rpm", "state.yaml:11: keys[0].end_user_limits.tpm", "state.yaml:5: teams[0].end_user_limits.rpm"}
	if len(got) != len(want) {
		t.Fatalf("warnings of end users' rates: %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+": ") {
			t.Errorf("warning %d: %q, want it to start %q", i, got[i], w)
		}
	}
	cfg, err = Parse("nostate.yaml", []byte(endUserConfig), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Warnings() {
		if strings.Contains(w.Msg, "not end users' rpm and tpm") {
			t.Errorf("without state.redis: %v", w)
		}
	}
}
