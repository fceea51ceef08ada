// Package ledgertest is the conformance suite of ledger.Store: the same
// tests, run against every implementation (SQLite and PostgreSQL), with
// exact expected numbers.
package ledgertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
)

// Harness tells Run how to get stores.
type Harness struct {
	// Open returns a new, empty store, closed by the caller's cleanup.
	Open func(t *testing.T) ledger.Store
	// Break, if not nil, makes s fail to record usage (disk full,
	// database down) until the returned function is called.
	Break func(t *testing.T, s ledger.Store) (restore func())
}

// Run runs the suite as subtests of t. The tests of a store of their own
// run side by side; the ones that break the store (Break stops
// PostgreSQL) run alone, before them (parallel subtests start once Run
// returns).
func Run(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		test func(*testing.T, ledger.Store)
	}{
		{"KeyLifecycle", testKeyLifecycle},
		{"Teams", testTeams},
		{"UsageIdempotent", testUsageIdempotent},
		{"Spend", testSpend},
		{"SpentSince", testSpentSince},
		{"ConcurrentRecording", testConcurrent},
		{"ObjectOwners", testObjectOwners},
		{"KeyTags", testKeyTags},
		{"KeyRequestLog", testKeyRequestLog},
		{"SpendByTag", testSpendByTag},
		{"Requests", testRequests},
		{"RequestLog", testRequestLog},
		{"Retention", testRetention},
		{"RetentionHold", testRetentionHold},
		{"EndUsers", testEndUsers},
		{"Traffic", testTraffic},
		{"TrafficRetention", testTrafficRetention},
		{"Audit", testAudit},
		{"AuditRetention", testAuditRetention},
		{"RequestBodies", testRequestBodies},
		{"BodiesRetention", testBodiesRetention},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, h.Open(t))
		})
	}
	if h.Break != nil {
		t.Run("WriterSurvivesStoreFailure", func(t *testing.T) { testFailure(t, h) })
		t.Run("AuditLogSurvivesRestart", func(t *testing.T) { testAuditLogSurvivesRestart(t, h) })
	}
}

var t0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC) // a Monday

