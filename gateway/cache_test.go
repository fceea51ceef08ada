package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

const blueKey = "blue-key-0123456789abcdef0123456789"

// withCache gives pool chat-prod cache (a YAML flow mapping), and the
// keys two teams: app-team (appKey) in red, blue (blueKey) in blue.
func withCache(cache string) func(string) string {
	return func(y string) string {
		y = strings.Replace(y, "keys:\n  - name: app-team\n    key: ${TEST_APP_KEY}\n",
			"teams: [{name: red}, {name: blue}]\nkeys:\n  - name: app-team\n    key: ${TEST_APP_KEY}\n    team: red\n  - name: blue\n    key: "+blueKey+"\n    team: blue\n", 1)
		return y + "    cache: " + cache + "\n"
	}
}

// result is the answer's x-switchover-cache, with "coalesced" read as
// "hit": a call sent right after an identical one's answer was read may
// find that call still ending (its client has the last byte before the
// handler returns), and share its answer; either way no backend is
// called for it.
func result(resp *http.Response) string {
	if r := resp.Header.Get("X-Switchover-Cache"); r != "coalesced" {
		return r
	}
	return "hit"
}

// TestCacheRepeatIsAHitWithTheSameBytes: a repeated call is answered from
// the cache, with the first answer's status and body byte for byte, its
// own request id and an Age; past the TTL it is a miss again.
func TestCacheRepeatIsAHitWithTheSameBytes(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"))
	first, body1 := h.post("/v1/chat/completions", chat)
	second, body2 := h.post("/v1/chat/completions", chat)
	if first.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("statuses %d, %d", first.StatusCode, second.StatusCode)
	}
	if got := result(first); got != "miss" {
		t.Errorf("first answer's x-switchover-cache = %q, want miss", got)
	}
	if got := result(second); got != "hit" {
		t.Errorf("second answer's x-switchover-cache = %q, want hit", got)
	}
	if body1 != body2 {
		t.Errorf("the hit's body differs:\n%s\n%s", body1, body2)
	}
	if second.Header.Get("Age") != "0" || first.Header.Get("Age") != "" {
		t.Errorf("Age: first %q, hit %q", first.Header.Get("Age"), second.Header.Get("Age"))
	}
	if a, b := first.Header.Get("X-Request-Id"), second.Header.Get("X-Request-Id"); a == "" || a == b {
		t.Errorf("request ids %q and %q: each answer has its own", a, b)
	}
	if got := second.Header.Get("Content-Type"); got != first.Header.Get("Content-Type") {
		t.Errorf("hit's Content-Type %q, first %q", got, first.Header.Get("Content-Type"))
	}
	if second.Header.Get("X-Ratelimit-Remaining-Requests") != "" {
		t.Error("the hit replays the first call's rate-limit figures")
	}
	if n := h.weu.Calls() + h.sec.Calls(); n != 1 {
		t.Fatalf("%d upstream calls for a call and its repeat, want 1", n)
	}
	h.clock.Advance(5 * time.Minute)
	if resp, _ := h.post("/v1/chat/completions", chat); resp.Header.Get("Age") != "300" {
		t.Errorf("Age after 5m = %q, want 300", resp.Header.Get("Age"))
	}
	h.clock.Advance(6 * time.Minute)
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "miss" {
		t.Errorf("after the TTL: %q, want miss", result(resp))
	}
	if n := h.weu.Calls(); n != 2 {
		t.Errorf("%d upstream calls, want 2", n)
	}
	// A parameter that changes the answer is another entry.
	if resp, _ := h.post("/v1/chat/completions", `{"model":"chat-prod","temperature":0.5,"messages":[{"role":"user","content":"hello"}]}`); result(resp) != "miss" {
		t.Errorf("another temperature: %q, want miss", result(resp))
	}
	// The model's alias routes to the same pool: the same entry.
	if resp, _ := h.post("/v1/chat/completions", strings.Replace(chat, "chat-prod", "gpt-4o", 1)); result(resp) != "hit" {
		t.Errorf("the pool's alias: %q, want hit", result(resp))
	}
}

