package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestParseBudget: a Budget is what quantity.ParseBudget reads (its
// cases, and those of the other parsers, are in internal/quantity), and
// String writes it back.
func TestParseBudget(t *testing.T) {
	if got, err := ParseBudget("$5/day"); err != nil || got != (Budget{5, "day"}) {
		t.Errorf("ParseBudget($5/day) = %+v, %v; want {5 day}", got, err)
	}
	if got, err := ParseBudget("50/year"); err == nil || got != (Budget{}) {
		t.Errorf("ParseBudget(50/year) = %+v, %v; want an error and no budget", got, err)
	}
	if s := (Budget{50, "month"}).String(); s != "50/month" {
		t.Errorf("String = %q", s)
	}
	if s := (Budget{100, "30d"}).String(); s != "100/30d" {
		t.Errorf("String = %q", s)
	}
}

// TestBudgetPeriods: budgets of any whole number of hours or days, from
// 1h to 366d, in their canonical form, and a bad one named at its line.
func TestBudgetPeriods(t *testing.T) {
	const head = "listen: 127.0.0.1:8080\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\nkeys:\n  - name: app\n    key: app-key-0123456789abcdef0123456789\n"
	env := func(string) (string, bool) { return "", false }
	for in, want := range map[string]Budget{"100/30d": {100, "30d"}, "5/1h": {5, "1h"}, "20/12h": {20, "12h"}, "50/7d": {50, "week"}, "1/24h": {1, "day"}} {
		cfg, err := Parse("b.yaml", []byte(head+"    budget: "+in+"\n"), env)
		if err != nil {
			t.Errorf("budget %s: %v", in, err)
			continue
		}
		if got := cfg.Keys[0].Budget; got != want {
			t.Errorf("budget %s = %+v, want %+v", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"5/30m":   `b.yaml:10: budget "5/30m": period "30m" is not day, week, month or a number of hours, days or weeks such as 1h, 12h, 30d`,
		"5/1.5h":  `b.yaml:10: budget "5/1.5h": period "1.5h" is not`,
		"5/0h":    `b.yaml:10: budget "5/0h": period "0h" is outside 1h to 366d`,
		"5/367d":  `b.yaml:10: budget "5/367d": period "367d" is outside 1h to 366d`,
		"5/1year": `b.yaml:10: budget "5/1year": period "1year" is not`,
	} {
		_, err := Parse("b.yaml", []byte(head+"    rpm: 5\n    budget: "+in+"\n"), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("budget %s: %v; want %q", in, err, want)
		}
	}
}

func TestTenancyFiles(t *testing.T) {
	cfg, err := Load("testdata/tenancy.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Keys[0]
	if k.RPM != 600 || k.TPM != 200000 || k.MaxConcurrent != 20 || k.Budget != (Budget{50, "month"}) || k.Patience.D() != 30*time.Second || k.Team != "apps" {
		t.Errorf("key %+v", k)
	}
	if tm := cfg.Teams[0]; tm.TPM != 1500000 || tm.Budget != (Budget{500, "30d"}) {
		t.Errorf("team %+v", tm)
	}
	if ws := cfg.Warnings(); len(ws) != 0 {
		t.Errorf("warnings with a store: %v", ws)
	}

	_, err = Load("testdata/tenancy.bad.yaml")
	if err == nil {
		t.Fatal("the bad file loaded")
	}
	// Type errors stop the load before the semantic checks.
	for _, want := range []string{
		`tenancy.bad.yaml:9: "lots" is not a count (write 600, 200k or 1.5m)`,
		`tenancy.bad.yaml:10: budget "50/year": period "year" is not day, week, month or a number of hours, days or weeks such as 1h, 12h, 30d`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	data, _ := os.ReadFile("testdata/tenancy.bad.yaml")
	fixed := strings.NewReplacer("tpm: lots", "tpm: 1k", "50/year", "50/month", "budget: 5\n", "budget: 5/day\n").Replace(string(data))
	_, err = Parse("tenancy.bad.yaml", []byte(fixed), func(string) (string, bool) { return "", false })
	for _, want := range []string{
		`tenancy.bad.yaml:6: keys[0].pools[1]: no pool is named "nope"`,
		`tenancy.bad.yaml:7: keys[0].models[1]: no pool is named "other" or has it as an alias`,
		`tenancy.bad.yaml:11: keys[0].max_concurrent: must not be negative`,
		`tenancy.bad.yaml:17: teams[0].max_concurrent: is a limit of keys, not of teams or orgs`,
		`tenancy.bad.yaml:18: teams[1].name: team name "apps" is used twice`,
		`tenancy.bad.yaml:19: store: set sqlite or postgres, not both`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}

	// Without a store, a key's team must be a team of the file, and a
	// budget draws a warning.
	noStore := strings.NewReplacer("store: {sqlite: a.db, postgres: postgres://x}\n", "").Replace(fixed)
	_, err = Parse("tenancy.bad.yaml", []byte(noStore), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), `tenancy.bad.yaml:5: keys[0].team: no team is named "nobody" (add it under teams)`) {
		t.Errorf("a key's unknown team without a store: %v", err)
	}
	ok := strings.NewReplacer("team: nobody", "team: apps", "pools: [chat, nope]", "pools: [chat]", "models: [chat-alias, other]", "models: [chat-alias]",
		"max_concurrent: -1", "max_concurrent: 1", "    max_concurrent: 4\n  - name: apps\n", "\n").Replace(noStore)
	cfg, err = Parse("tenancy.yaml", []byte(ok), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, ok)
	}
	ws := cfg.Warnings().Error()
	if !strings.Contains(ws, "tenancy.yaml:10: keys[0].budget: without a store") || !strings.Contains(ws, "tenancy.yaml:14: keys[1].budget") {
		t.Errorf("warnings: %s", ws)
	}
}

func TestKeyNamesLikeStoreIDsAreRefused(t *testing.T) {
	y := "keys:\n  - {name: key_abc, key: app-key-0123456789abcdef0123456789}\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	_, err := Parse("k.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), `k.yaml:2: keys[0].name: "key_abc": names starting with key_ are the store's key IDs`) {
		t.Fatalf("%v", err)
	}
}

func TestSQLiteStoreWithSharedStateWarns(t *testing.T) {
	y := "store: {sqlite: /var/lib/switchover/s.db}\nstate: {redis: {url: \"redis://127.0.0.1:6379\"}}\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	cfg, err := Parse("w.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 1 || !strings.Contains(ws.Error(), "w.yaml:1: store.sqlite: state.redis says several replicas") {
		t.Fatalf("warnings: %v", ws)
	}
}

// TestPostgresStoreWithoutStateWarns: several replicas on one PostgreSQL
// store without state.redis share spend only at store.refresh, and rate
// limits not at all; check says so.
func TestPostgresStoreWithoutStateWarns(t *testing.T) {
	base := "backends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	env := func(string) (string, bool) { return "", false }
	cfg, err := Parse("p.yaml", []byte("store: {postgres: \"postgres://u@db/s\", refresh: 10s}\n"+base), env)
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 1 || !strings.Contains(ws.Error(), "p.yaml:1: store.postgres: without state.redis") ||
		!strings.Contains(ws.Error(), "store.refresh, 10s") {
		t.Fatalf("warnings: %v", ws)
	}
	cfg, err = Parse("p.yaml", []byte("store: {postgres: \"postgres://u@db/s\"}\nstate: {redis: {url: \"redis://127.0.0.1:6379\"}}\n"+base), env)
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 0 {
		t.Fatalf("with state.redis: %v", ws)
	}
}

// TestKeyTeamNotInFileWithStoreWarns: with a store, a key of the file may
// name a team of the store, so a team the file lacks is a warning on its
// line, not an error (issue 24).
func TestKeyTeamNotInFileWithStoreWarns(t *testing.T) {
	y := "store: {sqlite: s.db}\nkeys:\n  - {name: app, key: app-key-0123456789abcdef0123456789, team: nosuch}\n  - {name: ok, key: ok-key-0123456789abcdef0123456789ab, team: apps}\nteams:\n  - {name: apps}\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	cfg, err := Parse("w.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if ws := cfg.Warnings(); len(ws) != 1 || !strings.Contains(ws.Error(), `w.yaml:3: keys[0].team: no team of this file is named "nosuch"`) {
		t.Fatalf("warnings: %v", ws)
	}
}

// TestSoftBudget: soft_budget is an amount below the budget, checked at
// its line.
func TestSoftBudget(t *testing.T) {
	const head = "listen: 127.0.0.1:8080\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\nteams:\n  - {name: t, budget: 100/30d, soft_budget: $40}\nkeys:\n  - name: app\n    key: app-key-0123456789abcdef0123456789\n"
	env := func(string) (string, bool) { return "", false }
	cfg, err := Parse("s.yaml", []byte(head+"    budget: 10/day\n    soft_budget: 8\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Keys[0].SoftBudget != 8 || cfg.Teams[0].SoftBudget != 40 {
		t.Errorf("soft budgets %v and %v, want 8 and 40", cfg.Keys[0].SoftBudget, cfg.Teams[0].SoftBudget)
	}
	for body, want := range map[string]string{
		"    soft_budget: 8\n":                      "s.yaml:11: keys[0].soft_budget: is an alert below the budget: set budget too",
		"    budget: 10/day\n    soft_budget: 10\n": "s.yaml:12: keys[0].soft_budget: $10 is not below the budget (10/day)",
		"    budget: 10/day\n    soft_budget: x\n":  `s.yaml:12: "x" is not an amount in US dollars from 0 to 1e9`,
	} {
		_, err := Parse("s.yaml", []byte(head+body), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
}

// TestPoolBudgets: a key's budgets of one pool name a pool, or a model
// that is a pool's name or alias; mistakes are named at their line.
func TestPoolBudgets(t *testing.T) {
	const head = "listen: 127.0.0.1:8080\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: gpt4o, aliases: [gpt-4o], members: [{backend: a}]}\n  - {name: o3, members: [{backend: a}]}\nkeys:\n  - name: app\n    key: app-key-0123456789abcdef0123456789\n    budgets:\n"
	env := func(string) (string, bool) { return "", false }
	cfg, err := Parse("p.yaml", []byte(head+"      - {pool: o3, budget: 5/1h}\n      - {model: gpt-4o, budget: 10/day}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	bs := cfg.Keys[0].Budgets
	if len(bs) != 2 || bs[0].PoolIn(cfg) != "o3" || bs[1].PoolIn(cfg) != "gpt4o" || bs[1].Budget != (Budget{10, "day"}) {
		t.Errorf("budgets %+v", bs)
	}
	for body, want := range map[string]string{
		"      - {pool: nope, budget: 5/day}\n":                                         `p.yaml:11: keys[0].budgets[0].pool: no pool is named "nope"`,
		"      - {model: gpt-5, budget: 5/day}\n":                                       `p.yaml:11: keys[0].budgets[0].model: no pool is named "gpt-5" or has it as an alias`,
		"      - {pool: o3, model: o3, budget: 5/day}\n":                                `p.yaml:11: keys[0].budgets[0]: give pool or model (one of them)`,
		"      - {pool: o3}\n":                                                          `p.yaml:11: keys[0].budgets[0]: needs a budget such as 10/day`,
		"      - {pool: gpt4o, budget: 5/day}\n      - {model: gpt-4o, budget: 1/1h}\n": `p.yaml:12: keys[0].budgets[1]: pool "gpt4o" has a budget already on this key`,
		"      - {pool: o3, budget: 5/10m}\n":                                           `p.yaml:11: budget "5/10m": period "10m" is not`,
	} {
		_, err := Parse("p.yaml", []byte(head+body), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
}

// TestOrgs: orgs take a team's limits, teams name one, and mistakes are
// named at their line.
func TestOrgs(t *testing.T) {
	const head = "listen: 127.0.0.1:8080\nbackends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	env := func(string) (string, bool) { return "", false }
	cfg, err := Parse("o.yaml", []byte(head+"orgs:\n  - {name: acme, rpm: 1000, budget: 1000/30d, soft_budget: 800}\nteams:\n  - {name: apps, org: acme}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.Orgs[0]; o.Name != "acme" || o.RPM != 1000 || o.Budget != (Budget{1000, "30d"}) || o.SoftBudget != 800 || cfg.Teams[0].Org != "acme" {
		t.Errorf("orgs %+v, teams %+v", cfg.Orgs, cfg.Teams)
	}
	for body, want := range map[string]string{
		"orgs:\n  - {name: acme}\nteams:\n  - {name: apps, org: acne}\n": `o.yaml:9: teams[0].org: no org is named "acne" (add it under orgs)`,
		"orgs:\n  - {name: acme}\n  - {name: acme}\n":                    `o.yaml:8: orgs[1].name: org name "acme" is used twice`,
		"orgs:\n  - {name: acme, max_concurrent: 3}\n":                   `o.yaml:7: orgs[0].max_concurrent: is a limit of keys, not of teams or orgs`,
		"orgs:\n  - {name: acme, budget: 5/day, soft_budget: 6}\n":       `o.yaml:7: orgs[0].soft_budget: $6 is not below the budget (5/day)`,
	} {
		_, err := Parse("o.yaml", []byte(head+body), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", body, err, want)
		}
	}
}