func testKeyLifecycle(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	k, secret, err := ledger.NewKey(ctx, s, ledger.Key{
		Name: "ci", Team: "infra", Pools: []string{"main"}, Models: []string{"gpt-4o", "gpt-4o-mini"},
		RPM: 60, TPM: 100000, MaxConcurrent: 4, Budget: 12.5, BudgetPeriod: ledger.PeriodMonth,
		Expires: t0.Add(48 * time.Hour), Patience: 90 * time.Second,
	}, t0)
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	if !strings.HasPrefix(k.ID, "key_") || !strings.HasPrefix(secret, ledger.SecretPrefix+k.Prefix) {
		t.Fatalf("NewKey = ID %q, prefix %q, secret %q…: want key_…, and the secret to start with sk-so-<prefix>", k.ID, k.Prefix, secret[:10])
	}
	got, err := ledger.Verify(ctx, s, secret, t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("Verify(new secret): %v", err)
	}
	want := k
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Verify returned\n%+v\nwant\n%+v", got, want)
	}

	// Wrong, unknown and malformed secrets all read as not found.
	wrong := secret[:len(secret)-1] + flip(secret[len(secret)-1])
	other, _, _ := ledger.NewSecret()
	for name, sec := range map[string]string{"wrong": wrong, "unknown": other, "malformed": "sk-so-short", "provider": "sk-proj-abc"} {
		if _, err := ledger.Verify(ctx, s, sec, t0); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("Verify(%s secret) = %v, want ErrNotFound", name, err)
		}
	}
	if _, err := ledger.Verify(ctx, s, secret, t0.Add(48*time.Hour)); !errors.Is(err, ledger.ErrExpired) {
		t.Errorf("Verify at expiry = %v, want ErrExpired", err)
	}

	// The list never shows the hash in JSON.
	ks, err := s.Keys(ctx)
	if err != nil || len(ks) != 1 || ks[0].ID != k.ID {
		t.Fatalf("Keys = %v, %v; want [%s]", ks, err, k.ID)
	}
	b, _ := json.Marshal(ks)
	if strings.Contains(string(b), "hash") || strings.Contains(string(b), secret[len(ledger.SecretPrefix)+ledger.PrefixLen:]) {
		t.Fatalf("Keys as JSON shows the hash or the secret: %s", b)
	}

	// Update changes limits, not the secret.
	k.RPM, k.Models, k.Expires, k.BudgetPeriod, k.Patience = 120, nil, time.Time{}, "12h", 5*time.Second
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatalf("UpdateKey: %v", err)
	}
	if got, err := ledger.Verify(ctx, s, secret, t0.Add(72*time.Hour)); err != nil || got.RPM != 120 || got.Models != nil || !got.Expires.IsZero() || got.Patience != 5*time.Second || got.BudgetPeriod != "12h" {
		t.Fatalf("after UpdateKey, Verify = %+v, %v; want RPM 120, all models, no expiry, patience 5s, budget per 12h", got, err)
	}
	// A soft budget and budgets of a pool and a model are kept, and
	// replaced by the next update.
	k.Budget, k.SoftBudget = 10, 4
	k.Budgets = []ledger.ScopedBudget{{Pool: "main", Budget: 2.5, Period: "1h"}, {Pool: "o3", Budget: 5, Period: "day"}}
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatalf("UpdateKey with budgets: %v", err)
	}
	wantScoped := []ledger.ScopedBudget{{Pool: "main", Budget: 2.5, Period: "1h"}, {Pool: "o3", Budget: 5, Period: "day"}}
	if got, err := ledger.Verify(ctx, s, secret, t0); err != nil || got.SoftBudget != 4 || !reflect.DeepEqual(got.Budgets, wantScoped) {
		t.Fatalf("after UpdateKey with budgets, Verify = %+v, %v; want soft budget 4 and %+v", got, err, wantScoped)
	}
	k.SoftBudget, k.Budgets = 0, k.Budgets[:1]
	if err := s.UpdateKey(ctx, k); err != nil {
		t.Fatalf("UpdateKey: %v", err)
	}
	if ks, err := s.Keys(ctx); err != nil || len(ks) != 1 || ks[0].SoftBudget != 0 || !reflect.DeepEqual(ks[0].Budgets, wantScoped[:1]) {
		t.Fatalf("Keys after removing the soft budget and a scoped one = %+v, %v", ks, err)
	}
	for name, bad := range map[string]ledger.Key{
		"soft not below":        {ID: k.ID, Budget: 5, BudgetPeriod: "day", SoftBudget: 5},
		"soft without budget":   {ID: k.ID, SoftBudget: 1},
		"scoped without a pool": {ID: k.ID, Budgets: []ledger.ScopedBudget{{Budget: 1, Period: "day"}}},
		"scoped without amount": {ID: k.ID, Budgets: []ledger.ScopedBudget{{Pool: "a", Period: "day"}}},
		"scoped bad period":     {ID: k.ID, Budgets: []ledger.ScopedBudget{{Pool: "a", Budget: 1, Period: "year"}}},
		"scoped twice":          {ID: k.ID, Budgets: []ledger.ScopedBudget{{Pool: "a", Budget: 1, Period: "day"}, {Pool: "a", Budget: 2, Period: "day"}}},
	} {
		if err := s.UpdateKey(ctx, bad); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("UpdateKey(%s) = %v, want ErrInvalid", name, err)
		}
	}
	if err := s.UpdateKey(ctx, ledger.Key{ID: "key_nope"}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("UpdateKey(unknown) = %v, want ErrNotFound", err)
	}
	if err := s.UpdateKey(ctx, ledger.Key{ID: k.ID, BudgetPeriod: "fortnight"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("UpdateKey(period fortnight) = %v, want ErrInvalid", err)
	}

	// Rotation: the old secret stops working, the new one works.
	newSecret, err := ledger.Rotate(ctx, s, k.ID, time.Time{})
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if _, err := ledger.Verify(ctx, s, secret, t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Verify(old secret after rotation) = %v, want ErrNotFound", err)
	}
	if got, err := ledger.Verify(ctx, s, newSecret, t0); err != nil || got.ID != k.ID {
		t.Errorf("Verify(new secret) = %v, %v; want %s", got.ID, err, k.ID)
	}
	if _, err := ledger.Rotate(ctx, s, "key_nope", time.Time{}); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Rotate(unknown) = %v, want ErrNotFound", err)
	}

	newSecret = rotateWithGrace(t, s, k.ID, newSecret, t0)

	// A second key may not reuse a prefix.
	k2, _, err := ledger.NewKey(ctx, s, ledger.Key{Name: "other"}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := s.Keys(ctx)
	dup := ledger.Key{ID: "key_dup", Prefix: cur[0].Prefix, Hash: []byte("x"), Created: t0}
	if err := s.CreateKey(ctx, dup); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("CreateKey(taken prefix) = %v, want ErrConflict", err)
	}
	if err := s.RotateKey(ctx, k2.ID, cur[0].Prefix, []byte("x"), time.Time{}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("RotateKey(taken prefix) = %v, want ErrConflict", err)
	}

	// Revocation keeps the first time.
	if err := s.RevokeKey(ctx, k.ID, t0.Add(time.Hour)); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if err := s.RevokeKey(ctx, k.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatalf("RevokeKey again: %v", err)
	}
	if _, err := ledger.Verify(ctx, s, newSecret, t0); !errors.Is(err, ledger.ErrRevoked) {
		t.Errorf("Verify(revoked) = %v, want ErrRevoked", err)
	}
	if err := s.RevokeKey(ctx, "key_nope", t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("RevokeKey(unknown) = %v, want ErrNotFound", err)
	}
	ks, _ = s.Keys(ctx)
	if len(ks) != 2 || ks[0].ID != k.ID || !ks[0].Revoked.Equal(t0.Add(time.Hour)) || ks[1].ID != k2.ID || !ks[1].Revoked.IsZero() {
		t.Errorf("Keys after revocation = %+v; want %s revoked at %v, then %s", ks, k.ID, t0.Add(time.Hour), k2.ID)
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func testTeams(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	for _, tm := range []ledger.Team{
		{Name: "research", RPM: 10, Budget: 1},
		{Name: "infra", TPM: 5000, Budget: 100.25, BudgetPeriod: ledger.PeriodWeek},
		{Name: "research", RPM: 20, Budget: 2.5, BudgetPeriod: ledger.PeriodDay}, // replaces
		{Name: "hourly", Budget: 5, BudgetPeriod: "1h"},
		{Name: "monthly", Budget: 100, BudgetPeriod: "30d", SoftBudget: 40},
	} {
		if err := s.PutTeam(ctx, tm); err != nil {
			t.Fatalf("PutTeam(%+v): %v", tm, err)
		}
	}
	if err := s.PutTeam(ctx, ledger.Team{Name: "x", Budget: 1, BudgetPeriod: "day", SoftBudget: 2}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("PutTeam(soft budget above the budget) = %v, want ErrInvalid", err)
	}
	for _, p := range []string{"year", "90m", "7d", "400d"} { // "7d" is stored as "week"
		if err := s.PutTeam(ctx, ledger.Team{Name: "x", Budget: 1, BudgetPeriod: p}); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("PutTeam(period %s) = %v, want ErrInvalid", p, err)
		}
	}
	got, err := s.Teams(ctx)
	want := []ledger.Team{
		{Name: "hourly", Budget: 5, BudgetPeriod: "1h"},
		{Name: "infra", TPM: 5000, Budget: 100.25, BudgetPeriod: ledger.PeriodWeek},
		{Name: "monthly", Budget: 100, BudgetPeriod: "30d", SoftBudget: 40},
		{Name: "research", RPM: 20, Budget: 2.5, BudgetPeriod: ledger.PeriodDay},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Teams = %+v, %v; want %+v", got, err, want)
	}
}

