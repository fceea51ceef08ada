package route_test

// Regression tests for the faults of issue 9: hung and misconfigured
// backends, requests no backend can take, quota benches, streams and
// bodies cut short, budgets and the answers given when nothing is left.
// Each test is named for the failure it guards.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// result is what a request run in its own goroutine got.
type result struct {
	resp *http.Response
	rep  *route.Report
	body string
	err  error
}

// goDo runs a chat request through the pool in its own goroutine, as a
// client of the gateway would (with its X-Request-Id), and delivers what
// it got once the body has been read.
func (e *env) goDo(ctx context.Context, body string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := route.NewRequest(route.ChatCompletions, []byte(body), http.Header{"X-Request-Id": {"req-1"}})
		if err != nil {
			ch <- result{err: err}
			return
		}
		resp, rep, err := e.pool.Do(ctx, r)
		if err != nil {
			ch <- result{rep: rep, err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		ch <- result{resp: resp, rep: rep, body: string(b), err: err}
	}()
	return ch
}

// await waits for a result of goDo, for as long as ctx lasts.
func await(t *testing.T, ctx context.Context, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("request still waiting: %v", ctx.Err())
		return result{}
	}
}

// safety is the bound on every wait of these tests, so that a regression
// that hangs fails instead of stalling the suite; no test comes near it.
func safety(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// isHealthCheck tells the engine's health check from a client's call: the
// check carries none of a client's headers. (The upstream has read the
// body before a step runs, so the step cannot look for "max_tokens":1.)
func isHealthCheck(r *http.Request) bool { return r.Header.Get("X-Request-Id") == "" }

// stopWatch is a pool clock that tells when the timer armed for d is
// stopped: the health check stops its timer as soon as its probe has an
// answer, so the test knows the check is over.
type stopWatch struct {
	*fakeclock.Clock
	d       time.Duration
	once    sync.Once
	stopped chan struct{}
}

func (c *stopWatch) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.Clock.AfterFunc(d, f)
	if d != c.d {
		return t
	}
	return watchedTimer{t, c}
}

// AfterFuncAt watches the timer armed at c.d from now too (clock.At).
func (c *stopWatch) AfterFuncAt(at time.Time, f func()) clock.Timer {
	t := c.Clock.AfterFuncAt(at, f)
	if at.Sub(c.Now()) != c.d {
		return t
	}
	return watchedTimer{t, c}
}

type watchedTimer struct {
	clock.Timer
	c *stopWatch
}

func (t watchedTimer) Stop() bool {
	ok := t.Timer.Stop()
	t.c.once.Do(func() { close(t.c.stopped) })
	return ok
}

// headersSeen is a backend transport that reports the status of each
// response whose headers have reached the engine.
type headersSeen struct {
	rt     http.RoundTripper
	status chan int
}

func newHeadersSeen(t *testing.T) *headersSeen {
	tr := route.NewTransport(route.TransportSettings{})
	t.Cleanup(tr.CloseIdleConnections)
	return &headersSeen{rt: tr, status: make(chan int, 16)}
}

func (h *headersSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err == nil {
		h.status <- resp.StatusCode
	}
	return resp, err
}

// apiError is the error body the engine writes when it answers itself.
type apiError struct {
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

func decodeError(t *testing.T, body string) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e
}

func TestHungBackendIsCheckedAndItsWaitingCallsFailOver(t *testing.T) {
	t.Run("check times out: benched, every waiting call fails over", hungCheckTimesOut)
	t.Run("check answers: not benched, the call keeps waiting", hungCheckAnswers)
}

