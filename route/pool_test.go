package route_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

func TestPriorityOrder(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	for i := 0; i < 20; i++ {
		resp, rep, body := e.do(t, chatBody)
		if got := resp.Header.Get(route.HeaderBackend); got != "weu" {
			t.Fatalf("request %d served by %q, want weu", i, got)
		}
		if resp.Header.Get(route.HeaderFailover) != "false" || rep.Failover {
			t.Fatalf("failover flagged on a healthy primary")
		}
		if !strings.Contains(body, "hello from weu") {
			t.Fatalf("body %q", body)
		}
	}
	if n := e.ups["sec"].Calls(); n != 0 {
		t.Fatalf("priority 2 got %d calls while priority 1 was healthy", n)
	}
}

func TestRetryOnFailureGoesToAnotherBackend(t *testing.T) {
	clk := fakeclock.New()
	tests := []struct {
		name       string
		fail       step
		wantReason route.Reason
		tune       func(*route.Backend)
		// abandoned: the request was sent and given up before an answer,
		// so the backend may still bill it (Attempt.Abandoned).
		abandoned bool
	}{
		{"429", status(429, "Retry-After", "12"), route.ReasonRateLimited, nil, false},
		{"500", status(500), route.ReasonServerError, nil, false},
		{"502", status(502), route.ReasonServerError, nil, false},
		{"503", status(503), route.ReasonServerError, nil, false},
		{"504", status(504), route.ReasonServerError, nil, false},
		{"reset", reset, route.ReasonConnection, nil, false},
		{"hang past first byte timeout", hangPast(clk, fastTimeout), route.ReasonFirstByteTimeout, func(b *route.Backend) { b.FirstByteTimeout = fastTimeout }, true},
		{"hang past attempt timeout", hangPast(clk, fastTimeout), route.ReasonTimeout, func(b *route.Backend) { b.Timeout = fastTimeout }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvClock(t, clk,
				memberSpec{name: "weu", priority: 1, script: []step{tc.fail}, tune: tc.tune},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			resp, rep, body := e.do(t, chatBody)
			if resp.StatusCode != 200 || !strings.Contains(body, "hello from sec") {
				t.Fatalf("status %d body %q", resp.StatusCode, body)
			}
			h := resp.Header
			if h.Get(route.HeaderBackend) != "sec" || h.Get(route.HeaderRegion) != "region-sec" ||
				h.Get(route.HeaderFailover) != "true" || h.Get(route.HeaderAttempts) != "2" {
				t.Fatalf("headers %v", h)
			}
			if len(rep.Attempts) != 2 || rep.Attempts[0].Reason != tc.wantReason || rep.FailoverReason != tc.wantReason || rep.FailoverFrom != "weu" {
				t.Fatalf("report %+v", rep)
			}
			if rep.Attempts[0].Abandoned != tc.abandoned || rep.Attempts[1].Abandoned {
				t.Fatalf("abandoned %v, %v; want %v for the first, false for the answer", rep.Attempts[0].Abandoned, rep.Attempts[1].Abandoned, tc.abandoned)
			}
			fo := e.events.kinds(route.EventFailover)
			if len(fo) != 1 || fo[0].From != "weu" || fo[0].To != "sec" || fo[0].Reason != tc.wantReason {
				t.Fatalf("failover events %+v", fo)
			}
		})
	}
}

func TestConnectionRefusedFailsOver(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	e.ups["weu"].Close() // nothing listens there any more
	resp, rep, _ := e.do(t, chatBody)
	if resp.Header.Get(route.HeaderBackend) != "sec" || rep.Attempts[0].Reason != route.ReasonConnect {
		t.Fatalf("backend %q, attempts %+v", resp.Header.Get(route.HeaderBackend), rep.Attempts)
	}
}

func TestNoRetryOnCallerErrors(t *testing.T) {
	contentFilter := `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation"}}}`
	tests := []struct {
		name string
		code int
		body string
	}{
		{"400", 400, `{"error":{"message":"bad","code":"invalid"}}`},
		{"413", 413, `{"error":{"message":"too big"}}`},
		{"422", 422, `{"error":{"message":"unprocessable"}}`},
		{"content filter", 400, contentFilter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{raw(tc.code, tc.body)}},
				memberSpec{name: "sec", priority: 1, script: []step{raw(tc.code, tc.body)}},
			)
			// Even when a pool is told to retry them, caller errors are not.
			e.pool.RetryOn = route.NewStatusSet(400, 413, 422, 429)
			resp, rep, body := e.do(t, chatBody)
			if resp.StatusCode != tc.code || body != tc.body {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, body, tc.code, tc.body)
			}
			if calls := e.ups["weu"].Calls() + e.ups["sec"].Calls(); calls != 1 || len(rep.Attempts) != 1 {
				t.Fatalf("%d upstream calls for a caller error", calls)
			}
			if resp.Header.Get(route.HeaderFailover) != "false" {
				t.Fatal("failover flagged")
			}
			for _, b := range e.backends {
				if s := b.Breaker.Snapshot(); s.Failures != 0 {
					t.Fatalf("caller error counted against %s", b.Name)
				}
			}
		})
	}
}