func testUsageIdempotent(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	u := ledger.Usage{At: t0, RequestID: "r1", KeyID: "k", PromptTokens: 10, Cost: 0.5}
	for range 2 { // a retried batch, with the ID repeated inside it too
		if err := s.RecordUsage(ctx, []ledger.Usage{u, u}); err != nil {
			t.Fatal(err)
		}
	}
	changed := u
	changed.PromptTokens, changed.Cost = 999, 9
	if err := s.RecordUsage(ctx, []ledger.Usage{changed, {At: t0, RequestID: "r2", KeyID: "k", PromptTokens: 1, Cost: 0.25}}); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]ledger.Usage{"RequestID": {At: t0}, "time": {RequestID: "r4"}} {
		if err := s.RecordUsage(ctx, []ledger.Usage{{At: t0, RequestID: "r3", Cost: 1}, bad}); !errors.Is(err, ledger.ErrInvalid) {
			t.Fatalf("RecordUsage(record without %s) = %v, want ErrInvalid", name, err)
		}
	}
	day := ledger.SpendQuery{From: t0.Truncate(24 * time.Hour), To: t0.Truncate(24 * time.Hour).Add(24 * time.Hour)}
	for name, q := range map[string]ledger.SpendQuery{"daily": day, "requests": {From: t0, To: t0.Add(time.Second)}} {
		rows, err := s.Spend(ctx, q)
		want := []ledger.SpendRow{{Requests: 2, PromptTokens: 11, Cost: 0.75}}
		if err != nil || !reflect.DeepEqual(rows, want) {
			t.Errorf("Spend(%s) = %+v, %v; want %+v (r1 once, its second version ignored, r3 not written)", name, rows, err, want)
		}
	}
}

