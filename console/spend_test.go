package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/ledger/sqlite"
)

// spendNow is the spend tests' clock: noon of 2026-12-03 (UTC).
var spendNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// spendEnv is a console at spendNow whose store holds:
//   - 2026-11-20: ads (key batch) $4.00 on uksouth;
//   - 2026-12-01: 20 requests of ci-runner (team search) on uksouth,
//     lasting 100, 200, … 2000 ms, $1.25 in all;
//   - 2026-12-02: ci-runner $2.50 on sweden after a failover (900 ms),
//     batch (team ads) $0.75 on uksouth with gpt-4o-mini (200 ms);
//   - 2026-12-03: one request of batch that no backend answered (502),
//     and at 09:30 daily's $0.40 on sweden (100 ms).
//
// ci-runner has a budget of $10/month, team search $100/month, daily
// $1/day (charted per hour), the revoked key old $5/day (not charted).
func spendEnv(t *testing.T) (*env, ledger.Key, ledger.Key) {
	t.Helper()
	f := newFake(t)
	c := New(t.Context(), f, Options{Interval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return spendNow }})
	t.Cleanup(c.Close)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e := &env{t: t, gw: f, c: c, srv: srv}
	ctx := t.Context()
	st, err := sqlite.Open(ctx, t.TempDir()+"/ledger.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	created := spendNow.AddDate(0, -1, 0)
	ci, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "ci-runner", Team: "search", Budget: 10, BudgetPeriod: ledger.PeriodMonth}, created)
	if err != nil {
		t.Fatal(err)
	}
	batch, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "batch", Team: "ads"}, created)
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "old", Budget: 5, BudgetPeriod: ledger.PeriodDay}, created)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeKey(ctx, old.ID, created); err != nil {
		t.Fatal(err)
	}
	daily, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "daily", Budget: 1, BudgetPeriod: ledger.PeriodDay}, created)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutTeam(ctx, ledger.Team{Name: "search", Budget: 100, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		t.Fatal(err)
	}
	recs := []ledger.Usage{
		{At: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), RequestID: "n1", KeyID: batch.ID, Team: "ads", Pool: "chat", Backend: "uksouth", Model: "gpt-4o", Cost: 4, Status: 200, DurationMs: 300},
		{At: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), RequestID: "d2a", KeyID: ci.ID, Team: "search", Pool: "chat", Backend: "sweden", Model: "gpt-4o", Cost: 2.5, Status: 200, Failover: true, DurationMs: 900},
		{At: time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC), RequestID: "d2b", KeyID: batch.ID, Team: "ads", Pool: "mini", Backend: "uksouth", Model: "gpt-4o-mini", Cost: 0.75, Status: 200, DurationMs: 200},
		{At: time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC), RequestID: "d3d", KeyID: daily.ID, Pool: "chat", Backend: "sweden", Model: "gpt-4o", Cost: 0.4, Status: 200, DurationMs: 100},
		{At: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC), RequestID: "d3", KeyID: batch.ID, Team: "ads", Pool: "chat", Model: "gpt-4o", Status: 502, Unanswered: true, DurationMs: 3000},
	}
	for i := range 20 {
		recs = append(recs, ledger.Usage{At: time.Date(2026, 12, 1, 10, i, 0, 0, time.UTC), RequestID: fmt.Sprintf("d1-%02d", i), KeyID: ci.ID, Team: "search",
			Pool: "chat", Backend: "uksouth", Model: "gpt-4o", Cost: 0.0625, Status: 200, DurationMs: int64(100 * (i + 1))})
	}
	if err := st.RecordUsage(ctx, recs); err != nil {
		t.Fatal(err)
	}
	f.store = st
	return e, ci, batch
}

var barTitle = regexp.MustCompile(`<title>([^<]+)</title>`)

// titles are the hover values of a page's charts.
func titles(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range barTitle.FindAllStringSubmatch(page, -1) {
		out[strings.ReplaceAll(m[1], "&#39;", "'")] = true
	}
	return out
}

// section is the part of page from the element with id on.
func section(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no element %s", id)
	}
	return page[i:]
}