func TestBodyIntactOnEveryAttempt(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "a", priority: 1, script: []step{status(503)}},
		memberSpec{name: "b", priority: 2, script: []step{status(429)}},
		memberSpec{name: "c", priority: 3, script: []step{answer("c")}},
	)
	resp, _, _ := e.do(t, chatBody)
	if resp.Header.Get(route.HeaderBackend) != "c" {
		t.Fatalf("served by %q", resp.Header.Get(route.HeaderBackend))
	}
	for _, n := range []string{"a", "b", "c"} {
		u := e.ups[n]
		if got := u.Body(0); got != chatBody {
			t.Errorf("%s received body %q, want %q", n, got, chatBody)
		}
		h := u.Header(0)
		if got := h.Get("Authorization"); got != "Bearer sk-"+n {
			t.Errorf("%s received Authorization %q", n, got)
		}
		if got := h.Get("X-Request-Id"); got != "req-1" {
			t.Errorf("%s received X-Request-Id %q", n, got)
		}
		if got := u.Path(0); got != "/v1/chat/completions" {
			t.Errorf("%s path %q", n, got)
		}
	}
}

func TestRetryNeverLandsOnFailedBackend(t *testing.T) {
	// Three equal members: whichever is chosen first fails; the retry must
	// go to one of the other two, whichever the selector picks first.
	var calls sync.Map
	failing := func(name string) step {
		return func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if _, seen := calls.LoadOrStore(id, name); seen {
				answer(name)(w, r)
				return
			}
			status(503)(w, r)
		}
	}
	e := newEnv(t,
		memberSpec{name: "a", priority: 1, script: []step{failing("a")}, settings: breaker.Settings{Failures: 1000}},
		memberSpec{name: "b", priority: 1, script: []step{failing("b")}, settings: breaker.Settings{Failures: 1000}},
		memberSpec{name: "c", priority: 1, script: []step{failing("c")}, settings: breaker.Settings{Failures: 1000}},
	)
	for i := 0; i < 60; i++ {
		r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), http.Header{"X-Request-Id": {string(rune('A' + i))}})
		resp, rep, err := e.pool.Do(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if len(rep.Attempts) != 2 {
			t.Fatalf("attempts %+v", rep.Attempts)
		}
		if rep.Attempts[0].Backend == rep.Attempts[1].Backend {
			t.Fatalf("retry landed on %s, which had just failed", rep.Attempts[0].Backend)
		}
	}
}

func TestBreakerBenchesBackendAfterFailures(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(429)}, settings: breaker.Settings{Failures: 5, Window: 30 * time.Second, Trip: 60 * time.Second}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	for i := 0; i < 5; i++ {
		resp, _, _ := e.do(t, chatBody)
		if resp.Header.Get(route.HeaderAttempts) != "2" {
			t.Fatalf("request %d: attempts %s", i, resp.Header.Get(route.HeaderAttempts))
		}
		e.clock.Advance(time.Second)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("breaker %v after 5 429s", s.State)
	}
	// Benched: requests go straight to the secondary, one attempt, still
	// flagged as a failover because they come from a lower tier.
	for i := 0; i < 10; i++ {
		resp, rep, _ := e.do(t, chatBody)
		if resp.Header.Get(route.HeaderAttempts) != "1" || resp.Header.Get(route.HeaderBackend) != "sec" || resp.Header.Get(route.HeaderFailover) != "true" {
			t.Fatalf("while open: %v", resp.Header)
		}
		if rep.FailoverReason != route.ReasonUnavailable || rep.FailoverFrom != "weu" {
			t.Fatalf("report %+v", rep)
		}
	}
	if n := e.ups["weu"].Calls(); n != 5 {
		t.Fatalf("benched backend got %d calls, want 5", n)
	}
	// The trip ends; the primary has recovered; one probe closes it and
	// priority 1 takes traffic again.
	e.ups["weu"].SetScript(answer("weu"))
	e.clock.Advance(60 * time.Second)
	resp, _, _ := e.do(t, chatBody)
	if resp.Header.Get(route.HeaderBackend) != "weu" || resp.Header.Get(route.HeaderFailover) != "false" {
		t.Fatalf("after trip: %v", resp.Header)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("probe success left breaker %v", s.State)
	}
}

