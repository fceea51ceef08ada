package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// steppedStream is an upstream step that streams events data events in
// lock step: it sends the first at once and each next one (then
// [DONE], or with cut a cut connection instead) when the test sends on
// next. arrived hears the call arrive.
func steppedStream(events int, cut bool, arrived chan<- struct{}, next <-chan struct{}) upstreamtest.Step {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"w%d"}}]}`+"\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
		if cut {
			if conn, buf, err := w.(http.Hijacker).Hijack(); err == nil {
				buf.Flush()
				conn.Close()
			}
			return
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

const coalescedStream = `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`

// sseCall is a streaming call read event by event.
type sseCall struct {
	resp *http.Response
	br   *bufio.Reader
	body strings.Builder
}

// openStream sends a streaming chat call with ctx and returns it once its
// header has arrived.
func openStream(t *testing.T, h *harness, ctx context.Context) *sseCall {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url+"/v1/chat/completions", strings.NewReader(coalescedStream))
	req.Header.Set("Authorization", "Bearer "+appKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return &sseCall{resp: resp, br: bufio.NewReader(resp.Body)}
}

// event reads the next event, its blank line included ("" at the end).
func (c *sseCall) event(t *testing.T) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := c.br.ReadString('\n')
		ev.WriteString(line)
		c.body.WriteString(line)
		if line == "\n" || err != nil {
			return ev.String()
		}
	}
}

// rest reads the call to its end.
func (c *sseCall) rest() string {
	b, _ := io.ReadAll(c.br)
	c.body.Write(b)
	return c.body.String()
}

// joinFollowers opens n streaming calls identical to a leader's whose
// stream has started; each must have joined it (its first event, the
// leader's first, replayed).
func joinFollowers(t *testing.T, h *harness, ctx context.Context, n int, first string) []*sseCall {
	t.Helper()
	out := make(chan *sseCall, n)
	for range n {
		go func() {
			c := openStream(t, h, ctx)
			c.event(t)
			out <- c
		}()
	}
	var fs []*sseCall
	for range n {
		c := <-out
		if c.body.String() != first {
			t.Fatalf("a follower's first event %q, want the leader's %q", c.body.String(), first)
		}
		if r := c.resp.Header.Get("X-Switchover-Cache"); r != "coalesced" {
			t.Fatalf("a follower's x-switchover-cache %q, want coalesced", r)
		}
		fs = append(fs, c)
	}
	return fs
}

// TestCacheStreamingFollowersGetEventsAsTheyArrive: calls identical to a
// streaming call whose stream has started join it: they get the events
// already sent at once, then each event as the upstream sends it, before
// it sends the next (the upstream waits for the test, which waits for
// every caller to read the event), and streams byte-identical to the
// leader's, for one upstream call.
func TestCacheStreamingFollowersGetEventsAsTheyArrive(t *testing.T) {
	const events = 4
	arrived, next := make(chan struct{}, 8), make(chan struct{})
	h := start(t, []upstreamtest.Step{steppedStream(events, false, arrived, next)}, []upstreamtest.Step{answer("sec")}, "", withCache("{coalesce: true}"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a bound for a stuck stream, not a measure
	defer cancel()
	leader := openStream(t, h, ctx)
	<-arrived
	first := leader.event(t)
	followers := joinFollowers(t, h, ctx, 3, first)
	all := append([]*sseCall{leader}, followers...)
	for i := 1; i < events; i++ {
		next <- struct{}{}
		want := fmt.Sprintf(`"content":"w%d"`, i)
		for j, c := range all {
			if ev := c.event(t); !strings.Contains(ev, want) {
				t.Fatalf("caller %d's event %d: %q", j, i, ev)
			}
		}
	}
	next <- struct{}{}
	lb := leader.rest()
	if !strings.HasSuffix(lb, "data: [DONE]\n\n") || strings.Count(lb, "data: {") != events {
		t.Fatalf("the leader's stream:\n%s", lb)
	}
	for _, f := range followers {
		if b := f.rest(); b != lb {
			t.Fatalf("a follower's stream differs:\n%s\nthe leader's:\n%s", b, lb)
		}
		for _, k := range []string{"Content-Type", "X-Upstream-Request-Id"} {
			if f.resp.Header.Get(k) != leader.resp.Header.Get(k) {
				t.Errorf("a follower's %s %q, the leader's %q", k, f.resp.Header.Get(k), leader.resp.Header.Get(k))
			}
		}
		if f.resp.Header.Get("X-Request-Id") == leader.resp.Header.Get("X-Request-Id") || f.resp.Header.Get("Age") != "0" {
			t.Errorf("a follower's X-Request-Id %q (the leader's %q), Age %q", f.resp.Header.Get("X-Request-Id"), leader.resp.Header.Get("X-Request-Id"), f.resp.Header.Get("Age"))
		}
	}
	if c := h.weu.Calls() + h.sec.Calls(); c != 1 {
		t.Fatalf("%d upstream calls for 4 identical streaming calls, want 1", c)
	}
}

// TestCacheCutStreamCutsItsFollowersAlike: when the leader's upstream
// stream breaks mid-way, the followers' streams end as the leader's
// caller's does: the same error event, never a stream that looks whole.
func TestCacheCutStreamCutsItsFollowersAlike(t *testing.T) {
	arrived, next := make(chan struct{}, 8), make(chan struct{})
	h := start(t, []upstreamtest.Step{steppedStream(2, true, arrived, next), upstreamtest.SSE("weu", 2, -1)}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 10m}"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	leader := openStream(t, h, ctx)
	<-arrived
	followers := joinFollowers(t, h, ctx, 2, leader.event(t))
	next <- struct{}{}
	next <- struct{}{} // the upstream cuts the connection
	lb := leader.rest()
	if !strings.Contains(lb, `"code":"upstream_stream_error"`) || strings.Contains(lb, "[DONE]") {
		t.Fatalf("the leader's cut stream:\n%s", lb)
	}
	for _, f := range followers {
		if b := f.rest(); b != lb {
			t.Fatalf("a follower's stream differs from the leader's cut one:\n%s\nthe leader's:\n%s", b, lb)
		}
	}
	if c := h.weu.Calls() + h.sec.Calls(); c != 1 {
		t.Fatalf("%d upstream calls, want 1", c)
	}
	// Nothing cut is stored: the next call is a miss.
	if resp, _ := h.post("/v1/chat/completions", coalescedStream); resp.Header.Get("X-Switchover-Cache") != "miss" {
		t.Fatalf("after a cut stream: %q", resp.Header.Get("X-Switchover-Cache"))
	}
}

// TestCacheStreamOutlivesALeaderThatLeaves: when the leader's client goes
// away mid-stream, the call goes on for the followers reading it: they
// get the whole stream, from the one upstream call.
func TestCacheStreamOutlivesALeaderThatLeaves(t *testing.T) {
	const events = 6
	arrived, next := make(chan struct{}, 8), make(chan struct{})
	h := start(t, []upstreamtest.Step{steppedStream(events, false, arrived, next)}, []upstreamtest.Step{answer("sec")}, "", withCache("{ttl: 10m}"))
	bound, stop := context.WithTimeout(t.Context(), 30*time.Second) // a bound for a stuck stream, not a measure
	defer stop()
	ctx, cancel := context.WithCancel(bound)
	leader := openStream(t, h, ctx)
	<-arrived
	followers := joinFollowers(t, h, bound, 2, leader.event(t))
	cancel() // the leader's client leaves
	leader.rest()
	// Every event after it is written to the leader's closed connection,
	// whose writes fail: the call goes on for the followers regardless.
	for i := 1; i <= events; i++ {
		next <- struct{}{}
		for _, f := range followers {
			if i < events && !strings.Contains(f.event(t), fmt.Sprintf(`"content":"w%d"`, i)) {
				t.Fatalf("a follower missed event %d", i)
			}
		}
	}
	for _, f := range followers {
		if b := f.rest(); !strings.HasSuffix(b, "data: [DONE]\n\n") || strings.Count(b, "data: {") != events {
			t.Fatalf("a follower's stream after its leader left:\n%s", b)
		}
	}
	if c := h.weu.Calls() + h.sec.Calls(); c != 1 {
		t.Fatalf("%d upstream calls, want 1", c)
	}
	// It ended whole: stored.
	if resp, _ := h.post("/v1/chat/completions", coalescedStream); result(resp) != "hit" {
		t.Fatalf("the stream its followers finished: %q, want stored", result(resp))
	}
}