// golden usage: three days over two weeks, and a duplicate.
func golden() []ledger.Usage {
	d1 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // Monday
	d2 := d1.AddDate(0, 0, 1)
	d3 := d1.AddDate(0, 0, 7) // next Monday
	return []ledger.Usage{
		{At: d1.Add(10 * time.Hour), RequestID: "r1", KeyID: "A", Team: "T1", Pool: "p1", Backend: "b1", Region: "eu", Model: "m1",
			PromptTokens: 100, CompletionTokens: 50, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.001, Status: 200},
		{At: d1.Add(11 * time.Hour), RequestID: "r2", KeyID: "A", Team: "T1", Pool: "p1", Backend: "b2", Region: "us", Model: "m1",
			PromptTokens: 200, CompletionTokens: 100, Cost: 0.002, Status: 200, Failover: true},
		{At: d2.Add(9 * time.Hour), RequestID: "r3", KeyID: "B", Team: "T1", Pool: "p2", Backend: "b1", Region: "eu", Model: "m2",
			PromptTokens: 1000, Cost: 0.0105, Status: 429},
		{At: d3.Add(30 * time.Minute), RequestID: "r4", KeyID: "C", Team: "T2", Pool: "p1", Backend: "b1", Region: "eu", Model: "m1",
			PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007, Status: 200},
	}
}

func recordGolden(t *testing.T, s ledger.Store) {
	t.Helper()
	g := golden()
	dup := g[0]
	dup.Cost, dup.PromptTokens = 5, 5000
	for _, b := range [][]ledger.Usage{g[:2], g[2:], {dup}} {
		if err := s.RecordUsage(context.Background(), b); err != nil {
			t.Fatalf("RecordUsage: %v", err)
		}
	}
}

func day(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }

func testSpend(t *testing.T, s ledger.Store) {
	recordGolden(t, s)
	all := ledger.SpendQuery{From: day(1), To: day(10)}
	with := func(q ledger.SpendQuery, f func(*ledger.SpendQuery)) ledger.SpendQuery { f(&q); return q }
	tests := []struct {
		name string
		q    ledger.SpendQuery
		want []ledger.SpendRow
	}{
		{"total", all, []ledger.SpendRow{
			{Requests: 4, Failovers: 1, PromptTokens: 1307, CompletionTokens: 153, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.013507}}},
		{"by key", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByKey} }), []ledger.SpendRow{
			{Key: "A", Requests: 2, Failovers: 1, PromptTokens: 300, CompletionTokens: 150, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.003},
			{Key: "B", Requests: 1, PromptTokens: 1000, Cost: 0.0105},
			{Key: "C", Requests: 1, PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007}}},
		{"by team", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByTeam} }), []ledger.SpendRow{
			{Team: "T1", Requests: 3, Failovers: 1, PromptTokens: 1300, CompletionTokens: 150, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.0135},
			{Team: "T2", Requests: 1, PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007}}},
		{"by pool", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByPool} }), []ledger.SpendRow{
			{Pool: "p1", Requests: 3, Failovers: 1, PromptTokens: 307, CompletionTokens: 153, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.003007},
			{Pool: "p2", Requests: 1, PromptTokens: 1000, Cost: 0.0105}}},
		{"by backend", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByBackend} }), []ledger.SpendRow{
			{Backend: "b1", Requests: 3, PromptTokens: 1107, CompletionTokens: 53, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.011507},
			{Backend: "b2", Requests: 1, Failovers: 1, PromptTokens: 200, CompletionTokens: 100, Cost: 0.002}}},
		{"by model", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByModel} }), []ledger.SpendRow{
			{Model: "m1", Requests: 3, Failovers: 1, PromptTokens: 307, CompletionTokens: 153, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.003007},
			{Model: "m2", Requests: 1, PromptTokens: 1000, Cost: 0.0105}}},
		{"by day", with(all, func(q *ledger.SpendQuery) { q.By = []string{ledger.ByDay} }), []ledger.SpendRow{
			{Day: day(2), Requests: 2, Failovers: 1, PromptTokens: 300, CompletionTokens: 150, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.003},
			{Day: day(3), Requests: 1, PromptTokens: 1000, Cost: 0.0105},
			{Day: day(9), Requests: 1, PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007}}},
		{"by team and day, one week", ledger.SpendQuery{From: day(2), To: day(9), By: []string{ledger.ByTeam, ledger.ByDay}}, []ledger.SpendRow{
			{Team: "T1", Day: day(2), Requests: 2, Failovers: 1, PromptTokens: 300, CompletionTokens: 150, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.003},
			{Team: "T1", Day: day(3), Requests: 1, PromptTokens: 1000, Cost: 0.0105}}},
		{"key filter by backend", with(all, func(q *ledger.SpendQuery) { q.Key, q.By = "A", []string{ledger.ByBackend} }), []ledger.SpendRow{
			{Backend: "b1", Requests: 1, PromptTokens: 100, CompletionTokens: 50, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.001},
			{Backend: "b2", Requests: 1, Failovers: 1, PromptTokens: 200, CompletionTokens: 100, Cost: 0.002}}},
		{"team filter", with(all, func(q *ledger.SpendQuery) { q.Team = "T2" }), []ledger.SpendRow{
			{Requests: 1, PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007}}},
		{"hours, from the requests", ledger.SpendQuery{From: day(2).Add(10*time.Hour + 30*time.Minute), To: day(3).Add(12 * time.Hour), By: []string{ledger.ByKey}}, []ledger.SpendRow{
			{Key: "A", Requests: 1, Failovers: 1, PromptTokens: 200, CompletionTokens: 100, Cost: 0.002},
			{Key: "B", Requests: 1, PromptTokens: 1000, Cost: 0.0105}}},
		{"by key and hour", ledger.SpendQuery{From: day(2), To: day(4), By: []string{ledger.ByKey, ledger.ByHour}}, []ledger.SpendRow{
			{Key: "A", Hour: day(2).Add(10 * time.Hour), Requests: 1, PromptTokens: 100, CompletionTokens: 50, CachedTokens: 20, ReasoningTokens: 10, Cost: 0.001},
			{Key: "A", Hour: day(2).Add(11 * time.Hour), Requests: 1, Failovers: 1, PromptTokens: 200, CompletionTokens: 100, Cost: 0.002},
			{Key: "B", Hour: day(3).Add(9 * time.Hour), Requests: 1, PromptTokens: 1000, Cost: 0.0105}}},
		{"by hour, from an hour", ledger.SpendQuery{From: day(2).Add(11 * time.Hour), To: day(9).Add(time.Hour), By: []string{ledger.ByHour}}, []ledger.SpendRow{
			{Hour: day(2).Add(11 * time.Hour), Requests: 1, Failovers: 1, PromptTokens: 200, CompletionTokens: 100, Cost: 0.002},
			{Hour: day(3).Add(9 * time.Hour), Requests: 1, PromptTokens: 1000, Cost: 0.0105},
			{Hour: day(9), Requests: 1, PromptTokens: 7, CompletionTokens: 3, Cost: 0.000007}}},
		{"nothing in range", ledger.SpendQuery{From: day(20), To: day(21)}, []ledger.SpendRow{{}}},
		{"nothing in range, grouped", ledger.SpendQuery{From: day(20), To: day(21), By: []string{ledger.ByKey}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Spend(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Spend(%+v) =\n%s\nwant\n%s", tc.q, rows(got), rows(tc.want))
			}
		})
	}
	for _, q := range []ledger.SpendQuery{{From: day(1), To: day(2), By: []string{"region"}}, {From: day(2), To: day(1)}} {
		if _, err := s.Spend(context.Background(), q); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("Spend(%+v) = %v, want ErrInvalid", q, err)
		}
	}
}