// TestDrainedMemberFailoverIsReportedAsDrained: a request sent to a lower
// tier because the top member is drained reports the failover as
// "drained", not "breaker_open", in the report and to the observer (the
// failovers metric's reason); a drained member whose breaker is also open
// is still drained. An open breaker alone stays "breaker_open".
func TestDrainedMemberFailoverIsReportedAsDrained(t *testing.T) {
	tests := []struct {
		name  string
		drain bool
		open  bool
		want  route.Reason
	}{
		{"drained", true, false, route.ReasonDrained},
		{"drained with its breaker open", true, true, route.ReasonDrained},
		{"breaker open", false, true, route.ReasonUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			if tc.drain {
				e.backends["weu"].Drain()
			}
			if tc.open {
				e.backends["weu"].Breaker.Force(breaker.Open, e.clock.Now().Add(time.Minute), breaker.KindManual, "test")
			}
			resp, rep, _ := e.do(t, chatBody)
			if resp.Header.Get(route.HeaderBackend) != "sec" || resp.Header.Get(route.HeaderFailover) != "true" {
				t.Fatalf("headers %v", resp.Header)
			}
			if rep.FailoverReason != tc.want || rep.FailoverFrom != "weu" {
				t.Errorf("report: failover from %q for %q, want from weu for %q", rep.FailoverFrom, rep.FailoverReason, tc.want)
			}
			evs := e.events.kinds(route.EventFailover)
			if len(evs) != 1 || evs[0].Reason != tc.want || evs[0].From != "weu" || evs[0].To != "sec" {
				t.Errorf("failover events %+v, want one weu -> sec for %q", evs, tc.want)
			}
			if n := e.ups["weu"].Calls(); n != 0 {
				t.Errorf("weu got %d calls, want none", n)
			}
		})
	}
}

// TestTopMemberPassedOverIsReportedWithItsReason: a request sent to a
// lower tier because the top member's quota would not take it, or because
// the top member cannot honour it (an operation its provider lacks), is
// reported with that reason ("quota_held", "unsupported") in the report
// and to the observer (the failovers metric's reason), not as
// "breaker_open", which both used to be.
func TestTopMemberPassedOverIsReportedWithItsReason(t *testing.T) {
	tests := []struct {
		name  string
		top   []step
		setup func(e *env) *route.Request
		want  route.Reason
	}{
		{"out of quota", []step{limitedAnswer("weu", 0)}, func(e *env) *route.Request {
			e.backends["weu"].Quota = &route.LocalQuota{}
			e.do(t, chatBody) // weu answers that its window is spent
			r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
			return r
		}, route.ReasonQuotaHeld},
		{"lacks the operation", nil, func(e *env) *route.Request {
			e.backends["weu"].Provider = &route.Anthropic{BaseURL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}
			r, _ := route.NewRequest(route.Embeddings, []byte(`{"model":"chat-prod","input":"hi"}`), nil)
			return r
		}, route.ReasonUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: tc.top},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			r := tc.setup(e)
			calls := e.ups["weu"].Calls()
			resp, rep, err := e.pool.Do(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get(route.HeaderBackend) != "sec" || resp.Header.Get(route.HeaderFailover) != "true" {
				t.Fatalf("headers %v", resp.Header)
			}
			if rep.FailoverReason != tc.want || rep.FailoverFrom != "weu" {
				t.Errorf("report: failover from %q for %q, want from weu for %q", rep.FailoverFrom, rep.FailoverReason, tc.want)
			}
			evs := e.events.kinds(route.EventFailover)
			if len(evs) != 1 || evs[0].Reason != tc.want || evs[0].From != "weu" || evs[0].To != "sec" {
				t.Errorf("failover events %+v, want one weu -> sec for %q", evs, tc.want)
			}
			if n := e.ups["weu"].Calls() - calls; n != 0 {
				t.Errorf("weu got %d calls, want none", n)
			}
		})
	}
}