// hungCheckTimesOut: calls wait on a hung backend; the health check the
// slow threshold starts times out, so the backend is benched and every
// waiting call fails over at once.
func hungCheckTimesOut(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	probed, arrived := make(chan struct{}, 8), make(chan struct{}, 8)
	hung := hangTelling(probed, arrived)
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{hung}, tune: func(b *route.Backend) { b.FirstByteTimeout = time.Minute }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	weu := e.backends["weu"]
	slow, check := weu.SlowAfter(false), weu.CheckTimeout()
	if slow+check >= weu.FirstByteTimeout {
		t.Fatalf("slow threshold %v + check timeout %v reach the first-byte timeout %v: the test would prove nothing", slow, check, weu.FirstByteTimeout)
	}
	const n = 4
	var calls []<-chan result
	for range n {
		calls = append(calls, e.goDo(ctx, chatBody))
	}
	// Every call is waiting on the hung backend (each armed its
	// first-byte and slow timers before it sent).
	for i := range n {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("%d of %d calls reached the hung backend", i, n)
		}
	}
	clk.Advance(slow)
	select {
	case <-probed:
	case <-ctx.Done():
		t.Fatal("no health check reached the hung backend after the slow threshold")
	}
	if err := clk.BlockUntilTimer(ctx, check); err != nil {
		t.Fatal(err)
	}
	clk.Advance(check)

	for i, ch := range calls {
		res := await(t, ctx, ch)
		if res.err != nil {
			t.Fatalf("request %d: %v", i, res.err)
		}
		if res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
			t.Fatalf("request %d: %d from %q, want 200 from sec", i, res.resp.StatusCode, res.resp.Header.Get(route.HeaderBackend))
		}
		if len(res.rep.Attempts) != 2 || res.rep.Attempts[0].Reason != route.ReasonUnresponsive || !res.rep.Attempts[0].Retryable {
			t.Fatalf("request %d: attempts %+v, want weu unresponsive then sec", i, res.rep.Attempts)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the client's context ended: the calls waited it out")
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Open {
		t.Fatalf("hung backend's breaker %v after a failed health check, want open", s.State)
	}
	if evs := e.events.kinds(route.EventUnresponsive); len(evs) != 1 || evs[0].Backend != weu {
		t.Fatalf("unresponsive events %+v, want one for weu", evs)
	}
	if got := e.ups["weu"].Calls(); got != n+1 {
		t.Fatalf("hung backend got %d calls, want %d and one health check", got, n)
	}
}

// hungCheckAnswers: a slow backend whose health check answers is not
// benched, and its call waits for its own first-byte timeout.
func hungCheckAnswers(t *testing.T) {
	ctx := safety(t)
	clk := fakeclock.New()
	slowButAlive := func(w http.ResponseWriter, r *http.Request) {
		if isHealthCheck(r) {
			answer("weu")(w, r)
			return
		}
		hang(w, r)
	}
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{slowButAlive}, tune: func(b *route.Backend) { b.FirstByteTimeout = 16 * time.Second }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	weu := e.backends["weu"]
	slow, check := weu.SlowAfter(false), weu.CheckTimeout()
	if slow >= weu.FirstByteTimeout || slow+check <= weu.FirstByteTimeout {
		t.Fatalf("slow threshold %v, check timeout %v: want the check to start before the first-byte timeout %v and to end after it", slow, check, weu.FirstByteTimeout)
	}
	watch := &stopWatch{Clock: clk, d: check, stopped: make(chan struct{})}
	e.pool.Clock = watch
	call := e.goDo(ctx, chatBody)
	if err := clk.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(slow)
	select {
	case <-watch.stopped:
	case <-ctx.Done():
		t.Fatal("the health check did not end")
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
		t.Fatalf("a slow backend whose health check passed was benched: %+v", s)
	}
	if evs := e.events.kinds(route.EventUnresponsive); len(evs) != 0 {
		t.Fatalf("unresponsive events %+v for a backend that answered its check", evs)
	}
	// The call was not abandoned: its own first-byte timeout decides.
	clk.Advance(weu.FirstByteTimeout - slow)
	res := await(t, ctx, call)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.rep.Attempts) != 2 || res.rep.Attempts[0].Reason != route.ReasonFirstByteTimeout || res.resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("attempts %+v, want weu first_byte_timeout then sec", res.rep.Attempts)
	}
	if s := weu.Breaker.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("breaker %v after one slow call whose check passed", s.State)
	}
}

