package route_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/route"
)

type step = upstreamtest.Step
type upstream = upstreamtest.Upstream

var (
	newUpstream = upstreamtest.New
	answer      = upstreamtest.Answer
	status      = upstreamtest.Status
	raw         = upstreamtest.Raw
	hang        = upstreamtest.Hang
	reset       = upstreamtest.Reset
	sse         = upstreamtest.SSE
)

// env is a pool over scripted upstreams with a fake clock.
type env struct {
	clock    *fakeclock.Clock
	pool     *route.Pool
	ups      map[string]*upstream
	backends map[string]*route.Backend
	events   *eventLog
}

type eventLog struct {
	mu  sync.Mutex
	evs []route.Event
	trs []breaker.Transition
}

func (l *eventLog) Observe(e route.Event) {
	l.mu.Lock()
	if e.Attempt != nil {
		a := *e.Attempt
		e.Attempt = &a
	}
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) transition(t breaker.Transition) {
	l.mu.Lock()
	l.trs = append(l.trs, t)
	l.mu.Unlock()
}

func (l *eventLog) kinds(k route.EventKind) []route.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []route.Event
	for _, e := range l.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

type memberSpec struct {
	name     string
	priority int
	weight   int
	script   []step
	settings breaker.Settings
	tune     func(*route.Backend)
}

func newEnv(t *testing.T, specs ...memberSpec) *env {
	t.Helper()
	return newEnvClock(t, fakeclock.New(), specs...)
}

// newEnvClock is newEnv on the given clock, for scripts that move it.
func newEnvClock(t *testing.T, clk *fakeclock.Clock, specs ...memberSpec) *env {
	t.Helper()
	e := &env{clock: clk, ups: map[string]*upstream{}, backends: map[string]*route.Backend{}, events: &eventLog{}}
	e.pool = &route.Pool{Name: "chat-prod", Clock: e.clock, Observer: e.events}
	for _, s := range specs {
		u := newUpstream(t, s.script...)
		base, _ := url.Parse(u.URL + "/v1")
		st := s.settings
		st.Clock = e.clock
		st.OnTransition = e.events.transition
		b := &route.Backend{
			Name:     s.name,
			Region:   "region-" + s.name,
			Provider: &route.OpenAI{BaseURL: base, APIKey: "sk-" + s.name},
			Breaker:  breaker.New(s.name, st),
		}
		if s.tune != nil {
			s.tune(b)
		}
		e.ups[s.name] = u
		e.backends[s.name] = b
		e.pool.Members = append(e.pool.Members, &route.Member{Backend: b, Priority: s.priority, Weight: s.weight})
	}
	return e
}

const chatBody = `{"model":"chat-prod","messages":[{"role":"user","content":"Say \"hi\" — ünïcode"}],"max_tokens":5}`
const streamBody = `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hi"}]}`

func (e *env) do(t *testing.T, body string) (*http.Response, *route.Report, string) {
	t.Helper()
	r, err := route.NewRequest(route.ChatCompletions, []byte(body), http.Header{"Authorization": {"Bearer caller-key"}, "X-Request-Id": {"req-1"}})
	if err != nil {
		t.Fatal(err)
	}
	// A bound, so that a regression that hangs fails instead of stalling
	// the suite; no test here should come near it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, rep, err := e.pool.Do(ctx, r)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, rep, string(b)
}

// readEvents reads SSE data lines until EOF or error.
func readEvents(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, line)
		}
	}
	return out, sc.Err()
}

var fastTimeout = 200 * time.Millisecond

// hangTelling is a hang that first says what arrived: a health check on
// probed, any other call on arrived.
func hangTelling(probed, arrived chan<- struct{}) step {
	return func(w http.ResponseWriter, r *http.Request) {
		if isHealthCheck(r) {
			probed <- struct{}{}
		} else {
			arrived <- struct{}{}
		}
		hang(w, r)
	}
}

// hangPast is a hang that moves the env's clock by d once the request has
// arrived (the attempt's timers are armed by then), so a timeout of d or
// less fires without waiting for real.
func hangPast(c *fakeclock.Clock, d time.Duration) step {
	return func(w http.ResponseWriter, r *http.Request) {
		c.Advance(d)
		<-r.Context().Done()
	}
}

// headersThenHangPast sends stream headers, then moves the clock by d.
func headersThenHangPast(c *fakeclock.Clock, d time.Duration) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		c.Advance(d)
		<-r.Context().Done()
	}
}

// keepAliveThenHangPast sends stream headers and an SSE comment, then
// moves the clock by d and sends nothing more.
func keepAliveThenHangPast(c *fakeclock.Clock, d time.Duration) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, ": keep-alive\n\n")
		w.(http.Flusher).Flush()
		c.Advance(d)
		<-r.Context().Done()
	}
}