// TestCacheNeverAcrossTeams: two teams sending the same prompt each get
// their own answer from a backend; neither hits the other's entry.
func TestCacheNeverAcrossTeams(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"))
	red, _ := h.post("/v1/chat/completions", chat)
	blue, _ := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey)
	redAgain, _ := h.post("/v1/chat/completions", chat)
	blueAgain, _ := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey)
	got := []string{result(red), result(blue),
		result(redAgain), result(blueAgain)}
	if strings.Join(got, ",") != "miss,miss,hit,hit" {
		t.Fatalf("red, blue, red, blue = %v, want miss,miss,hit,hit", got)
	}
	if n := h.weu.Calls(); n != 2 {
		t.Fatalf("%d upstream calls, want one per team", n)
	}
}

// TestCacheSharedPoolSharesAcrossTeams: a pool that opts into sharing
// answers every team from one entry.
func TestCacheSharedPoolSharesAcrossTeams(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m, shared: true}"))
	h.post("/v1/chat/completions", chat)
	blue, _ := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey)
	if got := result(blue); got != "hit" {
		t.Fatalf("another team on a shared pool: %q, want hit", got)
	}
}

// blocked is an upstream step that answers once release is closed,
// counting its calls on arrived.
func blocked(arrived chan<- struct{}, release <-chan struct{}) upstreamtest.Step {
	a := answer("weu")
	return func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		a(w, r)
	}
}

// TestCacheCoalescesHundredIdenticalCalls: with coalescing on and no
// TTL (nothing stored), 100 identical calls at once cost one upstream
// call: 99 wait for the first and get its answer.
func TestCacheCoalescesHundredIdenticalCalls(t *testing.T) {
	arrived, release := make(chan struct{}, 200), make(chan struct{})
	h := start(t, []upstreamtest.Step{blocked(arrived, release)}, []upstreamtest.Step{answer("sec")}, "", withCache("{coalesce: true}"))
	const n = 100
	var wg sync.WaitGroup
	results := make([]string, n)
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := h.post("/v1/chat/completions", chat)
			results[i], bodies[i] = resp.Header.Get("X-Switchover-Cache"), body
			if resp.StatusCode != 200 {
				t.Errorf("status %d: %s", resp.StatusCode, body)
			}
		}()
	}
	<-arrived
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheWaiting() == n-1 },
		func() string { return "waiting calls: " + strconv.Itoa(h.gw.CacheWaiting()) })
	close(release)
	wg.Wait()
	if c := h.weu.Calls() + h.sec.Calls(); c != 1 {
		t.Fatalf("%d upstream calls for %d identical calls, want 1", c, n)
	}
	count := map[string]int{}
	for i, r := range results {
		count[r]++
		if bodies[i] != bodies[0] {
			t.Errorf("answer %d differs", i)
		}
	}
	if count["miss"] != 1 || count["coalesced"] != n-1 {
		t.Fatalf("results %v, want 1 miss and %d coalesced", count, n-1)
	}
	// Nothing is stored without a TTL.
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheFlights() == 0 }, func() string { return "the flight has not landed" })
	if resp, _ := h.post("/v1/chat/completions", chat); resp.Header.Get("X-Switchover-Cache") != "miss" {
		t.Errorf("after the flight: %q, want miss (no ttl)", resp.Header.Get("X-Switchover-Cache"))
	}
}

// TestCacheCoalescedCallOutlivesALeaderThatLeaves: when the first call's
// client goes away, a call waiting on it gets an answer of its own.
func TestCacheCoalescedCallOutlivesALeaderThatLeaves(t *testing.T) {
	arrived, release := make(chan struct{}, 4), make(chan struct{})
	h := start(t, []upstreamtest.Step{blocked(arrived, release)}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 1m}"))
	req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(chat))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json")
	ctx, cancel := context.WithCancel(t.Context())
	req = req.WithContext(ctx)
	leaderDone := make(chan struct{})
	go func() {
		defer close(leaderDone)
		if resp, err := testClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	followerDone := make(chan *http.Response, 1)
	go func() {
		resp, _ := h.post("/v1/chat/completions", chat)
		followerDone <- resp
	}()
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheWaiting() == 1 }, func() string { return "no follower waiting" })
	cancel() // the leader's client leaves
	<-leaderDone
	<-arrived // the follower leads a call of its own
	close(release)
	resp := <-followerDone
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchover-Cache") != "miss" {
		t.Fatalf("follower: %d %q, want 200 miss", resp.StatusCode, resp.Header.Get("X-Switchover-Cache"))
	}
}

