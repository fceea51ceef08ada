package ledgerapi_test

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/ledgerapi"
)

// TestKeyLifecycle: create, list, use, rotate (the old secret stops
// working), revoke (the new one too); OnChange after each change; the
// secret is in the answers of create and rotate only, and never in a log.
func TestKeyLifecycle(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s, func(h *ledgerapi.Handler) {
			h.Pools = func() []string { return []string{"chat-prod", "embed"} }
			h.Models = func() []string { return []string{"chat-prod", "embed", "gpt-4o"} }
			h.Static = func() []ledger.Key {
				return []ledger.Key{{ID: "cfg_app", Name: "app", Prefix: "cfg", Hash: []byte("config-hash")}}
			}
			h.StaticTeams = func() []ledger.Team { return []ledger.Team{{Name: "research"}} }
		})
		lc := &keyLifecycle{e: e, s: s}
		lc.create(t)
		lc.list(t)
		lc.rotate(t)
		lc.revoke(t)
		lc.refuseRevoked(t)
		lc.refuseUnknownAndConfig(t)
		lc.showNoSecret(t)
	})
}

// keyLifecycle is one store key through TestKeyLifecycle's steps, which
// run in order, each on what the ones before did.
type keyLifecycle struct {
	e       *env
	s       ledger.Store
	created keyAnswer         // the answer to create
	k       ledgerapi.KeyView // the key as create showed it
	rotated keyAnswer         // the answer to rotate
	gets    [][]byte          // every GET answer, to look for secrets in
}

// create: the answer has a secret and the key as asked, no hash, and
// OnChange is called; the secret works, and the stored key is what the
// API showed.
func (lc *keyLifecycle) create(t *testing.T) {
	e := lc.e
	raw := e.json("POST", "/admin/keys", `{"name":"app-team","team":"research","pools":["chat-prod","embed"],
			"models":["gpt-4o"],"rpm":600,"tpm":"200k","max_concurrent":10,"budget":"50/month","expires":"90d"}`,
		http.StatusCreated, &lc.created)
	created := lc.created
	k := created.Key
	lc.k = k
	if !strings.HasPrefix(created.Secret, ledger.SecretPrefix) || !strings.HasPrefix(k.ID, "key_") {
		t.Fatalf("create answered %s", raw)
	}
	want := ledger.Key{ID: k.ID, Name: "app-team", Team: "research", Prefix: k.Prefix,
		Pools: []string{"chat-prod", "embed"}, Models: []string{"gpt-4o"}, RPM: 600, TPM: 200000,
		MaxConcurrent: 10, Budget: 50, BudgetPeriod: "month", Expires: now.Add(90 * 24 * time.Hour), Created: now}
	if !reflect.DeepEqual(k.Key, want) || k.Source != "store" || k.State != "active" {
		t.Fatalf("created %+v\nwant %+v, source store, state active", k, want)
	}
	if strings.Contains(string(raw), "hash") {
		t.Fatalf("create shows a hash: %s", raw)
	}
	if n := e.changes.Load(); n != 1 {
		t.Fatalf("OnChange called %d times after create, want 1", n)
	}

	got, err := ledger.Verify(t.Context(), lc.s, created.Secret, now)
	if err != nil {
		t.Fatalf("Verify(created secret): %v", err)
	}
	got.Hash = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %+v\nwant %+v", got, want)
	}
}

// list: the store's key, then the config's; each can be got by its ID.
func (lc *keyLifecycle) list(t *testing.T) {
	e, k := lc.e, lc.k
	var list struct{ Keys []ledgerapi.KeyView }
	raw := e.json("GET", "/admin/keys", "", http.StatusOK, &list)
	if len(list.Keys) != 2 || list.Keys[0].ID != k.ID || list.Keys[0].Source != "store" ||
		list.Keys[1].ID != "cfg_app" || list.Keys[1].Source != "config" || list.Keys[1].State != "active" {
		t.Fatalf("list = %s; want the store's key then the config's", raw)
	}
	lc.gets = append(lc.gets, raw)
	lc.gets = append(lc.gets, e.json("GET", "/admin/keys/"+k.ID, "", http.StatusOK, nil))
	lc.gets = append(lc.gets, e.json("GET", "/admin/keys/cfg_app", "", http.StatusOK, nil))
}