// TestSpendPage: spend per day by team over 7 days (which miss the
// 20th) and by key over 30 (which have it); the budgets' burn-down with their
// limits; traffic per day by backend and by pool, with p95; the totals
// and hover values are the stored ones.
func TestSpendPage(t *testing.T) {
	e, ci, batch := spendEnv(t)
	viewer, _ := e.login(viewerKey)
	resp, page := e.do(viewer, "GET", "/console/spend?days=7", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("viewer: %d\n%s", resp.StatusCode, page)
	}
	got := titles(page)
	for _, want := range []string{
		// Spend by team.
		"2026-12-01 · search: $1.25", "2026-12-02 · search: $2.50", "2026-12-02 · ads: $0.75",
		// Burn-down: cumulative, to today, against the limit.
		"2026-12-01 · spent: $1.25", "2026-12-02 · spent: $3.75", "2026-12-03 · spent: $3.75", "budget: $10.00", "budget: $100",
		// Traffic by backend.
		"2026-12-01 · uksouth: 20 req", "2026-12-02 · sweden: 1 req", "2026-12-03 · (none): 1 req", "2026-12-03 · sweden: 1 req", "2026-12-03 · (none): $0.40",
		// The daily budget, per hour to now.
		"2026-12-03 09:00Z: $0.40", "2026-12-03 12:00Z: $0.40", "2026-12-03 08:00Z: $0", "budget: $1.00",
		"2026-12-03 · (none): 1 err", "2026-12-02 · sweden: 1 failover",
		// p95 is the upper edge of its bucket: 1900 ms is in (1500, 2000].
		"2026-12-01 · uksouth: 2000 ms", "2026-12-03 · (none): 3000 ms", "2026-12-02 · sweden: 1000 ms", "2026-12-02 · uksouth: 200 ms",
	} {
		if !got[want] {
			t.Errorf("no hover value %q", want)
		}
	}
	for _, unwanted := range []string{"2026-11-20 · ads: $4.00", "2026-12-04 · spent: $3.75", "2026-12-01 · uksouth: 1 err", "2026-12-03 13:00Z: $0.40"} {
		if got[unwanted] {
			t.Errorf("hover value %q should not be there", unwanted)
		}
	}
	for _, want := range []string{`id="spend-total">$4.90 from 2026-11-27 to 2026-12-03`, `<option value="7" selected>`,
		`<section class="burn" data-owner="key" data-name="ci-runner">`, `<span class="spent">$3.75</span> of $10.00 this month`,
		`<section class="burn" data-owner="team" data-name="search">`, `$3.75</span> of $100.00 this month`,
		`<section class="burn" data-owner="key" data-name="daily">`, `<span class="spent">$0.400000</span> of $1.00 this day`,
		"24 requests counted, every one of the range", `<text class="tick" x="110" y="214" dy="16" text-anchor="middle">Nov 27</text>`, `aria-current="page">Spend</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, `data-name="old"`) || strings.Contains(page, `data-name="ads"`) {
		t.Error("a revoked key's or budgetless team's burn-down is charted")
	}
	// The axis of the 7 days' spend: $0 to $4.00 by $1.00 (the tallest
	// bar is $3.25).
	spend := section(t, page, "spend-chart")
	spend = spend[:strings.Index(spend, "</figure>")]
	ticks := regexp.MustCompile(`text-anchor="end">([^<]+)<`).FindAllStringSubmatch(spend, -1)
	if len(ticks) != 5 || ticks[0][1] != "$0" || ticks[4][1] != "$4.00" {
		t.Errorf("spend axis %q, want $0 to $4.00 by $1.00", ticks)
	}

	_, page = e.do(viewer, "GET", "/console/spend?days=30&by=key&traffic=pool", nil)
	got = titles(page)
	for _, want := range []string{"2026-11-20 · batch (" + batch.ID + "): $4.00", "2026-12-02 · ci-runner (" + ci.ID + "): $2.50",
		"2026-12-02 · mini: 1 req", "2026-12-03 · chat: 1 err", "2026-12-02 · chat: 1 failover", "2026-12-02 · mini: 200 ms"} {
		if !got[want] {
			t.Errorf("30 days by key and pool: no hover value %q", want)
		}
	}
	if !strings.Contains(page, `id="spend-total">$8.90 from 2026-11-04 to 2026-12-03`) {
		t.Error("30 days: total is not $8.90")
	}
}

// TestSpendPageRefusesBadInput: a range, grouping or traffic grouping not
// offered is a 400 naming it, echoed escaped; the store is not asked.
func TestSpendPageRefusesBadInput(t *testing.T) {
	e, _, _ := spendEnv(t)
	admin, _ := e.login(adminKey)
	for _, tc := range []struct{ query, want string }{
		{"days=8", `days &#34;8&#34; is not one of 7, 30, 90`},
		{"by=%3Cscript%3E", `by &#34;&lt;script&gt;&#34; is not one of team, key, model, backend`},
		{"traffic=region", `traffic &#34;region&#34; is not one of backend, pool`},
		{"by=end_user", `by &#34;end_user&#34; is not one of`},
	} {
		resp, page := e.do(admin, "GET", "/console/spend?"+tc.query, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, tc.want) || strings.Contains(page, "<script>") || strings.Contains(page, `id="spend-chart"`) {
			t.Errorf("?%s: %d, want 400 with %s", tc.query, resp.StatusCode, tc.want)
		}
	}
}