func rows(rs []ledger.SpendRow) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %+v\n", r)
	}
	return b.String()
}

func testSpentSince(t *testing.T, s ledger.Store) {
	recordGolden(t, s)
	ctx := context.Background()
	now := day(3).Add(12 * time.Hour) // Tuesday of the first week
	start := func(p string) time.Time {
		st, err := ledger.PeriodStart(p, now)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	tests := []struct {
		name   string
		f      ledger.Filter
		since  time.Time
		cost   float64
		tokens int64
	}{
		{"key B, day", ledger.Filter{Key: "B"}, start(ledger.PeriodDay), 0.0105, 1000},
		{"key A, day", ledger.Filter{Key: "A"}, start(ledger.PeriodDay), 0, 0},
		{"key A, week", ledger.Filter{Key: "A"}, start(ledger.PeriodWeek), 0.003, 450},
		{"team T1, week", ledger.Filter{Team: "T1"}, start(ledger.PeriodWeek), 0.0135, 1450},
		{"team T1, month", ledger.Filter{Team: "T1"}, start(ledger.PeriodMonth), 0.0135, 1450},
		{"everyone, month", ledger.Filter{}, start(ledger.PeriodMonth), 0.013507, 1460},
		{"team T1, from 10:30", ledger.Filter{Team: "T1"}, day(2).Add(10*time.Hour + 30*time.Minute), 0.0125, 1300},
		{"key A in team T2", ledger.Filter{Key: "A", Team: "T2"}, start(ledger.PeriodMonth), 0, 0},
	}
	for _, tc := range tests {
		cost, tokens, err := s.SpentSince(ctx, tc.f, tc.since)
		if err != nil || cost != tc.cost || tokens != tc.tokens {
			t.Errorf("%s: SpentSince(%+v, %v) = %v, %d, %v; want %v, %d", tc.name, tc.f, tc.since, cost, tokens, err, tc.cost, tc.tokens)
		}
	}
}

func testConcurrent(t *testing.T, s ledger.Store) {
	const writers, batches, per = 8, 10, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				batch := make([]ledger.Usage, per)
				for i := range batch {
					n := (w*batches+b)*per + i
					batch[i] = ledger.Usage{
						At: t0.Add(time.Duration(n) * time.Minute), RequestID: fmt.Sprintf("w%d-%d", w, n),
						KeyID: fmt.Sprintf("k%d", n%3), Team: "T", Pool: "p", Model: "m",
						PromptTokens: 3, CompletionTokens: 1, Cost: 0.001,
					}
				}
				// Each batch is sent twice, in the same or another
				// goroutine's order: duplicates must not count.
				if err := s.RecordUsage(context.Background(), batch); err != nil {
					errs <- err
				}
				if err := s.RecordUsage(context.Background(), batch[per/2:]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("RecordUsage: %v", err)
	}
	const total = writers * batches * per
	rows, err := s.Spend(context.Background(), ledger.SpendQuery{From: day(1), To: day(30), By: []string{ledger.ByTeam}})
	want := []ledger.SpendRow{{Team: "T", Requests: total, PromptTokens: 3 * total, CompletionTokens: total, Cost: float64(total) / 1000}}
	if err != nil || !reflect.DeepEqual(rows, want) {
		t.Fatalf("Spend after concurrent recording = %+v, %v; want %+v", rows, err, want)
	}
	cost, tokens, err := s.SpentSince(context.Background(), ledger.Filter{Team: "T"}, t0)
	if err != nil || cost != float64(total)/1000 || tokens != 4*total {
		t.Fatalf("SpentSince from the requests = %v, %d, %v; want %v, %d", cost, tokens, err, float64(total)/1000, 4*total)
	}
}

// testFailure breaks the store under a Writer: the records wait and are
// written once the store works again, none lost, none twice.
func testFailure(t *testing.T, h Harness) {
	s := h.Open(t)
	ctx := context.Background()
	clk := fakeclock.New()
	var mu sync.Mutex
	var errs []error
	wrote := make(chan struct{}, 100)
	w := ledger.NewWriter(notify{s, wrote}, ledger.WriterOptions{
		Batch: 10, Every: time.Second, MinBackoff: time.Second, Timeout: 5 * time.Second, Clock: clk,
		OnError: func(err error) { t.Logf("write failed: %v", err); mu.Lock(); errs = append(errs, err); mu.Unlock() },
		OnDrop:  func(n int) { t.Errorf("dropped %d records", n) },
	})
	restore := h.Break(t, s)
	const n = 25
	for i := range n {
		w.Add(ledger.Usage{At: t0, RequestID: fmt.Sprintf("r%d", i), KeyID: "k", PromptTokens: 1, Cost: 0.01})
	}
	// Batch records wake the writer; its write fails, and it retries
	// after 1 s, then 2 s.
	next(t, wrote)
	waitTimer(t, clk, time.Second)
	clk.Advance(time.Second)
	next(t, wrote)
	waitTimer(t, clk, 2*time.Second)
	mu.Lock()
	failed := len(errs)
	mu.Unlock()
	if failed != 2 {
		t.Fatalf("%d write errors reported while the store was broken, want 2", failed)
	}
	if p := w.Pending(); p != n {
		t.Fatalf("Pending = %d while the store is broken, want %d", p, n)
	}
	restore()
	clk.Advance(2 * time.Second)
	for range 3 { // 10 + 10 + 5
		next(t, wrote)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := w.Dropped(); d != 0 {
		t.Fatalf("Dropped = %d, want 0", d)
	}
	cost, tokens, err := s.SpentSince(ctx, ledger.Filter{Key: "k"}, t0.Truncate(24*time.Hour))
	if err != nil || tokens != n || cost != 0.25 {
		t.Fatalf("after recovery SpentSince = %v, %d, %v; want 0.25, %d", cost, tokens, err, n)
	}
}

// next waits for the next write attempt, failing the test after 30 s.
func next(t *testing.T, wrote <-chan struct{}) {
	t.Helper()
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer made no write attempt within 30 s")
	}
}

func waitTimer(t *testing.T, clk *fakeclock.Clock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clk.BlockUntilTimer(ctx, d); err != nil {
		t.Fatalf("the writer armed no %v timer: %v", d, err)
	}
}

// notify passes writes to a store and signals each attempt.
type notify struct {
	ledger.Store
	wrote chan<- struct{}
}

func (n notify) RecordUsage(ctx context.Context, b []ledger.Usage) error {
	err := n.Store.RecordUsage(ctx, b)
	n.wrote <- struct{}{}
	return err
}

// rotateWithGrace: a rotation with a grace period keeps the old secret
// (secret, key id's current one) working until the grace ends, then
// refuses it as unknown; the new secret works throughout; a rotation
// without grace ends the kept secret at once. It returns the key's
// secret after these rotations.
func rotateWithGrace(t *testing.T, s ledger.Store, id, secret string, t0 time.Time) string {
	t.Helper()
	ctx := t.Context()
	until := t0.Add(10 * time.Minute)
	graced, err := ledger.Rotate(ctx, s, id, until)
	if err != nil {
		t.Fatalf("Rotate with grace: %v", err)
	}
	for _, at := range []time.Time{t0, until.Add(-time.Microsecond)} {
		if got, err := ledger.Verify(ctx, s, secret, at); err != nil || got.ID != id {
			t.Errorf("Verify(old secret in its grace, at %s) = %v, %v; want %s", at, got.ID, err, id)
		}
		if got, err := ledger.Verify(ctx, s, graced, at); err != nil || got.ID != id {
			t.Errorf("Verify(new secret, at %s) = %v, %v; want %s", at, got.ID, err, id)
		}
	}
	if _, err := ledger.Verify(ctx, s, secret, until); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Verify(old secret at the grace's end) = %v, want ErrNotFound", err)
	}
	ks, err := s.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.ID == id && (k.PrevPrefix == "" || !k.PrevUntil.Equal(until) || k.PrevPrefix == k.Prefix) {
			t.Errorf("key after a rotation with grace: previous %q until %s, current %q", k.PrevPrefix, k.PrevUntil, k.Prefix)
		}
	}
	last, err := ledger.Rotate(ctx, s, id, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Verify(ctx, s, secret, t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Verify(kept secret after a rotation without grace) = %v, want ErrNotFound", err)
	}
	if _, err := ledger.Verify(ctx, s, graced, t0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Verify(replaced secret after a rotation without grace) = %v, want ErrNotFound", err)
	}
	return last
}

func testObjectOwners(t *testing.T, s ledger.Store) {
	ctx := context.Background()
	o, ok := s.(ledger.ObjectOwners)
	if !ok {
		t.Fatalf("%T is not a ledger.ObjectOwners", s)
	}
	for _, r := range []struct{ backend, id, mark string }{
		{"weu", "file-a", "ma"}, {"weu", "file-b", "mb"}, {"eus", "file-a", "mc"}, {"weu", "file-b", "mb2"},
	} {
		if err := o.RecordOwner(ctx, r.backend, r.id, r.mark, t0); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"file-a", "file-b", "file-none"}
	for i := range 600 { // past one query's chunk
		ids = append(ids, fmt.Sprintf("file-%d", i))
	}
	got, err := o.OwnerMarks(ctx, "weu", ids)
	if want := map[string]string{"file-a": "ma", "file-b": "mb2"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("OwnerMarks = %v, %v; want %v", got, err, want)
	}
	if err := o.ForgetOwner(ctx, "weu", "file-a"); err != nil {
		t.Fatal(err)
	}
	got, err = o.OwnerMarks(ctx, "weu", []string{"file-a", "file-b"})
	if want := map[string]string{"file-b": "mb2"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after ForgetOwner, OwnerMarks = %v, %v; want %v", got, err, want)
	}
	if got, _ := o.OwnerMarks(ctx, "eus", []string{"file-a"}); got["file-a"] != "mc" {
		t.Errorf("another backend's mark = %v, want mc", got)
	}
	if got, err := o.OwnerMarks(ctx, "weu", nil); err != nil || len(got) != 0 {
		t.Errorf("OwnerMarks of no ids = %v, %v", got, err)
	}
}