// rotate: a new secret, the old one stops working at once.
func (lc *keyLifecycle) rotate(t *testing.T) {
	ctx, k, created := t.Context(), lc.k, lc.created
	lc.e.json("POST", "/admin/keys/"+k.ID+"/rotate", "", http.StatusOK, &lc.rotated)
	rotated := lc.rotated
	if rotated.Secret == "" || rotated.Secret == created.Secret || rotated.Key.Prefix == k.Prefix || rotated.Key.ID != k.ID {
		t.Fatalf("rotate = %+v; want a new secret and prefix for %s", rotated.Key, k.ID)
	}
	if _, err := ledger.Verify(ctx, lc.s, created.Secret, now); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Verify(old secret) after rotate = %v, want ErrNotFound", err)
	}
	if _, err := ledger.Verify(ctx, lc.s, rotated.Secret, now); err != nil {
		t.Fatalf("Verify(new secret) = %v", err)
	}
}

// revoke: the key stays listed, revoked; its secret fails.
func (lc *keyLifecycle) revoke(t *testing.T) {
	e, k := lc.e, lc.k
	var revoked keyAnswer
	raw := e.json("POST", "/admin/keys/"+k.ID+"/revoke", "", http.StatusOK, &revoked)
	if revoked.Key.State != "revoked" || !revoked.Key.Revoked.Equal(now) || revoked.Secret != "" {
		t.Fatalf("revoke = %s; want state revoked at %v and no secret", raw, now)
	}
	if _, err := ledger.Verify(t.Context(), lc.s, lc.rotated.Secret, now); !errors.Is(err, ledger.ErrRevoked) {
		t.Fatalf("Verify after revoke = %v, want ErrRevoked", err)
	}
	var list struct{ Keys []ledgerapi.KeyView }
	lc.gets = append(lc.gets, e.json("GET", "/admin/keys", "", http.StatusOK, &list))
	if len(list.Keys) != 2 || list.Keys[0].State != "revoked" {
		t.Fatalf("list after revoke = %+v", list.Keys)
	}
	lc.gets = append(lc.gets, e.json("GET", "/admin/keys/"+k.ID, "", http.StatusOK, nil))
	if n := e.changes.Load(); n != 3 {
		t.Fatalf("OnChange called %d times after create, rotate, revoke; want 3", n)
	}
}

// refuseRevoked: a revoked key gets no new secret.
func (lc *keyLifecycle) refuseRevoked(t *testing.T) {
	var again errorAnswer
	lc.e.json("POST", "/admin/keys/"+lc.k.ID+"/rotate", "", http.StatusConflict, &again)
	if !strings.Contains(again.Error.Message, "is revoked") {
		t.Errorf("rotating a revoked key: %q; want it to say the key is revoked", again.Error.Message)
	}
}

// refuseUnknownAndConfig: unknown keys are 404; keys of the config cannot
// change here; neither calls OnChange.
func (lc *keyLifecycle) refuseUnknownAndConfig(t *testing.T) {
	e := lc.e
	for _, p := range []string{"/admin/keys/key_nope/rotate", "/admin/keys/key_nope/revoke"} {
		e.json("POST", p, "", http.StatusNotFound, nil)
	}
	e.json("GET", "/admin/keys/key_nope", "", http.StatusNotFound, nil)
	e.json("PATCH", "/admin/keys/key_nope", `{"rpm":1}`, http.StatusNotFound, nil)
	var ro errorAnswer
	e.json("POST", "/admin/keys/cfg_app/rotate", "", http.StatusConflict, &ro)
	if !strings.Contains(ro.Error.Message, "config file") {
		t.Errorf("rotating a config key: %q; want it to say the key is in the config file", ro.Error.Message)
	}
	e.json("PATCH", "/admin/keys/cfg_app", `{"rpm":1}`, http.StatusConflict, nil)
	e.json("POST", "/admin/keys/cfg_app/revoke", "", http.StatusConflict, nil)
	if n := e.changes.Load(); n != 3 {
		t.Fatalf("OnChange called %d times after refused changes, want still 3", n)
	}
}