func TestRetryAfterLengthensTripThroughEngine(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(429, "Retry-After-Ms", "90000", "Retry-After", "90")},
			settings: breaker.Settings{Failures: 1, Trip: 60 * time.Second, AcceptRetryAfter: true}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	e.do(t, chatBody)
	s := e.backends["weu"].Breaker.Snapshot()
	if s.State != breaker.Open || s.Until.Sub(e.clock.Now()) != 90*time.Second {
		t.Fatalf("breaker %v until +%v, want open +90s", s.State, s.Until.Sub(e.clock.Now()))
	}
	e.clock.Advance(61 * time.Second)
	resp, _, _ := e.do(t, chatBody)
	if resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatal("primary probed before its Retry-After")
	}
}

func TestHalfOpenProbeThroughEngineUnderConcurrency(t *testing.T) {
	release := make(chan struct{})
	var probes sync.WaitGroup
	probes.Add(1)
	slowOK := func(w http.ResponseWriter, r *http.Request) {
		probes.Done()
		<-release
		answer("weu")(w, r)
	}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(503), slowOK}, settings: breaker.Settings{Failures: 1, Trip: time.Minute}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	e.do(t, chatBody) // opens weu
	e.clock.Advance(time.Minute)

	const n = 20
	var wg sync.WaitGroup
	served := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
			resp, _, err := e.pool.Do(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			served <- resp.Header.Get(route.HeaderBackend)
		}()
		if i == 0 {
			probes.Wait() // the first request holds the probe
		}
	}
	// Every other request must have gone to the secondary while the probe
	// was in flight.
	for i := 0; i < n-1; i++ {
		if b := <-served; b != "sec" {
			t.Fatalf("request served by %s during the probe", b)
		}
	}
	close(release)
	wg.Wait()
	if b := <-served; b != "weu" {
		t.Fatalf("probe served by %s", b)
	}
	if got := e.ups["weu"].Calls(); got != 2 {
		t.Fatalf("primary got %d calls, want 2 (the failure and one probe)", got)
	}
}