func TestMisconfiguredBackendFailsOverAndIsBenched(t *testing.T) {
	azure := func(b *route.Backend) {
		base := *b.Provider.(*route.OpenAI).BaseURL
		base.Path = ""
		b.Provider = &route.Azure{Endpoint: &base, APIKey: "az-weu-key", APIVersion: "2024-10-21"}
	}
	tests := []struct {
		name string
		code int
		body string
		tune func(*route.Backend)
	}{
		{"401 key refused", 401, `{"error":{"message":"Incorrect API key provided: sk-weu.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, nil},
		{"403 no access", 403, `{"error":{"code":"PermissionDenied","message":"Principal does not have access to API/Operation."}}`, nil},
		{"404 Azure deployment not found", 404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}`, azure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{raw(tc.code, tc.body)}, tune: tc.tune},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			resp, rep, body := e.do(t, chatBody)
			if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" || !strings.Contains(body, "hello from sec") {
				t.Fatalf("got %d from %q: %s", resp.StatusCode, resp.Header.Get(route.HeaderBackend), body)
			}
			if len(rep.Attempts) != 2 || rep.Attempts[0].Reason != route.ReasonMisconfigured || rep.Attempts[0].Status != tc.code {
				t.Fatalf("attempts %+v", rep.Attempts)
			}
			if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Open {
				t.Fatalf("breaker %v after one %d, want open at once", s.State, tc.code)
			}
			evs := e.events.kinds(route.EventMisconfigured)
			if len(evs) != 1 || evs[0].Backend != e.backends["weu"] || evs[0].Attempt == nil || evs[0].Attempt.Status != tc.code {
				t.Fatalf("misconfigured events %+v", evs)
			}
			if strings.Contains(evs[0].Attempt.Message, "sk-weu") {
				t.Fatalf("backend's key in the event: %q", evs[0].Attempt.Message)
			}
		})
	}

	t.Run("every backend 401: 502, then no upstream call", func(t *testing.T) {
		refused := `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`
		e := newEnv(t,
			memberSpec{name: "weu", priority: 1, script: []step{raw(401, refused)}},
			memberSpec{name: "sec", priority: 2, script: []step{raw(401, refused)}},
		)
		resp, _, body := e.do(t, chatBody)
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("status %d, want 502: the caller's credentials were not the ones refused", resp.StatusCode)
		}
		if code := decodeError(t, body).Error.Code; code != "backends_misconfigured" {
			t.Fatalf("code %q, want backends_misconfigured", code)
		}
		_, rep, _ := e.do(t, chatBody)
		if len(rep.Attempts) != 0 || e.ups["weu"].Calls() != 1 || e.ups["sec"].Calls() != 1 {
			t.Fatalf("benched misconfigured backends called again: attempts %+v, calls %d, %d", rep.Attempts, e.ups["weu"].Calls(), e.ups["sec"].Calls())
		}
	})
}

func TestImpossibleRequestDoesNotBenchBackends(t *testing.T) {
	const huge = `{"model":"chat-prod","messages":[{"role":"user","content":"write a book"}],"max_tokens":1000000}`
	tooBig := status(429, "X-Ratelimit-Limit-Tokens", "30000", "Retry-After", "20")
	strict := breaker.Settings{Failures: 1, FollowRetryAfter: true}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{tooBig, answer("weu")}, settings: strict},
		memberSpec{name: "sec", priority: 2, script: []step{tooBig, answer("sec")}, settings: strict},
	)
	resp, rep, body := e.do(t, huge)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Should-Retry"); got != "false" {
		t.Fatalf("X-Should-Retry %q, want false", got)
	}
	if ra, ms := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); ra != "" || ms != "" {
		t.Fatalf("Retry-After %q / %q for a request no wait will help", ra, ms)
	}
	apiErr := decodeError(t, body)
	if apiErr.Error.Code != "tokens_exceed_limit" || !strings.Contains(apiErr.Error.Message, "token limit") {
		t.Fatalf("error %+v", apiErr.Error)
	}
	if len(apiErr.Error.Attempts) != 2 || !strings.Contains(apiErr.Error.Attempts[0].Message, "30000") {
		t.Fatalf("attempts %+v do not name the limit of 30000 tokens", apiErr.Error.Attempts)
	}
	if len(rep.Attempts) != 2 {
		t.Fatalf("attempts %+v, want both backends asked (another may have a larger limit)", rep.Attempts)
	}
	for _, name := range []string{"weu", "sec"} {
		if s := e.backends[name].Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
			t.Fatalf("%s benched for a request it can never take: %+v", name, s)
		}
	}
	resp, _, body = e.do(t, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "weu" || !strings.Contains(body, "hello from weu") {
		t.Fatalf("a normal request afterwards: %d from %q", resp.StatusCode, resp.Header.Get(route.HeaderBackend))
	}
}

