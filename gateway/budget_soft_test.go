package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestSoftBudgetNotifiesAndRefusesNothing, on SQLite and PostgreSQL: a key's soft budget sends one
// budget notification when its spend reaches it (in place of the one at
// 80%), refuses nothing, and the budget still stops the key.
func TestSoftBudgetNotifiesAndRefusesNothing(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testSoftBudget(t, st.yaml(t)) })
	}
}

func testSoftBudget(t *testing.T, store string) {
	hook := newWebhook(t)
	per := perCall
	extra := store + fmt.Sprintf("notifications: {webhooks: [{url: %q}]}\nkeys:\n  - {name: app, key: %s, budget: %s/1h, soft_budget: %s}\n",
		hook.srv.URL, tenantKey, fmt.Sprint(5*per), fmt.Sprint(2*per))
	e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
	n := 0
	for ; n < 20; n++ {
		if st, _, _ := post(t, e.url, tenantKey, chatBody); st != http.StatusOK {
			break
		}
	}
	if n != 5 {
		t.Fatalf("%d requests admitted on a budget of 5 requests' cost with a soft budget of 2, want 5", n)
	}
	eventually(t, "two budget notifications", func() bool { return len(hook.got("budget")) == 2 })
	got := hook.got("budget")
	if !strings.Contains(got[0], "soft budget") || !strings.Contains(got[1], "whole budget") {
		t.Errorf("budget notifications: %q", got)
	}
}

// TestPoolBudgetStopsItsPool, on SQLite and PostgreSQL: a key's budget of one pool, named by a
// model alias, stops the key's requests to that pool once spent, with
// 429 budget_exceeded naming the pool.
func TestPoolBudgetStopsItsPool(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testPoolBudget(t, st.yaml(t)) })
	}
}

func testPoolBudget(t *testing.T, store string) {
	per := perCall
	extra := store + fmt.Sprintf("keys:\n  - name: app\n    key: %s\n    budgets: [{model: claude-sonnet-4-5, budget: %s/1h}]\n",
		tenantKey, fmt.Sprint(3*per))
	e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
	n := 0
	var last []byte
	for ; n < 10; n++ {
		st, _, b := post(t, e.url, tenantKey, chatBody)
		if st != http.StatusOK {
			last = b
			break
		}
	}
	if n != 3 || !strings.Contains(string(last), "budget_exceeded") || !strings.Contains(string(last), "on pool chat-prod") {
		t.Fatalf("%d requests admitted on a pool budget of 3 requests' cost, want 3; then %s", n, last)
	}
}

// TestOrgBudgetStopsItsTeams, on SQLite and PostgreSQL: an org's budget holds for the keys of its
// teams, on top of theirs.
func TestOrgBudgetStopsItsTeams(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testOrgBudget(t, st.yaml(t)) })
	}
}

func testOrgBudget(t *testing.T, store string) {
	per := perCall
	extra := store + fmt.Sprintf("orgs:\n  - {name: acme, budget: %s/day}\nteams:\n  - {name: apps, org: acme}\nkeys:\n  - {name: app, key: %s, team: apps}\n",
		fmt.Sprint(3*per), tenantKey)
	e := startProvidersWith(t, []string{"openai"}, nil, extra, outputPriced)
	n := 0
	var last []byte
	for ; n < 10; n++ {
		st, _, b := post(t, e.url, tenantKey, chatBody)
		if st != http.StatusOK {
			last = b
			break
		}
	}
	if n != 3 || !strings.Contains(string(last), "budget_exceeded") || !strings.Contains(string(last), "org acme") {
		t.Fatalf("%d requests admitted on an org budget of 3 requests' cost, want 3; then %s", n, last)
	}
}