// TestCacheControlHeaders: the caller's headers steer the cache, and the
// backend's no-store is obeyed.
func TestCacheControlHeaders(t *testing.T) {
	noStore := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{answer("weu"), answer("weu"), answer("weu"), answer("weu"), noStore}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 10m}"))
	post := func(hdr ...string) string {
		t.Helper()
		resp, body := h.post("/v1/chat/completions", chat, hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		return result(resp)
	}
	steps := []struct {
		hdr   []string
		want  string
		calls int
	}{
		{[]string{"X-Switchover-Cache", "bypass"}, "bypass", 1}, // not stored
		{nil, "miss", 2},
		{nil, "hit", 2},
		{[]string{"Cache-Control", "no-store"}, "bypass", 3},
		{[]string{"Cache-Control", "no-cache"}, "miss", 4},     // called afresh, stored
		{[]string{"X-Switchover-Cache", "refresh"}, "miss", 5}, // the upstream says no-store: not stored
		{nil, "hit", 5}, // the entry refreshed by no-cache
	}
	for i, s := range steps {
		if got := post(s.hdr...); got != s.want {
			t.Errorf("step %d %v: %q, want %q", i, s.hdr, got, s.want)
		}
		if c := h.weu.Calls(); c != s.calls {
			t.Errorf("step %d: %d upstream calls, want %d", i, c, s.calls)
		}
	}
	resp, body := h.post("/v1/chat/completions", chat, "X-Switchover-Cache", "sometimes")
	if resp.StatusCode != 400 || !strings.Contains(body, "invalid_cache_header") {
		t.Errorf("an unknown x-switchover-cache: %d %s", resp.StatusCode, body)
	}
}

// TestCacheNoStoreAnswerIsNotStored: an answer the backend marks
// no-store is passed on and never replayed.
func TestCacheNoStoreAnswerIsNotStored(t *testing.T) {
	noStore := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private, no-store")
		answer("weu")(w, r)
	}
	h := start(t, []upstreamtest.Step{noStore}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 10m}"))
	h.post("/v1/chat/completions", chat)
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "miss" {
		t.Fatalf("a no-store answer was replayed: %q", result(resp))
	}
}