func TestThrottledBackendBenchedAtOnceForItsRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		fail       step
		opensAfter int           // failed requests until the breaker opens
		openFor    time.Duration // how long it is then open
		throttled  bool          // Snapshot().Throttled while open
		afterTrip  breaker.State // once openFor has passed, without traffic
		probes     bool          // the bench ends through half-open
	}{
		{"429 with Retry-After 7 opens at once for 7s", status(429, "Retry-After", "7"), 1, 7 * time.Second, true, breaker.Closed, false},
		{"503 without Retry-After still needs 5 failures", status(503), 5, breaker.DefaultTrip, false, breaker.HalfOpen, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{tc.fail}, settings: breaker.Settings{FollowRetryAfter: true}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			br := e.backends["weu"].Breaker
			for i := 1; i <= tc.opensAfter; i++ {
				resp, _, _ := e.do(t, chatBody)
				if resp.Header.Get(route.HeaderBackend) != "sec" {
					t.Fatalf("request %d served by %q", i, resp.Header.Get(route.HeaderBackend))
				}
				if s := br.Snapshot(); i < tc.opensAfter && s.State != breaker.Closed {
					t.Fatalf("breaker %v after %d failures, want closed until %d", s.State, i, tc.opensAfter)
				}
			}
			s := br.Snapshot()
			if s.State != breaker.Open || s.Until.Sub(e.clock.Now()) != tc.openFor || s.Throttled != tc.throttled {
				t.Fatalf("after %d failures: %v until +%v throttled %v, want open +%v throttled %v",
					tc.opensAfter, s.State, s.Until.Sub(e.clock.Now()), s.Throttled, tc.openFor, tc.throttled)
			}
			e.clock.Advance(tc.openFor)
			if s := br.Snapshot(); s.State != tc.afterTrip {
				t.Fatalf("breaker %v once the bench ended, want %v", s.State, tc.afterTrip)
			}
			if got := e.ups["weu"].Calls(); got != tc.opensAfter {
				t.Fatalf("weu got %d calls, want %d (the bench ended without traffic)", got, tc.opensAfter)
			}
			sawHalfOpen := false
			e.events.mu.Lock()
			for _, tr := range e.events.trs {
				sawHalfOpen = sawHalfOpen || tr.To == breaker.HalfOpen
			}
			e.events.mu.Unlock()
			if sawHalfOpen != tc.probes {
				t.Fatalf("half-open transition seen %v, want %v", sawHalfOpen, tc.probes)
			}
		})
	}
}

func TestWholePoolBenchedTriesTheBackendWhoseRetryAfterEndsFirst(t *testing.T) {
	apim := breaker.Settings{Failures: 1, Trip: 60 * time.Second, AcceptRetryAfter: true}
	tests := []struct {
		name  string
		after time.Duration
		want  string // the backend that serves; "" for no upstream call
	}{
		{"before any Retry-After ended", 2 * time.Second, ""},
		{"only the 5s Retry-After ended", 6 * time.Second, "short"},
		{"both ended, the 5s one first", 9 * time.Second, "short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// "long" comes first by priority: the pick must follow the
			// Retry-Afters, not the order.
			e := newEnv(t,
				memberSpec{name: "long", priority: 1, script: []step{status(429, "Retry-After", "8"), answer("long")}, settings: apim},
				memberSpec{name: "short", priority: 2, script: []step{status(429, "Retry-After", "5"), answer("short")}, settings: apim},
			)
			if resp, rep, _ := e.do(t, chatBody); resp.StatusCode != 429 || len(rep.Attempts) != 2 {
				t.Fatalf("benching both: %d after %d attempts", resp.StatusCode, len(rep.Attempts))
			}
			for _, n := range []string{"long", "short"} {
				if s := e.backends[n].Breaker.Snapshot(); s.State != breaker.Open || s.Until.Sub(e.clock.Now()) != apim.Trip {
					t.Fatalf("%s: %v until +%v, want open for the whole trip", n, s.State, s.Until.Sub(e.clock.Now()))
				}
			}
			e.clock.Advance(tc.after)
			resp, rep, body := e.do(t, chatBody)
			calls := e.ups["long"].Calls() + e.ups["short"].Calls()
			if tc.want == "" {
				if resp.StatusCode == 200 || len(rep.Attempts) != 0 || calls != 2 {
					t.Fatalf("before any Retry-After: %d after %d attempts, %d upstream calls in all", resp.StatusCode, len(rep.Attempts), calls)
				}
				return
			}
			if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != tc.want || !strings.Contains(body, "hello from "+tc.want) {
				t.Fatalf("got %d from %q, want 200 from %s", resp.StatusCode, resp.Header.Get(route.HeaderBackend), tc.want)
			}
			if calls != 3 {
				t.Fatalf("%d upstream calls in all, want 3 (the two 429s and one early probe)", calls)
			}
			if s := e.backends[tc.want].Breaker.Snapshot(); s.State != breaker.Closed {
				t.Fatalf("early probe succeeded but %s is %v", tc.want, s.State)
			}
			if s := e.backends["long"].Breaker.Snapshot(); s.State != breaker.Open {
				t.Fatalf("long is %v, want still open", s.State)
			}
		})
	}
}