func TestExhausted(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(429, "Retry-After", "20")}, settings: breaker.Settings{Failures: 1, Trip: 30 * time.Second}},
		memberSpec{name: "sec", priority: 2, script: []step{status(503)}, settings: breaker.Settings{Failures: 1, Trip: 60 * time.Second}},
	)
	resp, rep, body := e.do(t, chatBody)
	if resp.StatusCode != 503 {
		t.Fatalf("status %d, want the last upstream status 503", resp.StatusCode)
	}
	// weu's trip is 30s, but its own Retry-After (20s) is when the pool,
	// with every member benched, tries it again.
	if resp.Header.Get("Retry-After") != "20" || resp.Header.Get("Retry-After-Ms") != "20000" {
		t.Fatalf("Retry-After %q / %q, want the soonest time a member takes a call (20s)", resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"))
	}
	if resp.Header.Get(route.HeaderAttempts) != "2" || resp.Header.Get(route.HeaderBackend) != "" {
		t.Fatalf("headers %v", resp.Header)
	}
	if rep.Served != nil {
		t.Fatal("report names a served member")
	}
	var e1 struct {
		Error struct {
			Message  string
			Type     string
			Code     string
			Attempts []struct {
				Backend string
				Status  int
				Reason  string
				Message string
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &e1); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	if e1.Error.Code != "backends_exhausted" || len(e1.Error.Attempts) != 2 {
		t.Fatalf("error %+v", e1.Error)
	}
	a0, a1 := e1.Error.Attempts[0], e1.Error.Attempts[1]
	if a0.Backend != "weu" || a0.Status != 429 || a0.Reason != "rate_limited" || a0.Message != "scripted 429" ||
		a1.Backend != "sec" || a1.Status != 503 || a1.Reason != "server_error" {
		t.Fatalf("attempts %+v", e1.Error.Attempts)
	}

	// Both benched: no attempt at all, 503, Retry-After still the soonest.
	e.clock.Advance(10 * time.Second)
	resp, rep, body = e.do(t, chatBody)
	if resp.StatusCode != 503 || len(rep.Attempts) != 0 || !strings.Contains(body, "no_backend_available") || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("all open: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestExhaustedAfterTransportErrors(t *testing.T) {
	clk := fakeclock.New()
	tests := []struct {
		name string
		step step
		tune func(*route.Backend)
		want int
	}{
		{"reset gives 502", reset, nil, 502},
		{"timeout gives 504", hangPast(clk, fastTimeout), func(b *route.Backend) { b.FirstByteTimeout = fastTimeout }, 504},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvClock(t, clk, memberSpec{name: "only", priority: 1, script: []step{tc.step}, tune: tc.tune})
			resp, _, _ := e.do(t, chatBody)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestAttemptsBound(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "a", priority: 1, script: []step{status(503)}},
		memberSpec{name: "b", priority: 2, script: []step{status(503)}},
		memberSpec{name: "c", priority: 3, script: []step{status(503)}},
		memberSpec{name: "d", priority: 4, script: []step{answer("d")}},
	)
	e.pool.Attempts = 2
	resp, rep, _ := e.do(t, chatBody)
	if resp.StatusCode != 503 || len(rep.Attempts) != 2 {
		t.Fatalf("status %d after %d attempts", resp.StatusCode, len(rep.Attempts))
	}
	if e.ups["c"].Calls()+e.ups["d"].Calls() != 0 {
		t.Fatal("attempt bound exceeded")
	}
}

func TestStreamingFailoverBeforeFirstByte(t *testing.T) {
	clk := fakeclock.New()
	tests := []struct {
		name string
		fail step
		tune func(*route.Backend)
	}{
		{"503 before stream", status(503), nil},
		{"headers then silence", headersThenHangPast(clk, fastTimeout), func(b *route.Backend) { b.FirstByteTimeout = fastTimeout }},
		{"keep-alive then silence", keepAliveThenHangPast(clk, fastTimeout), func(b *route.Backend) { b.FirstByteTimeout = fastTimeout }},
		{"stream closed before first event", sse("weu", 5, 0), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvClock(t, clk,
				memberSpec{name: "weu", priority: 1, script: []step{tc.fail}, tune: tc.tune},
				memberSpec{name: "sec", priority: 2, script: []step{sse("sec", 5, -1)}},
			)
			resp, _, body := e.do(t, streamBody)
			if resp.Header.Get(route.HeaderBackend) != "sec" || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("headers %v", resp.Header)
			}
			evs, _ := readEvents(strings.NewReader(body))
			if len(evs) != 6 || evs[0] != `{"choices":[{"index":0,"delta":{"content":"sec-0 "}}]}` || evs[5] != "[DONE]" {
				t.Fatalf("events %q", evs)
			}
		})
	}
}

func TestMidStreamFailureIsBodyError(t *testing.T) {
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{sse("weu", 10, 3)}, settings: breaker.Settings{Failures: 1}},
		memberSpec{name: "sec", priority: 2, script: []step{sse("sec", 5, -1)}},
	)
	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	var be *route.BodyError
	if !errorsAs(err, &be) || be.Backend != "weu" {
		t.Fatalf("err = %v, want a BodyError from weu", err)
	}
	if len(evs) != 3 {
		t.Fatalf("got %d events before the break, want 3", len(evs))
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("mid-stream failure not counted: %v", s.State)
	}
	if n := len(e.events.kinds(route.EventBodyError)); n != 1 {
		t.Fatalf("%d body error events", n)
	}
}

func TestIdleTimeoutEndsStalledStream(t *testing.T) {
	clk := fakeclock.New()
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		// The idle timer runs while the client's read waits on us: move
		// the clock each time one is armed, until the read gives up.
		for clk.BlockUntilTimer(r.Context(), fastTimeout) == nil {
			clk.Advance(fastTimeout)
		}
	}
	e := newEnvClock(t, clk, memberSpec{name: "weu", priority: 1, script: []step{stall}, tune: func(b *route.Backend) { b.IdleTimeout = fastTimeout }})
	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	var be *route.BodyError
	if !errorsAs(err, &be) || be.Reason != route.ReasonTimeout {
		t.Fatalf("err = %v", err)
	}
}

func TestClientCancelIsNotBackendsFault(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancelOnArrival := func(w http.ResponseWriter, r *http.Request) {
		cancel()
		hang(w, r)
	}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{cancelOnArrival}, settings: breaker.Settings{Failures: 1}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
	_, rep, err := e.pool.Do(ctx, r)
	if err == nil {
		t.Fatal("Do succeeded after the client went away")
	}
	if len(rep.Attempts) != 1 || rep.Attempts[0].Reason != route.ReasonCanceled {
		t.Fatalf("attempts %+v", rep.Attempts)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
		t.Fatalf("client cancel counted against the backend: %+v", s)
	}
	if e.ups["sec"].Calls() != 0 {
		t.Fatal("retried after the client went away")
	}
}