// TestCacheStoresNoCutStream: a stream cut mid-way is never stored; a
// whole one is, and replayed as it was.
func TestCacheStoresNoCutStream(t *testing.T) {
	h := start(t, []upstreamtest.Step{upstreamtest.SSE("weu", 5, 2), upstreamtest.SSE("weu", 5, -1)}, []upstreamtest.Step{upstreamtest.SSE("sec", 5, 2)}, "",
		withCache("{ttl: 10m}"), func(y string) string {
			return strings.Replace(y, "breaker: {failures: 2, window: 30s, trip: 60s}", "breaker: {failures: 9, window: 30s, trip: 60s}", 1)
		})
	stream := `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	h.post("/v1/chat/completions", stream)
	r2, b2 := h.post("/v1/chat/completions", stream)
	if result(r2) != "miss" {
		t.Fatalf("after a cut stream: %q, want miss", result(r2))
	}
	r3, b3 := h.post("/v1/chat/completions", stream)
	if result(r3) != "hit" || b3 != b2 || !strings.HasSuffix(b3, "data: [DONE]\n\n") {
		t.Fatalf("the whole stream's repeat: %q\n%s\n%s", result(r3), b2, b3)
	}
	if !strings.HasPrefix(r3.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("replayed stream's Content-Type %q", r3.Header.Get("Content-Type"))
	}
}

// TestCachePurgeNeedsTheAdminKey: POST /admin/cache/purge is an admin
// call: refused without the admin key, with a wrong one and from another
// origin; with it, it removes the entries it selects.
func TestCachePurgeNeedsTheAdminKey(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"), withAdmin)
	h.post("/v1/chat/completions", chat)
	h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey)
	for _, c := range []struct {
		name, key, origin string
		want              int
	}{
		{"no key", "", "", http.StatusUnauthorized},
		{"wrong key", "admin-key-wrong-0000000000", "", http.StatusUnauthorized},
		{"an API key", appKey, "", http.StatusUnauthorized},
		{"another origin", adminKey, "http://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodPost, h.admin+"/admin/cache/purge", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Fatal("a refused purge removed entries")
	}
	code, out := h.adminDo(http.MethodPost, "/admin/cache/purge", `{"team":"blue"}`, adminKey)
	if code != 200 || out["purged"] != float64(1) {
		t.Fatalf("purge of team blue: %d %v", code, out)
	}
	if resp, _ := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); result(resp) != "miss" {
		t.Error("team blue's entry is still there")
	}
	if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != "hit" {
		t.Error("the purge of team blue removed team red's entry")
	}
	if code, out := h.adminDo(http.MethodPost, "/admin/cache/purge", `{"pool":"chat-prod"}`, adminKey); code != 200 || out["purged"] != float64(2) {
		t.Fatalf("purge of the pool: %d %v", code, out)
	}
}

// TestCacheHitsAreRecordedAtNoCost: a hit is a usage record of its own,
// at no cost and without tokens, with what the call that made the
// answer had cost as its saving; the metrics count it.
func TestCacheHitsAreRecordedAtNoCost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, withCache("{ttl: 10m}"), func(y string) string {
		return strings.Replace(withAdmin(y), "teams:", "store: {sqlite: "+db+"}\nteams:", 1)
	})
	h.post("/v1/chat/completions", chat)
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheFlights() == 0 }, func() string { return "the flight has not landed" })
	if resp, _ := h.post("/v1/chat/completions", chat); resp.Header.Get("X-Switchover-Cache") != "hit" {
		t.Fatalf("repeat: %q", resp.Header.Get("X-Switchover-Cache"))
	}
	var rows []any
	poll.Until(t, 30*time.Second, func() bool {
		h.clock.Advance(time.Second) // the usage writer flushes on the gateway's clock
		_, body := h.adminDo(http.MethodGet, "/admin/usage/requests?key=app-team", "", adminKey)
		rows, _ = body["requests"].([]any)
		return len(rows) == 2
	}, func() string { return fmt.Sprintf("rows: %v", rows) })
	hit, call := rows[0].(map[string]any), rows[1].(map[string]any)
	if hit["cache"] == "" {
		hit, call = call, hit // the two share their time on the fake clock
	}
	if hit["cache"] != "hit" || call["cache"] != "" {
		t.Fatalf("cache columns: %v and %v, want hit and none", hit["cache"], call["cache"])
	}
	if hit["cost"] != float64(0) || hit["prompt_tokens"] != float64(0) || hit["saved_usd"] != call["cost"] || call["cost"] == float64(0) {
		t.Fatalf("hit: cost %v, prompt tokens %v, saved %v; the call cost %v", hit["cost"], hit["prompt_tokens"], hit["saved_usd"], call["cost"])
	}
	rec := httptest.NewRecorder()
	h.gw.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	metrics := rec.Body.String()
	for _, want := range []string{`switchover_cache_requests_total{pool="chat-prod",result="hit"} 1`, `switchover_cache_requests_total{pool="chat-prod",result="miss"} 1`,
		`switchover_cache_saved_usd_total{pool="chat-prod"}`, `switchover_cache_stored_bytes_total{pool="chat-prod"}`, `switchover_cache_replayed_bytes_total{pool="chat-prod"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestCacheHitsTakeNoTokens: a key's tokens-per-minute limit counts no
// tokens for a hit (its estimate, taken at admission, is given back), so
// repeats answered from the cache are not refused for tokens no backend
// used.
func TestCacheHitsTakeNoTokens(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"), func(y string) string {
		return strings.Replace(y, "    team: red\n", "    team: red\n    tpm: 120\n", 1)
	})
	body := `{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`
	for i := range 12 {
		resp, b := h.post("/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
		poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheFlights() == 0 }, func() string { return "the flight has not landed" })
	}
	if n := h.weu.Calls(); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
}