// chunks streams the given data lines, each as one event, and ends the
// response cleanly.
func chunks(data ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, d := range data {
			fmt.Fprintf(w, "data: %s\n\n", d)
			w.(http.Flusher).Flush()
		}
	}
}

func TestStreamWithoutDoneIsAFailure(t *testing.T) {
	const (
		c0       = `{"choices":[{"index":0,"delta":{"role":"assistant","content":"Once"}}]}`
		c1       = `{"choices":[{"index":0,"delta":{"content":" upon"}}]}`
		nullStop = `{"choices":[{"index":0,"delta":{"content":" a"},"finish_reason":null}]}`
		stop     = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	)
	tests := []struct {
		name       string
		stream     step
		incomplete bool
	}{
		{"chunks without finish_reason, no [DONE]", chunks(c0, c1), true},
		{"finish_reason null, no [DONE]", chunks(c0, nullStop), true},
		{"finish_reason stop, no [DONE]", chunks(c0, c1, stop), false},
		{"[DONE]", chunks(c0, c1, stop, "[DONE]"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, memberSpec{name: "weu", priority: 1, script: []step{tc.stream}})
			r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
			resp, _, err := e.pool.Do(safety(t), r)
			if err != nil {
				t.Fatal(err)
			}
			_, err = readEvents(resp.Body)
			resp.Body.Close()
			s := e.backends["weu"].Breaker.Snapshot()
			if !tc.incomplete {
				if err != nil || s.Failures != 0 {
					t.Fatalf("complete stream: err %v, breaker %+v", err, s)
				}
				return
			}
			var be *route.BodyError
			if !errorsAs(err, &be) || be.Reason != route.ReasonStreamError || !errors.Is(err, route.ErrStreamIncomplete) || be.Backend != "weu" {
				t.Fatalf("err = %v, want a stream_error BodyError for an incomplete stream", err)
			}
			if s.Failures != 1 {
				t.Fatalf("breaker %+v, want the incomplete stream counted", s)
			}
			if n := len(e.events.kinds(route.EventBodyError)); n != 1 {
				t.Fatalf("%d body error events", n)
			}
		})
	}
}

func TestShortPlainBodyFailsOver(t *testing.T) {
	const short = `{"id":"chatcmpl-weu-cut-short","object":"chat.comp` // 50 bytes
	if len(short) != 50 {
		t.Fatalf("short body is %d bytes", len(short))
	}
	cut := func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n%s", short)
		buf.Flush()
	}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{cut}},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
	)
	resp, rep, body := e.do(t, chatBody)
	if resp.StatusCode != 200 || resp.Header.Get(route.HeaderBackend) != "sec" {
		t.Fatalf("got %d from %q", resp.StatusCode, resp.Header.Get(route.HeaderBackend))
	}
	if strings.Contains(body, "weu-cut-short") || !json.Valid([]byte(body)) || !strings.Contains(body, "hello from sec") {
		t.Fatalf("client got %q", body)
	}
	if len(rep.Attempts) != 2 || !rep.Attempts[0].Retryable || rep.Attempts[0].Status != 200 {
		t.Fatalf("attempts %+v, want a retryable 200 from weu, then sec", rep.Attempts)
	}
}

func TestSlowClientDoesNotTripTheIdleTimer(t *testing.T) {
	clk := fakeclock.New()
	const idle = 200 * time.Millisecond
	// Far more than the engine's read buffer, so the client's reads keep
	// going back to the connection after each of its pauses.
	const events = 2000
	e := newEnvClock(t, clk, memberSpec{name: "weu", priority: 1, script: []step{sse("weu", events, -1)},
		settings: breaker.Settings{Failures: 1}, tune: func(b *route.Backend) { b.IdleTimeout = idle }})
	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(safety(t), r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got strings.Builder
	buf := make([]byte, 4<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		got.Write(buf[:n])
		if rerr != nil {
			err = rerr
			break
		}
		// The client is busy elsewhere; the backend has sent everything.
		clk.Advance(10 * idle)
	}
	if err != io.EOF {
		t.Fatalf("stream read by a slow client ended with %v", err)
	}
	evs, _ := readEvents(strings.NewReader(got.String()))
	if len(evs) != events+1 || evs[events] != "[DONE]" {
		t.Fatalf("%d events, want %d and [DONE]", len(evs), events)
	}
	if s := e.backends["weu"].Breaker.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
		t.Fatalf("a slow client counted against the backend: %+v", s)
	}
	if n := len(e.events.kinds(route.EventBodyError)); n != 0 {
		t.Fatalf("%d body error events", n)
	}
}