// showNoSecret: no secret and no hash in any GET answer, nor in the log,
// which has a Warn line for each change.
func (lc *keyLifecycle) showNoSecret(t *testing.T) {
	logged := lc.e.log.String()
	for _, sec := range []string{lc.created.Secret, lc.rotated.Secret} {
		body := sec[len(ledger.SecretPrefix)+ledger.PrefixLen:] // the part that is not the prefix
		for _, g := range lc.gets {
			if strings.Contains(string(g), body) || strings.Contains(string(g), "hash") {
				t.Fatalf("a GET answer shows a secret or hash: %s", g)
			}
		}
		if strings.Contains(logged, body) {
			t.Fatalf("the log shows a secret:\n%s", logged)
		}
	}
	for _, g := range lc.gets {
		if strings.Contains(string(g), "config-hash") || strings.Contains(string(g), "Y29uZmlnLWhhc2g") {
			t.Fatalf("a GET answer shows a config key's hash: %s", g)
		}
	}
	for _, action := range []string{"key:create", "key:rotate", "key:revoke"} {
		if !strings.Contains(logged, "level=WARN msg=\"admin action\" action="+action+" key="+lc.k.ID+" name=app-team") {
			t.Errorf("no Warn line for %s of %s in the log:\n%s", action, lc.k.ID, logged)
		}
	}
}