// TestSpendPageAccess: without a session the page sends to the login
// and shows nothing; a request from another site (cookie or not) is
// served with the headers that keep it from being read or framed by that
// site, and no cross-origin grant; without a store, the page says so.
func TestSpendPageAccess(t *testing.T) {
	e, _, _ := spendEnv(t)
	resp, page := e.do(e.client(), "GET", "/console/spend", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" || strings.Contains(page, "search") {
		t.Fatalf("without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = e.do(e.client(), "GET", "/console/spend", nil, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("another origin without a session: %d", resp.StatusCode)
	}
	viewer, _ := e.login(viewerKey)
	resp, _ = e.do(viewer, "GET", "/console/spend", nil, "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	h := resp.Header
	if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Cross-Origin-Resource-Policy") != "same-origin" || h.Get("X-Frame-Options") != "DENY" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("from another origin: headers %v", h)
	}
	// The CSP forbids inline scripts and styles: the charts use none.
	if _, page := e.do(viewer, "GET", "/console/spend", nil); strings.Contains(page, " style=") || strings.Contains(page, "<style") ||
		strings.Contains(page, "<script>") || regexp.MustCompile(` on[a-z]+=`).MatchString(page) {
		t.Fatal("the spend page has an inline script or style")
	}
	if resp, _ := e.do(viewer, "POST", "/console/spend", nil, "Origin", "http://evil.example"); resp.StatusCode == http.StatusOK {
		t.Fatal("a POST to the spend page answered 200")
	}
	for _, s := range allSecrets {
		if _, page := e.do(viewer, "GET", "/console/spend?days=90", nil); strings.Contains(page, s) {
			t.Fatal("the spend page shows a secret")
		}
	}
	e.gw.store = nil
	if resp, page := e.do(viewer, "GET", "/console/spend", nil); resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="no-store"`) {
		t.Fatalf("without a store: %d", resp.StatusCode)
	}
}

// BenchmarkSpendPage renders the 30 days' page over a store of 20,000
// requests (more than a store without daily traffic sums would let the
// charts read) on 3 backends, 4 teams and 2 budgets. Prints its time;
// asserts none.
func BenchmarkSpendPage(b *testing.B) {
	ctx := b.Context()
	st, err := sqlite.Open(ctx, b.TempDir()+"/ledger.db")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, _, err := ledger.NewKey(ctx, st, ledger.Key{Name: "k", Team: "t0", Budget: 100, BudgetPeriod: ledger.PeriodMonth}, spendNow); err != nil {
		b.Fatal(err)
	}
	if err := st.PutTeam(ctx, ledger.Team{Name: "t0", Budget: 1000, BudgetPeriod: ledger.PeriodMonth}); err != nil {
		b.Fatal(err)
	}
	backends := []string{"uksouth", "sweden", "westeurope"}
	for batch := range 20 {
		recs := make([]ledger.Usage, 0, 1000)
		for i := range 1000 {
			n := batch*1000 + i
			recs = append(recs, ledger.Usage{At: spendNow.Add(-time.Duration(n) * 2 * time.Minute), RequestID: fmt.Sprintf("r%06d", n),
				KeyID: fmt.Sprintf("key%d", n%9), Team: fmt.Sprintf("t%d", n%4), Pool: "chat", Backend: backends[n%3], Model: "gpt-4o",
				Cost: 0.001, Status: 200 + 229*(n%50/49), Failover: n%40 == 0, DurationMs: int64(100 + n%900),
				Attempts: []ledger.Attempt{{Backend: backends[n%3], Status: 200, Reason: "ok", DurationMs: 100}}})
		}
		if err := st.RecordUsage(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	f := &fakeGateway{store: st}
	c := New(ctx, f, Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return spendNow }})
	defer c.Close()
	s := &session{User: "bench", Role: RoleViewer}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		c.spendPage(w, httptest.NewRequest("GET", "/console/spend?days=30", nil), s)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "20000 requests counted, every one of the range") {
			b.Fatalf("%d", w.Code)
		}
	}
}

// TestSpendPageWithoutTrafficReader: a store without the narrow traffic
// read draws the same traffic charts from whole records.
func TestSpendPageWithoutTrafficReader(t *testing.T) {
	e, _, _ := spendEnv(t)
	viewer, _ := e.login(viewerKey)
	traffic := func() string {
		_, page := e.do(viewer, "GET", "/console/spend?days=7", nil)
		return section(t, page, "traffic-note")
	}
	narrow := traffic()
	e.gw.store = struct{ ledger.Store }{e.gw.store}
	if _, ok := e.gw.store.(ledger.TrafficReader); ok {
		t.Fatal("the wrapped store still reads traffic")
	}
	if whole := traffic(); whole != narrow || !strings.Contains(whole, "2026-12-01 · uksouth: 2000 ms") {
		t.Fatalf("the traffic charts differ without the narrow read:\n%s\n---\n%s", narrow, whole)
	}
}

// TestSpendPageCountsEveryRequest (issue 29 §3: "the traffic charts
// count only the newest 10,000 rows"): over 11,000 requests in the 7
// days, every one is counted, on its day: requests, errors, failovers
// and the p95's bucket are exact, and the page does not say the range is
// partial. (A store without the daily sums reads whole rows instead:
// TestSpendPageWithoutTrafficReader.)
func TestSpendPageCountsEveryRequest(t *testing.T) {
	e, ci, _ := spendEnv(t)
	st := e.gw.store
	var recs []ledger.Usage
	for i := range 6000 { // 2026-12-01 on uksouth, 1 to 1000 ms
		u := ledger.Usage{At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 14 * time.Second), RequestID: fmt.Sprint("u", i),
			KeyID: ci.ID, Pool: "chat", Backend: "uksouth", Model: "gpt-4o", Status: 200, DurationMs: int64(i%1000 + 1)}
		if i%20 == 0 {
			u.Status = 500
		}
		if i%50 == 0 {
			u.Failover = true
		}
		recs = append(recs, u)
	}
	for i := range 5000 { // 2026-12-02 on sweden, 50 of them answered by none
		u := ledger.Usage{At: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 17 * time.Second), RequestID: fmt.Sprint("s", i),
			KeyID: ci.ID, Pool: "chat", Backend: "sweden", Model: "gpt-4o", Status: 200, DurationMs: 8000}
		if i%100 == 0 {
			u.Backend, u.Status, u.Unanswered = "", 502, true
		}
		recs = append(recs, u)
	}
	for i := 0; i < len(recs); i += 1000 {
		if err := st.RecordUsage(t.Context(), recs[i:i+1000]); err != nil {
			t.Fatal(err)
		}
	}
	viewer, _ := e.login(viewerKey)
	_, page := e.do(viewer, "GET", "/console/spend?days=7", nil)
	got := titles(page)
	for _, want := range []string{
		// 6000 and spendEnv's 20; 300 of status 500; 120 failovers; the
		// p95 of 1…1000 ms (six times) and 100…2000 ms is in (750, 1000].
		"2026-12-01 · uksouth: 6020 req", "2026-12-01 · uksouth: 300 err", "2026-12-01 · uksouth: 120 failover", "2026-12-01 · uksouth: 1000 ms",
		// 4950 and spendEnv's one; 50 unanswered; 8000 ms is in (7500, 10000].
		"2026-12-02 · sweden: 4951 req", "2026-12-02 · (none): 50 req", "2026-12-02 · (none): 50 err", "2026-12-02 · sweden: 10000 ms",
		"2026-12-02 · uksouth: 1 req",
	} {
		if !got[want] {
			t.Errorf("no hover value %q", want)
		}
	}
	note := section(t, page, "traffic-note")
	if !strings.Contains(note, "11024 requests counted, every one of the range") || strings.Contains(note, "incomplete") {
		t.Errorf("the traffic note: %.200s", note)
	}
}