// TestErrorBodyThatNeverArrivesIsBoundedByFirstByteTimeout: an error
// whose headers come and whose body never does fails over like a hang and
// counts against the backend, whether its status is retried (503: the bug
// was a wait for the whole attempt timeout) or not (400: the bug was an
// empty 400 passed to the client and a success recorded).
func TestErrorBodyThatNeverArrivesIsBoundedByFirstByteTimeout(t *testing.T) {
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusBadRequest} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			ctx := safety(t)
			clk := fakeclock.New()
			noBody := func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
			seen := newHeadersSeen(t)
			e := newEnvClock(t, clk,
				memberSpec{name: "weu", priority: 1, script: []step{noBody}, tune: func(b *route.Backend) {
					b.FirstByteTimeout = fastTimeout
					b.Transport = seen
				}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			call := e.goDo(ctx, chatBody)
			select {
			case st := <-seen.status:
				if st != code {
					t.Fatalf("headers with status %d", st)
				}
			case <-ctx.Done():
				t.Fatal("no headers from weu")
			}
			// The headers are in; the body never comes.
			clk.Advance(fastTimeout)
			res := await(t, ctx, call)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.resp.StatusCode != 200 || res.resp.Header.Get(route.HeaderBackend) != "sec" {
				t.Fatalf("got %d from %q with body %q", res.resp.StatusCode, res.resp.Header.Get(route.HeaderBackend), res.body)
			}
			a0 := res.rep.Attempts[0]
			if len(res.rep.Attempts) != 2 || a0.Status != code || !a0.Retryable || a0.Reason != route.ReasonFirstByteTimeout {
				t.Fatalf("attempts %+v", res.rep.Attempts)
			}
			if s := e.backends["weu"].Breaker.Snapshot(); s.Failures != 1 {
				t.Fatalf("breaker %+v: a backend that hung mid-answer counted as a success", s)
			}
		})
	}
}

func TestRetryBudgetStopsRetries(t *testing.T) {
	const fbt = 15 * time.Second
	slowFirstByte := func(b *route.Backend) { b.FirstByteTimeout = fbt }

	t.Run("the first attempt's own timeout spends the budget: no retry", func(t *testing.T) {
		clk := fakeclock.New()
		e := newEnvClock(t, clk,
			memberSpec{name: "weu", priority: 1, script: []step{hangPast(clk, fbt)}, tune: slowFirstByte},
			memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
		)
		e.pool.TryDuration = 10 * time.Second
		resp, rep, body := e.do(t, chatBody)
		if len(rep.Attempts) != 1 || e.ups["sec"].Calls() != 0 {
			t.Fatalf("a retry started after the budget: attempts %+v", rep.Attempts)
		}
		if rep.Attempts[0].Reason != route.ReasonFirstByteTimeout {
			t.Fatalf("first attempt ended with %q, want its full first-byte timeout", rep.Attempts[0].Reason)
		}
		if !rep.BudgetSpent {
			t.Fatal("report does not say the budget was spent")
		}
		if resp.StatusCode != http.StatusGatewayTimeout || decodeError(t, body).Error.Code != "backends_exhausted" {
			t.Fatalf("got %d %s, want the exhausted answer", resp.StatusCode, body)
		}
	})

	t.Run("a retry's first-byte wait is cut at the budget", func(t *testing.T) {
		clk := fakeclock.New()
		slow503 := func(w http.ResponseWriter, r *http.Request) {
			clk.Advance(4 * time.Second)
			status(503)(w, r)
		}
		e := newEnvClock(t, clk,
			memberSpec{name: "weu", priority: 1, script: []step{slow503}, tune: slowFirstByte},
			// Moves the clock by the retry's whole first-byte timeout: the
			// budget, 6s into it, must end the wait first.
			memberSpec{name: "sec", priority: 2, script: []step{hangPast(clk, fbt)}, tune: slowFirstByte},
		)
		e.pool.TryDuration = 10 * time.Second
		_, rep, _ := e.do(t, chatBody)
		if len(rep.Attempts) != 2 || rep.Attempts[1].Reason != route.ReasonTimeout {
			t.Fatalf("attempts %+v, want the retry ended by the budget", rep.Attempts)
		}
		if !rep.BudgetSpent {
			t.Fatal("report does not say the budget was spent")
		}
		if s := e.backends["sec"].Breaker.Snapshot(); s.Failures != 0 {
			t.Fatalf("the budget running out counted against sec: %+v", s)
		}
	})
}