func TestClientCancelMidStreamIsNotBackendsFault(t *testing.T) {
	e := newEnv(t, memberSpec{name: "weu", priority: 1, script: []step{headersThenFlood}, settings: breaker.Settings{Failures: 1}})
	ctx, cancel := context.WithCancel(t.Context())
	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	resp.Body.Read(buf)
	cancel()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if s := e.backends["weu"].Breaker.Snapshot(); s.Failures != 0 || s.State != breaker.Closed {
		t.Fatalf("client cancel counted: %+v", s)
	}
}

// headersThenFlood streams events until the client goes. It does not pace
// them: a client that stops reading holds it back through TCP's flow
// control, and one that has gone makes the write fail.
func headersThenFlood(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for r.Context().Err() == nil {
		if _, err := io.WriteString(w, "data: {}\n\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

func TestModelRenameAndAzurePaths(t *testing.T) {
	u := newUpstream(t, answer("x"))
	base := mustURL(t, u.URL)
	tests := []struct {
		name     string
		provider route.Provider
		model    string
		wantPath string
		wantBody string
		wantAuth [2]string
	}{
		{"openai keeps model", &route.OpenAI{BaseURL: mustURL(t, u.URL+"/v1"), APIKey: "sk-1"}, "",
			"/v1/chat/completions", chatBody, [2]string{"Authorization", "Bearer sk-1"}},
		{"openai renames model", &route.OpenAI{BaseURL: mustURL(t, u.URL+"/v1"), APIKey: "sk-1"}, "gpt-4o",
			"/v1/chat/completions", strings.Replace(chatBody, `"chat-prod"`, `"gpt-4o"`, 1), [2]string{"Authorization", "Bearer sk-1"}},
		{"azure deployment path", &route.Azure{Endpoint: base, APIKey: "az-1", APIVersion: "2024-10-21"}, "gpt-4o-weu",
			"/openai/deployments/gpt-4o-weu/chat/completions?api-version=2024-10-21", chatBody, [2]string{"Api-Key", "az-1"}},
		{"azure default deployment is the client's model", &route.Azure{Endpoint: base, APIKey: "az-1", APIVersion: "2024-10-21"}, "",
			"/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21", chatBody, [2]string{"Api-Key", "az-1"}},
		{"azure v1", &route.Azure{Endpoint: base, APIKey: "az-1", APIVersion: "v1"}, "gpt-4o",
			"/openai/v1/chat/completions", strings.Replace(chatBody, `"chat-prod"`, `"gpt-4o"`, 1), [2]string{"Api-Key", "az-1"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &route.Pool{Name: "chat-prod", Members: []*route.Member{{Backend: &route.Backend{Name: "b", Provider: tc.provider}, Deployment: tc.model}}}
			r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), http.Header{"Api-Key": {"caller"}, "Authorization": {"Bearer caller"}})
			resp, _, err := p.Do(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := u.Path(i); got != tc.wantPath {
				t.Errorf("path %q, want %q", got, tc.wantPath)
			}
			if got := u.Body(i); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			h := u.Header(i)
			if got := h.Get(tc.wantAuth[0]); got != tc.wantAuth[1] {
				t.Errorf("%s = %q", tc.wantAuth[0], got)
			}
			if strings.Contains(h.Get("Authorization")+h.Get("Api-Key"), "caller") {
				t.Errorf("caller's credentials forwarded: %v", h)
			}
		})
	}
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// BenchmarkPoolDo measures the engine alone: one non-streaming chat
// completion through a Pool (selection, breaker, attempt, request built
// for the backend, response read and relayed) to a loopback upstream, on
// the wall clock, with the timers a configured backend runs.
func BenchmarkPoolDo(b *testing.B) {
	const answer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "59")
		io.WriteString(w, answer)
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	pool := &route.Pool{Name: "chat-prod", Members: []*route.Member{{Backend: &route.Backend{
		Name:             "weu",
		Region:           "westeurope",
		Provider:         &route.OpenAI{BaseURL: base, APIKey: "sk-weu"},
		Breaker:          breaker.New("weu", breaker.Settings{}),
		Timeout:          time.Minute,
		FirstByteTimeout: 30 * time.Second,
		IdleTimeout:      30 * time.Second,
	}}}}
	header := http.Header{"Authorization": {"Bearer caller-key"}, "X-Request-Id": {"req-1"}}
	body := []byte(chatBody)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		r, err := route.NewRequest(route.ChatCompletions, body, header)
		if err != nil {
			b.Fatal(err)
		}
		resp, _, err := pool.Do(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