// TestPatchKey: PATCH changes the fields given, leaves absent and null
// ones alone, and clears with empty values.
func TestPatchKey(t *testing.T) {
	s := openSQLite(t)
	e := newEnv(t, s)
	if err := s.PutTeam(t.Context(), ledger.Team{Name: "infra"}); err != nil {
		t.Fatal(err)
	}
	var c keyAnswer
	e.json("POST", "/admin/keys", `{"name":"ci","team":"infra","pools":["a"],"rpm":"1k","tpm":5000,
		"budget_usd":12.5,"budget_period":"week","expires":"2027-01-01T00:00:00Z"}`, http.StatusCreated, &c)
	id := c.Key.ID
	steps := []struct {
		name string
		body string
		want func(k *ledger.Key)
	}{
		{"nothing", `{}`, func(k *ledger.Key) {}},
		{"nulls leave alone", `{"name":null,"rpm":null,"pools":null,"budget":null,"expires":null}`, func(k *ledger.Key) {}},
		{"some fields", `{"rpm":60,"models":["m1","m1","m2"],"max_concurrent":"4"}`, func(k *ledger.Key) {
			k.RPM, k.Models, k.MaxConcurrent = 60, []string{"m1", "m2"}, 4
		}},
		{"budget amount keeps the period", `{"budget_usd":20}`, func(k *ledger.Key) { k.Budget = 20 }},
		{"budget as a number and period", `{"budget":3,"budget_period":"day"}`, func(k *ledger.Key) {
			k.Budget, k.BudgetPeriod = 3, "day"
		}},
		{"budget string", `{"budget":"$7.5/monthly"}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod = 7.5, "month" }},
		{"budget per 30 days", `{"budget":"100/30d"}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod = 100, "30d" }},
		{"soft budget", `{"soft_budget":"$4"}`, func(k *ledger.Key) { k.SoftBudget = 4 }},
		{"pool budgets", `{"budgets":[{"pool":"a","budget":"5/1h"},{"pool":"b","budget":"$10/30d"}]}`, func(k *ledger.Key) {
			k.Budgets = []ledger.ScopedBudget{{Pool: "a", Budget: 5, Period: "1h"}, {Pool: "b", Budget: 10, Period: "30d"}}
		}},
		{"pool budgets removed", `{"budgets":[]}`, func(k *ledger.Key) { k.Budgets = nil }},
		{"soft budget removed with the budget", `{"budget":"none"}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod, k.SoftBudget = 0, "", 0 }},
		{"budget and soft budget", `{"budget":"10/day","soft_budget":8}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod, k.SoftBudget = 10, "day", 8 }},
		{"budget period in hours", `{"budget":20,"budget_period":"48h"}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod = 20, "2d" }},
		{"budget lowered below the soft budget", `{"budget":"5/day","soft_budget":1}`, func(k *ledger.Key) { k.Budget, k.BudgetPeriod, k.SoftBudget = 5, "day", 1 }},
		{"relative expiry", `{"expires":"36h"}`, func(k *ledger.Key) { k.Expires = now.Add(36 * time.Hour) }},
		{"clear", `{"team":"","pools":[],"models":[],"rpm":0,"budget":"none","expires":"never"}`, func(k *ledger.Key) {
			k.Team, k.Pools, k.Models, k.RPM, k.Budget, k.BudgetPeriod, k.SoftBudget, k.Expires = "", nil, nil, 0, 0, "", 0, time.Time{}
		}},
		{"rename", `{"name":"ci-2"}`, func(k *ledger.Key) { k.Name = "ci-2" }},
		{"patience", `{"patience":"90s"}`, func(k *ledger.Key) { k.Patience = 90 * time.Second }},
		{"patience removed", `{"patience":"none"}`, func(k *ledger.Key) { k.Patience = 0 }},
	}
	want := c.Key.Key
	for _, st := range steps {
		st.want(&want)
		var got keyAnswer
		e.json("PATCH", "/admin/keys/"+id, st.body, http.StatusOK, &got)
		// The answer shows the patience as a string of its own.
		shownPatience := ""
		if want.Patience > 0 {
			shownPatience = want.Patience.String()
		}
		wantShown := want
		wantShown.Patience = 0
		if !reflect.DeepEqual(got.Key.Key, wantShown) || got.Key.Patience != shownPatience {
			t.Fatalf("%s: PATCH %s answered\n%+v (patience %q)\nwant\n%+v (patience %q)", st.name, st.body, got.Key.Key, got.Key.Patience, wantShown, shownPatience)
		}
		stored, _ := s.Keys(t.Context())
		stored[0].Hash = nil
		if !reflect.DeepEqual(stored[0], want) {
			t.Fatalf("%s: stored\n%+v\nwant\n%+v", st.name, stored[0], want)
		}
	}
	if n := e.changes.Load(); n != int64(1+len(steps)) {
		t.Errorf("OnChange called %d times, want %d", n, 1+len(steps))
	}
	// An expired key shows as expired.
	e.h.Now = func() time.Time { return now.Add(100 * 24 * time.Hour) }
	e.json("PATCH", "/admin/keys/"+id, `{"expires":"2027-01-01T00:00:00Z"}`, http.StatusBadRequest, nil) // in the past now
	e.h.Now = func() time.Time { return now }
	e.json("PATCH", "/admin/keys/"+id, `{"expires":"2026-12-02T00:00:00Z"}`, http.StatusOK, nil)
	e.h.Now = func() time.Time { return now.Add(48 * time.Hour) }
	e.h.Now = func() time.Time { return now }
	e.json("PATCH", "/admin/keys/"+id, `{"patience":"2m"}`, http.StatusOK, nil)
	e.h.Now = func() time.Time { return now.Add(48 * time.Hour) }
	var shown keyAnswer
	raw := e.json("GET", "/admin/keys/"+id, "", http.StatusOK, &shown)
	if !strings.Contains(string(raw), `"patience": "2m0s"`) && !strings.Contains(string(raw), `"patience":"2m0s"`) {
		t.Errorf("the key's patience as shown: %s", raw)
	}
	if shown.Key.State != "expired" {
		t.Errorf("state after expiry = %q, want expired", shown.Key.State)
	}
}

// TestBadKeyInput: bad input is 400, the message starting with the field,
// and changes nothing.
func TestBadKeyInput(t *testing.T) {
	s := openSQLite(t)
	e := newEnv(t, s, func(h *ledgerapi.Handler) {
		h.Pools = func() []string { return []string{"chat-prod"} }
		h.Models = func() []string { return []string{"chat-prod", "gpt-4o"} }
	})
	var c keyAnswer
	e.json("POST", "/admin/keys", `{"name":"base"}`, http.StatusCreated, &c)
	tests := []struct {
		name, method, body, field string
	}{
		{"no name", "POST", `{"rpm":1}`, "name:"},
		{"empty name", "POST", `{"name":" "}`, "name:"},
		{"empty name on patch", "PATCH", `{"name":""}`, "name:"},
		{"name not a string", "POST", `{"name":5}`, "name:"},
		{"unknown field", "POST", `{"name":"a","rpn":5}`, `"rpn"`},
		{"not JSON", "POST", `{"name":`, "body:"},
		{"two objects", "POST", `{"name":"a"} {}`, "body:"},
		{"rpm not a count", "POST", `{"name":"a","rpm":"lots"}`, "rpm:"},
		{"rpm negative", "PATCH", `{"rpm":-1}`, "rpm:"},
		{"rpm fractional", "POST", `{"name":"a","rpm":1.5}`, "rpm:"},
		{"rpm a list", "POST", `{"name":"a","rpm":[1]}`, "rpm:"},
		{"tpm not a count", "POST", `{"name":"a","tpm":"2x"}`, "tpm:"},
		{"max_concurrent", "POST", `{"name":"a","max_concurrent":"many"}`, "max_concurrent:"},
		{"max_concurrent too large", "POST", `{"name":"a","max_concurrent":1e12}`, "max_concurrent:"},
		{"unknown pool", "POST", `{"name":"a","pools":["chat-prod","nope"]}`, "pools[1]:"},
		{"empty pool", "PATCH", `{"pools":[""]}`, "pools[0]:"},
		{"pools not a list", "POST", `{"name":"a","pools":"chat-prod"}`, "pools:"},
		{"unknown model", "PATCH", `{"models":["gpt-5"]}`, "models[0]:"},
		{"budget without period", "POST", `{"name":"a","budget":"50"}`, "budget:"},
		{"budget period unknown", "POST", `{"name":"a","budget":"50/year"}`, "budget:"},
		{"budget negative", "POST", `{"name":"a","budget":"-5/day"}`, "budget:"},
		{"budget_usd without period", "POST", `{"name":"a","budget_usd":5}`, "budget_period:"},
		{"budget_period unknown", "POST", `{"name":"a","budget_usd":5,"budget_period":"year"}`, "budget_period:"},
		{"pool budget of no pool", "POST", `{"name":"a","budgets":[{"pool":"nope","budget":"5/day"}]}`, "budgets[0].pool:"},
		{"pool budget twice", "POST", `{"name":"a","budgets":[{"pool":"chat-prod","budget":"5/day"},{"pool":"chat-prod","budget":"1/1h"}]}`, "budgets[1].pool:"},
		{"pool budget bad", "POST", `{"name":"a","budgets":[{"pool":"chat-prod","budget":"5/year"}]}`, "budgets[0].budget:"},
		{"soft budget without a budget", "POST", `{"name":"a","soft_budget":5}`, "soft_budget:"},
		{"soft budget above the budget", "POST", `{"name":"a","budget":"5/day","soft_budget":"6"}`, "soft_budget:"},
		{"soft budget not an amount", "POST", `{"name":"a","budget":"5/day","soft_budget":"lots"}`, "soft_budget:"},
		{"budget period under an hour", "POST", `{"name":"a","budget":"5/30m"}`, "budget:"},
		{"budget_period over 366d", "POST", `{"name":"a","budget_usd":5,"budget_period":"400d"}`, "budget_period:"},
		{"budget_usd negative", "PATCH", `{"budget_usd":-1,"budget_period":"day"}`, "budget_usd:"},
		{"budget and budget_usd", "POST", `{"name":"a","budget":"5/day","budget_usd":5}`, "budget_usd:"},
		{"budget a bool", "POST", `{"name":"a","budget":true}`, "budget:"},
		{"expires unreadable", "POST", `{"name":"a","expires":"soon"}`, "expires:"},
		{"expires in the past", "POST", `{"name":"a","expires":"2026-11-01T00:00:00Z"}`, "expires:"},
		{"expires negative", "PATCH", `{"expires":"-3d"}`, "expires:"},
		{"expires a number", "POST", `{"name":"a","expires":90}`, "expires:"},
		{"patience unreadable", "POST", `{"name":"a","patience":"forever"}`, "patience:"},
		{"patience negative", "PATCH", `{"patience":"-1s"}`, "patience:"},
		{"patience a number", "POST", `{"name":"a","patience":30}`, "patience:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/admin/keys"
			if tc.method == "PATCH" {
				path += "/" + c.Key.ID
			}
			var a errorAnswer
			e.json(tc.method, path, tc.body, http.StatusBadRequest, &a)
			if !strings.Contains(a.Error.Message, tc.field) {
				t.Fatalf("message %q does not name %s", a.Error.Message, tc.field)
			}
		})
	}
	ks, _ := s.Keys(t.Context())
	ks[0].Hash = nil
	if len(ks) != 1 || !reflect.DeepEqual(ks[0], c.Key.Key) {
		t.Fatalf("after bad input the keys are %+v; want only %+v, unchanged", ks, c.Key.Key)
	}
	if n := e.changes.Load(); n != 1 {
		t.Fatalf("OnChange called %d times, want 1 (the first create)", n)
	}
}

// TestRotateWithGrace: POST /admin/keys/{id}/rotate with {"grace":"10m"}
// keeps the old secret working until then (the key shows its prefix and
// end), and a bad grace is 400 naming the field, on both stores.
// Issue 24.
func TestRotateWithGrace(t *testing.T) {
	eachStore(t, func(t *testing.T, s ledger.Store) {
		e := newEnv(t, s)
		var c keyAnswer
		e.json("POST", "/admin/keys", `{"name":"app"}`, http.StatusCreated, &c)
		for _, body := range []string{`{"grace":"soon"}`, `{"grace":"31d"}`, `{"grace":-5}`, `{"gracefully":"10m"}`} {
			var a errorAnswer
			e.json("POST", "/admin/keys/"+c.Key.ID+"/rotate", body, http.StatusBadRequest, &a)
			if !strings.Contains(a.Error.Message, "grace") {
				t.Errorf("rotate %s: %q does not name grace", body, a.Error.Message)
			}
		}
		var r keyAnswer
		e.json("POST", "/admin/keys/"+c.Key.ID+"/rotate", `{"grace":"10m"}`, http.StatusOK, &r)
		if r.Key.PrevPrefix != c.Key.Prefix || !r.Key.PrevUntil.Equal(now.Add(10*time.Minute)) || r.Secret == "" {
			t.Fatalf("rotated with grace: %+v", r.Key)
		}
		for _, secret := range []string{c.Secret, r.Secret} {
			if k, err := ledger.Verify(t.Context(), s, secret, now.Add(9*time.Minute)); err != nil || k.ID != c.Key.ID {
				t.Errorf("Verify in the grace: %v, %v", k.ID, err)
			}
		}
		if _, err := ledger.Verify(t.Context(), s, c.Secret, now.Add(10*time.Minute)); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Verify of the old secret after the grace: %v, want ErrNotFound", err)
		}
		var r2 keyAnswer
		e.json("POST", "/admin/keys/"+c.Key.ID+"/rotate", "", http.StatusOK, &r2)
		if r2.Key.PrevPrefix != "" || !r2.Key.PrevUntil.IsZero() {
			t.Errorf("rotated without grace, the key still shows a previous secret: %+v", r2.Key)
		}
		if _, err := ledger.Verify(t.Context(), s, c.Secret, now); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Verify of the kept secret after a rotation without grace: %v, want ErrNotFound", err)
		}
	})
}