func TestClientRetryAfterIsCapped(t *testing.T) {
	follow := breaker.Settings{FollowRetryAfter: true}
	tests := []struct {
		name  string
		specs []memberSpec
	}{
		{"Retry-After 86400", []memberSpec{
			{name: "weu", priority: 1, script: []step{status(429, "Retry-After", "86400")}},
		}},
		{"retry-after-ms 1e300", []memberSpec{
			{name: "weu", priority: 1, script: []step{status(429, "Retry-After-Ms", "1e300")}},
		}},
		{"both, breakers following them", []memberSpec{
			{name: "weu", priority: 1, script: []step{status(429, "Retry-After", "86400")}, settings: follow},
			{name: "sec", priority: 2, script: []step{status(429, "Retry-After-Ms", "1e300")}, settings: follow},
		}},
	}
	const maxSeconds = 300
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.specs...)
			// The exhausted answer, and the next one while benched.
			for i := range 2 {
				resp, _, _ := e.do(t, chatBody)
				if resp.StatusCode == 200 {
					t.Fatalf("request %d: 200", i)
				}
				ra, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
				if err != nil || ra < 0 || ra > maxSeconds {
					t.Fatalf("request %d: Retry-After %q, want 0 to 300 seconds", i, resp.Header.Get("Retry-After"))
				}
				ms, err := strconv.ParseInt(resp.Header.Get("Retry-After-Ms"), 10, 64)
				if err != nil || ms < 0 || ms > maxSeconds*1000 {
					t.Fatalf("request %d: Retry-After-Ms %q, want 0 to 300000", i, resp.Header.Get("Retry-After-Ms"))
				}
			}
		})
	}
}

func TestAllMembersDrainedSaysOutOfService(t *testing.T) {
	tests := []struct {
		name  string
		bench bool // one of them is also benched by its breaker
	}{
		{"drained", false},
		{"drained, one also benched", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t,
				memberSpec{name: "weu", priority: 1, script: []step{answer("weu")}},
				memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}},
			)
			for _, b := range e.backends {
				b.Drain()
			}
			if tc.bench {
				e.backends["weu"].Breaker.Force(breaker.Open, e.clock.Now().Add(time.Minute), breaker.KindManual, "test")
			}
			resp, rep, body := e.do(t, chatBody)
			if resp.StatusCode != http.StatusServiceUnavailable || decodeError(t, body).Error.Code != "pool_out_of_service" {
				t.Fatalf("got %d %s, want 503 pool_out_of_service", resp.StatusCode, body)
			}
			if ra, ms := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); ra != "" || ms != "" {
				t.Fatalf("Retry-After %q / %q for a pool out of service", ra, ms)
			}
			if len(rep.Attempts) != 0 || e.ups["weu"].Calls()+e.ups["sec"].Calls() != 0 {
				t.Fatal("a drained backend was called")
			}
		})
	}
}