// TestCacheKeyPolicyWinsOverThePools: a key's cache: turns the cache on
// for its calls on a pool without one, and another key's calls on that
// pool are not cached.
func TestCacheKeyPolicyWinsOverThePools(t *testing.T) {
	h := startAnswering(t, withCache("{ttl: 10m}"), func(y string) string {
		y = strings.TrimSuffix(y, "    cache: {ttl: 10m}\n") // the pool has none
		return strings.Replace(y, "    team: red\n", "    team: red\n    cache: {ttl: 1m}\n", 1)
	})
	for i, want := range []string{"miss", "hit"} {
		if resp, _ := h.post("/v1/chat/completions", chat); result(resp) != want {
			t.Errorf("app-team's call %d: %q, want %q", i, result(resp), want)
		}
	}
	for i := range 2 {
		if resp, _ := h.post("/v1/chat/completions", chat, "Authorization", "Bearer "+blueKey); resp.Header.Get("X-Switchover-Cache") != "" {
			t.Errorf("blue's call %d: x-switchover-cache %q, want none (no cache)", i, resp.Header.Get("X-Switchover-Cache"))
		}
	}
	if n := h.weu.Calls(); n != 3 {
		t.Errorf("%d upstream calls, want 3", n)
	}
}

// TestCacheStreamingFollowersGetTheWholeStream: streaming calls that
// wait on an identical streaming call join its stream when it starts and
// get all of it, ending in [DONE] (TestCacheStreamingFollowersGetEventsAsTheyArrive
// shows they get each event as it arrives).
func TestCacheStreamingFollowersGetTheWholeStream(t *testing.T) {
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	sse := upstreamtest.SSE("weu", 3, -1)
	slow := func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		sse(w, r)
	}
	h := start(t, []upstreamtest.Step{slow}, []upstreamtest.Step{answer("sec")}, "", withCache("{coalesce: true}"))
	stream := `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	const n = 4
	type got struct {
		result, body string
	}
	out := make(chan got, n)
	for range n {
		go func() {
			resp, body := h.post("/v1/chat/completions", stream)
			out <- got{resp.Header.Get("X-Switchover-Cache"), body}
		}()
	}
	<-arrived
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheWaiting() == n-1 }, func() string { return "followers not waiting" })
	close(release)
	var bodies []string
	results := map[string]int{}
	for range n {
		g := <-out
		results[g.result]++
		bodies = append(bodies, g.body)
	}
	if results["miss"] != 1 || results["coalesced"] != n-1 {
		t.Fatalf("results %v", results)
	}
	for _, b := range bodies {
		if b != bodies[0] || !strings.HasSuffix(b, "data: [DONE]\n\n") || strings.Count(b, "data: {") != 3 {
			t.Fatalf("a follower's stream differs or is not whole:\n%s\nthe leader's:\n%s", b, bodies[0])
		}
	}
	if c := h.weu.Calls(); c != 1 {
		t.Fatalf("%d upstream calls", c)
	}
}

// TestCacheFollowerStopsWaitingAtMaxWait: a call waiting on an identical
// one stops at the policy's max_wait (on the gateway's clock) and calls
// for itself.
func TestCacheFollowerStopsWaitingAtMaxWait(t *testing.T) {
	arrived, release := make(chan struct{}, 4), make(chan struct{})
	h := start(t, []upstreamtest.Step{blocked(arrived, release), answer("weu")}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 1m, max_wait: 30s}"))
	leader := make(chan *http.Response, 1)
	go func() { resp, _ := h.post("/v1/chat/completions", chat); leader <- resp }()
	<-arrived
	follower := make(chan *http.Response, 1)
	go func() { resp, _ := h.post("/v1/chat/completions", chat); follower <- resp }()
	poll.Until(t, 30*time.Second, func() bool { return h.gw.CacheWaiting() == 1 }, func() string { return "no follower waiting" })
	h.clock.Advance(29 * time.Second)
	if h.gw.CacheWaiting() != 1 {
		t.Fatal("the follower stopped waiting before max_wait")
	}
	h.clock.Advance(time.Second)
	resp := <-follower
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchover-Cache") != "miss" {
		t.Fatalf("the follower past max_wait: %d %q, want 200 miss", resp.StatusCode, resp.Header.Get("X-Switchover-Cache"))
	}
	close(release)
	<-leader // 30 s on the gateway's clock may have timed its attempt out and failed it over: any answer
	if n := h.weu.Calls() + h.sec.Calls(); n < 2 {
		t.Fatalf("%d upstream calls, want the follower's own besides the leader's", n)
	}
}