func TestEveryMemberBenchedForQuotaAnswers429(t *testing.T) {
	follow := breaker.Settings{FollowRetryAfter: true}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(429, "Retry-After", "20")}, settings: follow},
		memberSpec{name: "sec", priority: 2, script: []step{status(429, "Retry-After", "30")}, settings: follow},
	)
	e.do(t, chatBody) // benches both
	for _, n := range []string{"weu", "sec"} {
		if s := e.backends[n].Breaker.Snapshot(); s.State != breaker.Open || !s.Throttled {
			t.Fatalf("%s: %+v, want benched for quota", n, s)
		}
	}
	resp, rep, body := e.do(t, chatBody)
	if len(rep.Attempts) != 0 {
		t.Fatalf("attempts %+v while every backend is benched", rep.Attempts)
	}
	if resp.StatusCode != http.StatusTooManyRequests || decodeError(t, body).Error.Code != "backends_rate_limited" {
		t.Fatalf("got %d %s, want 429 backends_rate_limited", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "20" {
		t.Fatalf("Retry-After %q, want 20 (the soonest quota back)", ra)
	}
}

func TestUntranslatableSuccessIsNot200(t *testing.T) {
	const messages = `{"model":"chat-prod","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", `<html><body>maintenance</body></html>`},
		{"no choices", `{"object":"list","data":[]}`},
		{"tool arguments not an object", `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"[1,2]"}}]},"finish_reason":"tool_calls"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, memberSpec{name: "weu", priority: 1, script: []step{raw(200, tc.body)}})
			r, err := route.NewRequest(route.Messages, []byte(messages), nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Format = translate.Anthropic
			resp, rep, err := e.pool.Do(safety(t), r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d, want 502 for a 200 that could not be translated: %s", resp.StatusCode, b)
			}
			var an struct{ Type string }
			if json.Unmarshal(b, &an) != nil || an.Type != "error" {
				t.Fatalf("body %s, want an Anthropic error", b)
			}
			if len(rep.Attempts) != 1 || rep.Attempts[0].Reason != route.ReasonInvalidResponse {
				t.Fatalf("attempts %+v", rep.Attempts)
			}
		})
	}
}

func TestHalfOpenStreamProbeDecidedAtFirstEvent(t *testing.T) {
	ctx := safety(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	finish := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(finish)
	longStream := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}
	e := newEnv(t,
		memberSpec{name: "weu", priority: 1, script: []step{status(503), longStream}, settings: breaker.Settings{Failures: 1, Trip: time.Minute}},
		memberSpec{name: "sec", priority: 2, script: []step{sse("sec", 3, -1)}},
	)
	br := e.backends["weu"].Breaker
	e.do(t, streamBody) // opens weu
	if s := br.Snapshot(); s.State != breaker.Open {
		t.Fatalf("breaker %v after a 503", s.State)
	}
	e.clock.Advance(time.Minute)
	if s := br.Snapshot(); s.State != breaker.HalfOpen {
		t.Fatalf("breaker %v after its trip", s.State)
	}

	r, _ := route.NewRequest(route.ChatCompletions, []byte(streamBody), nil)
	resp, _, err := e.pool.Do(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get(route.HeaderBackend) != "weu" {
		t.Fatalf("probe served by %q", resp.Header.Get(route.HeaderBackend))
	}
	rd := bufio.NewReader(resp.Body)
	first, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(first, `"first"`) {
		t.Fatalf("first event %q: %v", first, err)
	}
	// The stream is still open (the backend waits on release).
	if s := br.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("breaker %v once the probe's first event was read, want closed", s.State)
	}
	finish()
	evs, err := readEvents(rd)
	if err != nil || len(evs) != 2 || evs[1] != "[DONE]" {
		t.Fatalf("rest of the stream %q: %v", evs, err)
	}
	if s := br.Snapshot(); s.State != breaker.Closed || s.Failures != 0 {
		t.Fatalf("breaker %+v after the probe's stream ended well", s)
	}
}

// TestWholePoolBenchedRetryAfterIsWhenTheEarlyProbeGoes: with every member
// benched for a fixed trip, the client is told to come back when the first
// backend's own Retry-After ends (when the pool tries it early), not when
// the trip ends (the bug: 58 s for a pool that served again 3 s later).
func TestWholePoolBenchedRetryAfterIsWhenTheEarlyProbeGoes(t *testing.T) {
	apim := breaker.Settings{Failures: 1, Trip: 60 * time.Second, AcceptRetryAfter: true}
	e := newEnv(t,
		memberSpec{name: "long", priority: 1, script: []step{status(429, "Retry-After", "8"), answer("long")}, settings: apim},
		memberSpec{name: "short", priority: 2, script: []step{status(429, "Retry-After", "5"), answer("short")}, settings: apim},
	)
	e.do(t, chatBody) // benches both for the 60s trip
	e.clock.Advance(2 * time.Second)
	resp, rep, _ := e.do(t, chatBody)
	if len(rep.Attempts) != 0 {
		t.Fatalf("attempts %+v", rep.Attempts)
	}
	if got := resp.Header.Get("Retry-After"); got != "3" {
		t.Fatalf("Retry-After %q, want 3 (short's own Retry-After ends at +5s)", got)
	}
}
